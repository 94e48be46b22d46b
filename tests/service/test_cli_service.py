"""The service side of the CLI: reading a thread by URL, and refusing bad service settings."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from triagebot.cli import app
from triagebot.settings import load_settings
from triagebot.workers.serve import WorkerError, worker_argv

ISSUE = ("vLLM 0.17.1, H100. MTP k=1 is slower than no speculation with CUDA graphs.\n\n"
         "```bash\nvllm serve zai-org/GLM-4.5-Air --speculative-config "
         "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n```\n")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def env_for(fake: FakeGitHub, **extra: str) -> dict[str, str]:
    return {"TRIAGEBOT_GITHUB_API_URL": fake.base_url, "TRIAGEBOT_GITHUB_TOKEN": "ghp_cli",
            **extra}


def test_parse_and_plan_read_the_thread_by_url(fake_github: FakeGitHub,
                                               runner: CliRunner) -> None:
    fake_github.add_pat("ghp_cli", "maint")
    fake_github.add_issue(REPO, 42, "GLM-4.5-Air MTP slower under graphs", ISSUE)
    url = "https://github.com/acme/engine/issues/42"
    parsed = runner.invoke(app, ["parse", url, "--json"], env=env_for(fake_github))
    assert parsed.exit_code == 0, parsed.output
    request = json.loads(parsed.stdout)
    assert request["models"] == ["zai-org/GLM-4.5-Air"]
    assert request["engine_version"] == "0.17.1" and request["spec_method"] == "mtp"
    planned = runner.invoke(app, ["plan", url, "--json"], env=env_for(fake_github))
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["engine"] == "vllm"
    assert fake_github.calls_to("GET", r"/repos/acme/engine/issues/42")


def test_unreadable_thread_is_a_clear_usage_error(fake_github: FakeGitHub,
                                                  runner: CliRunner) -> None:
    fake_github.add_pat("ghp_cli", "maint")
    result = runner.invoke(app, ["parse", "https://github.com/acme/engine/issues/999"],
                           env=env_for(fake_github))
    assert result.exit_code == 2
    assert "cannot read https://github.com/acme/engine/issues/999" in result.output


def test_serve_refuses_to_start_without_a_webhook_secret(runner: CliRunner) -> None:
    result = runner.invoke(app, ["serve"], env={"TRIAGEBOT_WEBHOOK_SECRETS": ""})
    assert result.exit_code == 2 and "TRIAGEBOT_WEBHOOK_SECRETS is required" in result.output
    placeholder = runner.invoke(app, ["serve"], env={"TRIAGEBOT_WEBHOOK_SECRETS": "changeme"})
    assert placeholder.exit_code == 2 and "placeholder" in placeholder.output


def test_worker_queues_are_checked_and_gpu_workers_run_one_job_at_a_time() -> None:
    settings = load_settings(gpu_kinds=["h100", "a100"], default_gpu="h100", _env_file=None)
    gpu = worker_argv(settings, ["gpu-h100"], "gpu0@host", None, "info")
    assert gpu[gpu.index("-c") + 1] == "1"
    assert gpu[gpu.index("--max-tasks-per-child") + 1] == "1"
    triage = worker_argv(settings, ["triage"], None, 4, "info")
    assert triage[triage.index("-c") + 1] == "4"
    with pytest.raises(WorkerError, match=r"unknown queue .gpu-b200.*gpu-h100, gpu-a100"):
        worker_argv(settings, ["gpu-b200"], None, None, "info")
    with pytest.raises(WorkerError, match="at least one queue"):
        worker_argv(settings, [], None, None, "info")
