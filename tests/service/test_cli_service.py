"""The service side of the CLI: reading a thread by URL, and refusing bad service settings."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from triagebot.cli import app
from triagebot.settings import SettingsError, load_settings
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
    url = f"{fake_github.web_url}/acme/engine/issues/42"
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
    url = f"{fake_github.web_url}/acme/engine/issues/999"
    result = runner.invoke(app, ["parse", url], env=env_for(fake_github))
    assert result.exit_code == 2
    assert f"cannot read {url}" in result.output


@pytest.mark.parametrize("url", [
    "https://gitlab.com/acme/engine/-/issues/100",
    "https://gitlab.com/acme/engine/issues/100",
    "https://example.com/acme/engine/issues/100",
    "https://example.com/some/page",
])
def test_a_thread_url_on_another_host_is_refused_clearly(
        url: str, runner: CliRunner) -> None:
    # Issue 27, item 12: gitlab.com's issue 100 read GitHub's issue 100 of the same
    # name, and example.com said "No such file or directory".
    result = runner.invoke(app, ["parse", url],
                           env={"TRIAGEBOT_GITHUB_API_URL": "https://api.github.com"})
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "github.com" in out and "No such file" not in out
    assert "not a thread on github.com" in out


def test_a_url_on_the_github_host_that_is_no_thread_says_so(runner: CliRunner) -> None:
    result = runner.invoke(app, ["parse", "https://github.com/acme/engine/wiki"],
                           env={"TRIAGEBOT_GITHUB_API_URL": "https://api.github.com"})
    assert result.exit_code == 2
    assert "issue or pull request URL" in " ".join(result.output.split())


def test_enterprise_threads_are_on_the_enterprise_host() -> None:
    settings = load_settings(github_api_url="https://ghe.example.org/api/v3", _env_file=None)
    assert settings.github_web_host == "ghe.example.org"
    cloud = load_settings(github_api_url="https://api.github.com", _env_file=None)
    assert cloud.github_web_host == "github.com"


def test_serve_refuses_to_start_without_a_webhook_secret(runner: CliRunner) -> None:
    result = runner.invoke(app, ["serve"], env={"TRIAGEBOT_WEBHOOK_SECRETS": ""})
    assert result.exit_code == 2 and "TRIAGEBOT_WEBHOOK_SECRETS is required" in result.output
    placeholder = runner.invoke(app, ["serve"], env={"TRIAGEBOT_WEBHOOK_SECRETS": "changeme"})
    assert placeholder.exit_code == 2 and "placeholder" in placeholder.output


def test_a_settings_error_never_echoes_a_secret(runner: CliRunner) -> None:
    # Issue 27, item 12: pydantic's message quoted the whole variable, valid secret included.
    valid = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(SettingsError) as caught:
        load_settings(webhook_secrets=f"{valid},short", _env_file=None)
    assert valid not in str(caught.value) and "short" not in str(caught.value)
    assert "TRIAGEBOT_WEBHOOK_SECRETS" in str(caught.value)
    result = runner.invoke(app, ["serve"], env={"TRIAGEBOT_WEBHOOK_SECRETS": f"{valid},short"})
    assert result.exit_code == 2
    assert valid[:8] not in result.output and "at least 8 characters" in result.output
    key = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n"
    with pytest.raises(SettingsError) as caught:
        load_settings(app_private_key=key, app_id="not-a-number", _env_file=None)
    assert "MIIBVQ" not in str(caught.value) and "TRIAGEBOT_APP_ID" in str(caught.value)


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
