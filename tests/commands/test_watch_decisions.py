"""`watch` and `unwatch` decided from facts: who may, which report, which limit."""

from __future__ import annotations

from dataclasses import replace

from tests.commands.test_decisions import commands, facts, job
from triagebot.decisions import decide
from triagebot.decisions.actions import React, Refuse, Reply, StartWatch, StopWatch
from triagebot.decisions.facts import WatchFacts
from triagebot.repo_config import parse_repo_config

WATCH = "@triagebot watch"


def reproduced(id_: str = "r" * 32, **kw: object) -> object:
    return job(id_, "done").model_copy(update={"outcome": "reproduced", **kw})


def text(actions: list[object]) -> str:
    return " ".join(getattr(a, "text", "") for a in actions)


def test_a_reproduced_report_is_watched_on_its_runner() -> None:
    f = facts(WATCH, jobs=(job("n" * 32, "queued"), reproduced()),
              watch=WatchFacts(engine="vllm"))
    assert decide(commands(WATCH), f) == [StartWatch(job_id="r" * 32, engine="vllm",
                                                     gpu="h100"), React("+1")]
    f2 = replace(f, event=facts("@triagebot watch gpu=cpu").event)
    assert decide(commands("@triagebot watch gpu=cpu"), f2)[0] == StartWatch(
        job_id="r" * 32, engine="vllm", gpu="cpu")


def test_each_refusal_says_why_and_what_would_do() -> None:
    assert [type(a) for a in decide(commands(WATCH), facts(WATCH, may_run=False))] == [Refuse]
    none = decide(commands(WATCH), facts(WATCH, jobs=(job("a" * 32, "done"),)))
    assert "no reproduced report on this thread" in text(none)
    assert "`@triagebot repro`" in text(none)
    cfg = parse_repo_config(b'[watch]\nengines = ["sglang"]\nmax_threads = 2\n')
    other = decide(commands(WATCH), facts(WATCH, config=cfg, jobs=(reproduced(),),
                                          watch=WatchFacts(engine="vllm")))
    assert "watches sglang only (`[watch] engines`" in text(other)
    cfg = parse_repo_config(b"[watch]\nmax_threads = 2\n")
    full = decide(commands(WATCH), facts(WATCH, config=cfg, jobs=(reproduced(),),
                                         watch=WatchFacts(engine="vllm", threads=2)))
    assert "Over this repository's watch budget: `[watch] max_threads` is 2" in text(full)
    kind = decide(commands("@triagebot watch gpu=b200"),
                  facts("@triagebot watch gpu=b200", jobs=(reproduced(),),
                        watch=WatchFacts(engine="vllm")))
    assert "No runner here serves GPU kind 'b200'" in text(kind)
    twice = decide(commands(WATCH), facts(WATCH, jobs=(reproduced(),),
                                          watch=WatchFacts(status="active", engine="vllm")))
    assert [type(a) for a in twice] == [Reply] and "watched already" in text(twice)


def test_unwatch_and_status() -> None:
    body = "@triagebot unwatch"
    assert "Nothing is watched" in text(decide(commands(body), facts(body)))
    assert decide(commands(body), facts(body, watch=WatchFacts(status="paused"))) == [
        StopWatch(repo="acme/engine", number=42), React("+1")]
    shown = decide(commands("@triagebot status"), facts(
        "@triagebot status", watch=WatchFacts(status="active", lines=("0.32.0 fixed",))))
    assert "**Watch** (active):\n\n- 0.32.0 fixed" in text(shown)
