"""A webhook ingress (uvicorn) and a real triage worker against the fake GitHub, without a
GPU worker: for what happens to an event before any job runs."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.services import Uvicorn, Worker, settings_env, wait_for
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.web.app import create_app
from triagebot.web.signature import sign

SECRET = "triage-only-secret"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"


@dataclass
class TriageService:
    settings: Settings
    web: Uvicorn
    fake: FakeGitHub
    store: JobStore
    tmp: Path
    worker: Worker | None = None

    def start_worker(self, **overrides: Any) -> Worker:
        """(Re)start the triage worker, with settings of its own where given."""
        self.stop_worker()
        settings = self.settings.model_copy(update=overrides)
        name = f"triage-{self.settings.namespace}-{uuid.uuid4().hex[:6]}@test"
        self.worker = Worker("triage", settings_env(settings, github=True),
                             self.tmp / "triage.log", name)
        return self.worker

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the worker's heartbeat says it consumes the triage queue."""
        wait_for(lambda: "triage" in self.store.counters.live_queues(30), timeout,
                 "the triage worker's heartbeat", self.logs)

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def logs(self) -> str:
        return self.worker.tail() if self.worker is not None else \
            (self.tmp / "triage.log").read_text(errors="replace")[-6000:]

    def comment_delivery(self, body: str, *, author: str = "maint") -> tuple[int, bytes]:
        """A comment on the fake's issue 42 and the signed body GitHub sends for it."""
        comment_id = self.fake.add_comment(REPO, 42, body, author)
        payload = json.loads((FIXTURES / "issue_comment.created.json").read_text())
        payload["comment"].update(id=comment_id, body=body)
        payload["comment"]["user"]["login"] = author
        payload["sender"]["login"] = author
        payload["issue"]["number"] = 42
        payload["repository"]["full_name"] = REPO
        payload["installation"] = {"id": INSTALLATION_ID}
        return comment_id, json.dumps(payload).encode()

    def post(self, raw: bytes, delivery: str) -> httpx.Response:
        return httpx.post(f"{self.web.url}/webhook", content=raw, headers={
            "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(SECRET, raw), "Content-Type": "application/json"},
            timeout=10)


@contextlib.contextmanager
def triage_service(fake: FakeGitHub, namespace: str, tmp: Path,
                   **overrides: Any) -> Iterator[TriageService]:
    settings = make_settings(
        namespace, github_api_url=fake.base_url, app_id=fake.app_id,
        app_private_key=fake.private_key_pem, webhook_secrets=[SECRET],
        data_dir=tmp / "jobs", public_url="http://triagebot.test", **overrides)
    fake.add_issue(REPO, 42, "MTP slower under CUDA graphs", "vLLM 0.17.1, MTP k=1 slower.",
                   author="reporter")
    fake.set_permission(REPO, "maint", "write")
    with Uvicorn(create_app(settings)) as web:
        service = TriageService(settings, web, fake, JobStore(settings), tmp)
        try:
            yield service
        finally:
            service.stop_worker()
