"""What a maintainer reads back (issue 27, items 7 and 10), decided from plain facts.

- A command that names no GPU runs on a runner this deployment has, and says which one
  and that it differs from the reporter's; only a kind the command names is refused.
- Error replies show code as code, not as backslashes and backticks.
- `cancel` answers by editing the job comment, not with a second comment.
- Counts read "1 job", "2 jobs".
- Help shows bisect's good=/bad= as optional and `gpu` with the kinds served here.
"""

from __future__ import annotations

from typing import Any

from tests.commands.test_decisions import commands, facts, job, thread
from tests.conftest import seed_path
from triagebot.commands import help_text
from triagebot.decisions import decide
from triagebot.decisions import replies as words
from triagebot.decisions.actions import CancelJobs, React, Reply, StartJob
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord
from triagebot.plan_model import Plan


def _seed_thread(prefix: str) -> Thread:
    text = seed_path(prefix).read_text(encoding="utf-8")
    return thread().model_copy(update={"title": text.splitlines()[0], "body": text})


def _cpu_only(**changes: Any) -> Any:
    return facts(gpu_kinds=("cpu",), default_gpu="cpu", **changes)


def test_seed_000_runs_on_the_deployments_runner_and_says_so() -> None:
    # The report ran on A100s; this deployment has a cpu runner only. The auto-triage
    # summary tells the maintainer to write `@triagebot repro`, which was then refused
    # "no runner here serves GPU kind 'a100'".
    [action] = decide(commands("@triagebot repro"), _cpu_only(thread=_seed_thread("000")))
    assert isinstance(action, StartJob), action
    assert action.plan.gpu_kind == "cpu" and action.record.gpu_kind == "cpu"
    [note] = [n for n in action.notes if "a100" in n]
    assert "`cpu`" in note and "default" in note and "reporter" in note


def test_a_report_without_a_gpu_runs_on_the_default_kind() -> None:
    plain = thread().model_copy(update={"body": thread().body.replace(" on one H100", "")})
    [action] = decide(commands("@triagebot repro"), _cpu_only(thread=plain))
    assert isinstance(action, StartJob) and action.plan.gpu_kind == "cpu"


def test_a_kind_the_command_names_is_still_refused_when_nothing_serves_it() -> None:
    [action] = decide(commands("@triagebot repro gpu=a100"),
                      _cpu_only(thread=_seed_thread("000")))
    assert isinstance(action, Reply)
    assert "a100" in action.text and "available: cpu" in action.text


def test_error_replies_show_code_as_code() -> None:
    [action] = decide(commands("@triagebot help me"), facts())
    assert isinstance(action, Reply)
    assert "\\`" not in action.text and "`help` takes no arguments" in action.text
    [refused] = decide(commands("@triagebot repro gpu=b200"), facts())
    assert isinstance(refused, Reply) and "\\`" not in refused.text
    assert "`gpu=`" in refused.text or "gpu=" in refused.text
    # User text inside a message still cannot mention anyone or start markup.
    [hostile] = decide(commands("@triagebot help @everyone"), facts())
    assert isinstance(hostile, Reply) and "@everyone" not in hostile.text.replace(
        "`@everyone`", "")


def test_cancel_edits_the_job_comment_and_posts_nothing_else() -> None:
    live = (job("a" * 32, "running"), job("c" * 32, "queued"))
    actions = decide(commands("@triagebot cancel"), facts(jobs=live))
    assert actions[0] == CancelJobs(("a" * 32, "c" * 32))
    assert not any(isinstance(a, Reply) for a in actions)
    assert React("+1") in actions
    [nothing] = decide(commands("@triagebot cancel"), facts(jobs=(job("b" * 32, "done"),)))
    assert isinstance(nothing, Reply) and "no queued or running job" in nothing.text


def test_counts_are_written_as_words() -> None:
    record = JobRecord(id="a" * 32, repo="acme/engine", number=42, trigger="comment-1",
                       requester="maint", command="repro", plan_hash="p", gpu_kind="h100")
    plan = Plan(engine="vllm", gpu_kind="h100", question="q", cells=[])
    one = words.acknowledgement(record, plan, words.QueuePlace(1, 60.0), "https://t/jobs/x")
    two = words.acknowledgement(record, plan, words.QueuePlace(2, 60.0), "https://t/jobs/x")
    idle = words.acknowledgement(record, plan, words.QueuePlace(1, 0.0, runner_live=False),
                                 "https://t/jobs/x")
    assert "1 job ahead" in one and "2 jobs ahead" in two and "1 job ahead" in idle
    assert "(s)" not in one + two + idle


def test_help_shows_optional_bisect_ends_and_the_kinds_served_here() -> None:
    text = help_text("triagebot", gpu_kinds=("cpu", "h100"), default_gpu="cpu")
    assert "bisect [good=V] [bad=V]" in text
    [gpu_row] = [line for line in text.splitlines() if line.startswith("| `gpu`")]
    assert "`cpu`, `h100`" in gpu_row and "default `cpu`" in gpu_row
    assert "as in h100" not in gpu_row
    [reply] = decide(commands("@triagebot help"), facts(gpu_kinds=("cpu",), default_gpu="cpu"))
    assert isinstance(reply, Reply) and "`cpu`" in reply.text.split("| `gpu`")[1]
