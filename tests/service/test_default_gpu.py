"""Which runner a repro runs on (issue 41, item 2): the command's `gpu=`, then the repo
config's `[defaults] gpu`, then the deployment's default; the report's GPU is a
preference, taken where a runner serves it and noted where none does."""

from __future__ import annotations

from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.threads import ISSUE_BODY, bot_comments, comment_event
from triagebot.workers.triage import Triage

NO_GPU_BODY = ISSUE_BODY.replace(" on one H100", "")


def _triage(env: dict[str, Any], **update: Any) -> Triage:
    settings = env["settings"].model_copy(update=update)
    return Triage(settings, env["store"], env["triage"].ctx.celery, env["triage"].ctx.github)


def _ack(env: dict[str, Any], triage: Triage, body: str, command: str = "@triagebot repro",
         title: str = "MTP slower") -> tuple[str, str]:
    env["fake"].add_issue(REPO, 42, title, body, author="reporter")
    triage.handle(comment_event(env["fake"], command))
    [job] = env["store"].thread_jobs(REPO, 42)
    [ack] = bot_comments(env["fake"])
    return job.gpu_kind, ack.body


def test_a_report_without_a_gpu_runs_on_the_deployment_default(env: dict[str, Any]) -> None:
    # It ran on the planner's built-in h100 whenever an h100 runner was served.
    kind, ack = _ack(env, env["triage"], NO_GPU_BODY)
    assert kind == "cpu"
    assert "No runner here serves" not in ack


def test_only_cpu_served_says_nothing_of_an_h100_nobody_asked_for(
        env: dict[str, Any]) -> None:
    kind, ack = _ack(env, _triage(env, gpu_kinds=["cpu"], default_gpu="cpu"), NO_GPU_BODY)
    assert kind == "cpu"
    assert "h100" not in ack.lower()


def test_the_reports_gpu_is_taken_where_it_is_served(env: dict[str, Any]) -> None:
    kind, ack = _ack(env, env["triage"], ISSUE_BODY)
    assert kind == "h100" and "No runner here serves" not in ack


def test_the_reports_gpu_not_served_is_noted(env: dict[str, Any]) -> None:
    kind, ack = _ack(env, _triage(env, gpu_kinds=["cpu"], default_gpu="cpu"), ISSUE_BODY)
    assert kind == "cpu"
    assert "reporter's H100" in ack and "runs on `cpu`" in ack


def test_the_repo_config_comes_before_the_deployment_default(env: dict[str, Any]) -> None:
    env["fake"].set_file(REPO, ".github/triagebot.toml", '[defaults]\ngpu = "h100"\n')
    kind, _ = _ack(env, env["triage"], NO_GPU_BODY)
    assert kind == "h100"


def test_the_commands_gpu_comes_first(env: dict[str, Any]) -> None:
    env["fake"].set_file(REPO, ".github/triagebot.toml", '[defaults]\ngpu = "h100"\n')
    kind, _ = _ack(env, env["triage"], ISSUE_BODY, "@triagebot repro gpu=cpu")
    assert kind == "cpu"


CRASH_BODY = (
    "vLLM 0.17.1 on one H100: MTP k=1 crashes under CUDA graphs with RuntimeError: CUDA "
    "error: an illegal memory access was encountered.\n\n```bash\nvllm serve "
    "zai-org/GLM-4.5-Air --speculative-config '{\"method\": \"mtp\", "
    "\"num_speculative_tokens\": 1}'\n```\n\n```\nTraceback (most recent call last):\n"
    "  File \"x.py\", line 1, in <module>\nRuntimeError: CUDA error: an illegal memory "
    "access was encountered\n```\n")


def test_a_crash_checks_acknowledgement_says_it_is_one(env: dict[str, Any]) -> None:
    # Issue 41, item 12: it said "Queued a reproduction" like any other.
    _, ack = _ack(env, env["triage"], CRASH_BODY, title="MTP crash with CUDA graphs")
    assert "**Queued** a crash check" in ack and "log signatures" in ack
