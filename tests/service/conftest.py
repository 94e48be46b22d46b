"""Fixtures of the service tests: a job store on the test's namespace, a small plan, and a
triage executor aimed at a thread on the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.service.support import small_plan
from tests.service.threads import ISSUE_BODY
from triagebot.github.client import GitHubClient
from triagebot.jobs.store import JobStore
from triagebot.plan_model import Plan
from triagebot.settings import Settings
from triagebot.workers.app import create_celery
from triagebot.workers.triage import Triage


@pytest.fixture
def store(settings: Settings) -> JobStore:
    return JobStore(settings)


@pytest.fixture
def plan() -> Plan:
    return small_plan()


@pytest.fixture
def env(fake_github: FakeGitHub, namespace: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    settings = make_settings(namespace, github_api_url=fake_github.base_url,
                             app_id=fake_github.app_id,
                             app_private_key=fake_github.private_key_pem,
                             gpu_kinds=["cpu", "h100"], default_gpu="cpu",
                             data_dir=tmp_path / "jobs")
    fake_github.add_issue(REPO, 42, "MTP slower under CUDA graphs", ISSUE_BODY,
                          author="reporter")
    fake_github.set_permission(REPO, "maint", "write")
    store = JobStore(settings)
    celery = create_celery(settings)

    def github(installation_id: int | None) -> GitHubClient:
        assert installation_id == INSTALLATION_ID
        return GitHubClient.for_installation(settings, installation_id)

    yield {"settings": settings, "store": store, "triage": Triage(settings, store, celery, github),
           "fake": fake_github}
