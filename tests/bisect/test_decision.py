"""`@triagebot bisect` decided from plain facts: permission, range checks, defaults."""

from __future__ import annotations

from tests.commands.test_decisions import commands, facts, thread
from triagebot.bisect.spec import BisectSpec
from triagebot.decisions import decide
from triagebot.decisions.actions import Refuse, Reply, StartJob

SLOWER = ("MTP k=1 was fine on vLLM 0.16.0, and is slower on 0.17.1 under CUDA graphs.\n\n"
          "```bash\nvllm serve zai-org/GLM-4.5-Air --speculative-config "
          "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n```\n")


def test_an_unauthorised_requester_gets_a_refusal_and_no_job() -> None:
    actions = decide(commands("@triagebot bisect good=0.16.0 bad=0.17.1"),
                     facts("@triagebot bisect good=0.16.0 bad=0.17.1", may_run=False))
    assert [type(a) for a in actions] == [Refuse]


def test_a_bisect_job_carries_its_range_and_is_planned_at_the_newer_point() -> None:
    body = "@triagebot bisect good=0.16.0 bad=0.17.1"
    [start] = decide(commands(body), facts(body))
    assert isinstance(start, StartJob)
    assert start.record.command == "bisect good=0.16.0 bad=0.17.1"
    assert start.plan.engine_version == "0.17.1"
    spec = BisectSpec.model_validate_json(start.record.bisect or "")
    assert (spec.good, spec.bad, spec.direction) == ("0.16.0", "0.17.1", "regress")


def test_points_default_to_the_reports_words_and_the_notes_say_so() -> None:
    body = "@triagebot bisect"
    f = facts(body, thread=thread().model_copy(update={"body": SLOWER}))
    [start] = decide(commands(body), f)
    assert isinstance(start, StartJob)
    assert start.record.command == "bisect good=0.16.0 bad=0.17.1"
    assert any("comes from the report" in n for n in start.notes)


def test_inverted_and_empty_ranges_are_answered_not_run() -> None:
    for body, says in (("@triagebot bisect good=0.17.1 bad=0.16.0", "regress=success"),
                       ("@triagebot bisect good=0.17.1 bad=0.17.1", "empty")):
        [reply] = decide(commands(body), facts(body))
        assert isinstance(reply, Reply) and says in reply.text


def test_a_report_without_versions_asks_for_them() -> None:
    body = "@triagebot bisect"
    plain = thread().model_copy(update={"body": "MTP is slower than no speculation."})
    f = facts(body, thread=plain)
    [reply] = decide(commands(body), f)
    assert isinstance(reply, Reply) and "good=V bad=V" in reply.text


def test_sha_and_nightly_ends_start_a_job_and_bad_pairs_are_answered() -> None:
    good, bad = "a625406f6" + "0" * 31, "e4666a670b"
    body = f"@triagebot bisect good={good} bad={bad}"
    [start] = decide(commands(body), facts(body))
    assert isinstance(start, StartJob)
    spec = BisectSpec.model_validate_json(start.record.bisect or "")
    assert (spec.good, spec.bad) == (good, bad)
    for body, says in (
            (f"@triagebot bisect good={bad} bad={bad.upper()}", "empty"),
            ("@triagebot bisect good=0.20.1.dev20260105 bad=0.20.1.dev202601040900",
             "newer than bad"),
            (f"@triagebot bisect good=0.20.1.dev20260105 bad={bad}", "names no commit")):
        [reply] = decide(commands(body), facts(body))
        assert isinstance(reply, Reply) and says in reply.text, reply
