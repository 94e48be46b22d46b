"""Decisions as plain values: facts in, actions out; no Redis, no GitHub, no fake."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from triagebot.commands import Command, CommandError, parse_comment
from triagebot.decisions import decide
from triagebot.decisions.actions import CancelJobs, React, Refuse, Reply, StartJob
from triagebot.decisions.facts import Facts
from triagebot.github.events import ThreadEvent, normalise
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord, job_id
from triagebot.repo_config import RepoConfig, parse_repo_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"
KEY = b"decision-tests-key"
REPORT = ("vLLM 0.17.1 on one H100: MTP k=1 is slower than no speculation under CUDA "
          "graphs.\n\n```bash\nvllm serve zai-org/GLM-4.5-Air --speculative-config "
          "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n```\n")


def event(body: str, *, private: bool = False) -> ThreadEvent:
    payload: dict[str, Any] = json.loads((FIXTURES / "issue_comment.created.json").read_text())
    payload["comment"]["body"] = body
    payload["comment"]["id"] = 777
    payload["issue"]["number"] = 42
    payload["repository"]["full_name"] = "acme/engine"
    payload["repository"]["private"] = private
    payload["sender"]["login"] = payload["comment"]["user"]["login"] = "maint"
    ev = normalise("issue_comment", payload, "d-1")
    assert ev is not None
    return ev


def thread(is_pr: bool = False) -> Thread:
    return Thread(repo="acme/engine", number=42, title="MTP slower", body=REPORT,
                  author="reporter", is_pr=is_pr, state="open",
                  html_url="https://github.com/acme/engine/issues/42", labels=[],
                  head_sha=None, head_ref=None, base_ref=None, comments=[])


def job(id_: str, state: str) -> JobRecord:
    return JobRecord(id=id_, repo="acme/engine", number=42, trigger="comment-1",
                     requester="maint", command="repro", plan_hash="p", gpu_kind="h100",
                     state=state)  # type: ignore[arg-type]


def facts(body: str = "@triagebot repro", *, may_run: bool = True,
          config: RepoConfig | None = None, **changes: Any) -> Facts:
    base = Facts(event=event(body), command_name="triagebot",
                 config=config or RepoConfig.default(), may_run=may_run, jobs=(),
                 job_urls={}, thread=thread(), gpu_kinds=("h100", "cpu"),
                 gpu_seconds_used=0.0, id_key=KEY)
    return replace(base, **changes)


def commands(body: str) -> list[Command | CommandError]:
    return parse_comment(body, "triagebot")


def test_help_and_status_answer_from_facts_alone() -> None:
    jobs = (job("a" * 32, "running"), job("b" * 32, "done"))
    f = facts(jobs=jobs, job_urls={j.id: f"https://t/jobs/{j.id}" for j in jobs})
    actions = decide(commands("@triagebot help\n@triagebot status"), f)
    assert [type(a) for a in actions] == [Reply, Reply]
    assert "repro" in actions[0].text  # type: ignore[union-attr]
    assert "a" * 32 in actions[1].text and "https://t/jobs/" in actions[1].text  # type: ignore[union-attr]


def test_cancel_needs_permission_and_names_only_live_jobs() -> None:
    jobs = (job("a" * 32, "running"), job("b" * 32, "done"), job("c" * 32, "queued"))
    assert [type(a) for a in decide(commands("@triagebot cancel"),
                                     facts(may_run=False, jobs=jobs))] == [Refuse]
    actions = decide(commands("@triagebot cancel"), facts(jobs=jobs))
    # The job comments say it; the command gets a reaction, not a second comment.
    assert actions == [CancelJobs(("a" * 32, "c" * 32)), React("+1")]


def test_repro_starts_one_job_with_an_unguessable_id() -> None:
    [action] = decide(commands("@triagebot repro k=1"), facts())
    assert isinstance(action, StartJob)
    record = action.record
    assert record.trigger == "comment-777" and record.command == "repro k=1"
    assert record.id == job_id(KEY, "acme/engine", 42, "comment-777", "repro k=1")
    assert record.gpu_kind == "h100" and record.requester == "maint" and not record.private
    [private] = decide(commands("@triagebot repro k=1"),
                       facts(event=event("@triagebot repro k=1", private=True)))
    assert isinstance(private, StartJob) and private.record.private


def test_the_job_keeps_the_repo_verdict_rule() -> None:
    [plain] = decide(commands("@triagebot repro k=1"), facts())
    assert isinstance(plain, StartJob)
    assert (plain.record.margin, plain.record.negligible) == (0.03, 0.0)
    config = parse_repo_config("[verdict]\nmargin_pct = 4\nnegligible_pct = 1\n")
    [banded] = decide(commands("@triagebot repro k=1"), facts(config=config))
    assert isinstance(banded, StartJob)
    assert (banded.record.margin, banded.record.negligible) == (0.04, 0.01)


def test_repro_refusals_say_why() -> None:
    assert [type(a) for a in decide(commands("@triagebot repro"),
                                     facts(may_run=False))] == [Refuse]
    allow = parse_repo_config('[models]\nallow = ["Qwen/*"]\n')
    [off_list] = decide(commands("@triagebot repro"), facts(config=allow))
    assert isinstance(off_list, Reply) and "allowlist" in off_list.text
    [no_kind] = decide(commands("@triagebot repro gpu=b200"), facts())
    assert isinstance(no_kind, Reply) and "b200" in no_kind.text and "h100, cpu" in no_kind.text
    [spent] = decide(commands("@triagebot repro"), facts(gpu_seconds_used=24 * 3600.0))
    assert isinstance(spent, Reply) and "GPU budget" in spent.text
    [bad] = decide(commands("@triagebot repro k=17"), facts())
    assert isinstance(bad, Reply) and "1 to 16" in bad.text


def test_pull_request_jobs_carry_the_wheel_note() -> None:
    [action] = decide(commands("@triagebot repro"), facts(thread=thread(is_pr=True)))
    assert isinstance(action, StartJob) and "prebuilt wheel" in action.notes[0]


def test_a_bug_in_one_decision_is_an_answer_not_silence() -> None:
    # A repro decided without the thread the executor should have read: a bug.
    actions = decide(commands("@triagebot repro\n@triagebot help"), facts(thread=None))
    assert isinstance(actions[0], Reply) and "failed inside triagebot" in actions[0].text
    assert actions[1] == React("confused")
    # The other command of the comment is still answered.
    assert isinstance(actions[2], Reply) and "cancel" in actions[2].text
