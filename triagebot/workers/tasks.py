"""Thin Celery tasks over the triage executor and the job runner, with their retry policy.

Tasks take only ids and plain JSON. Retries are for transient failures only (GitHub 5xx or
rate limits beyond what the client waits out, Redis connection errors), with backoff,
jitter and a cap; anything else is logged and the job is marked failed where there is one.
A GPU worker lost mid-job (SIGKILL, OOM kill) gets its message back through
`reject_on_worker_lost`; the attempts counter in the job record bounds that loop.
"""

from __future__ import annotations

import contextlib
import logging
from functools import cache
from typing import Any

from celery import Celery, Task

from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.web.events import ThreadEvent
from triagebot.workers import task_queues
from triagebot.workers.runner import JobRunner
from triagebot.workers.triage import TRANSIENT, CommentBusy, Triage
from triagebot.workers.write_turns import installation_client

log = logging.getLogger(__name__)

_RETRY: dict[str, Any] = {"retry_backoff": True, "retry_backoff_max": 600,
                          "retry_jitter": True, "max_retries": 8}


def register(app: Celery) -> None:
    """Add the tasks to `app`; the settings are the ones its factory was given."""
    settings: Settings = app.conf.triagebot_settings

    @cache
    def store() -> JobStore:
        return JobStore(settings)

    @cache
    def github(installation_id: int | None) -> GitHubClient:
        # One client per installation and process: it refreshes its own token, so a busy
        # triage worker does not mint a token per event. Its writes take the
        # installation's turn, shared with the other processes through Redis.
        if installation_id is None:
            raise GitHubError("the event carries no installation id", status=None,
                              transient=False)
        return installation_client(settings, installation_id, client=store().redis)

    def triage() -> Triage:
        return Triage(settings, store(), app, github)

    def _permanent(exc: Exception) -> bool:
        return isinstance(exc, GitHubError) and not exc.transient

    def _reason(exc: Exception) -> str:
        if isinstance(exc, GitHubError):
            return f"GitHub kept refusing ({exc.status or 'no answer'})"
        return "its job store (Redis) was unavailable"

    def _transient(task: Task, exc: Exception) -> None:
        """Retry what may pass; give up loudly on what will not."""
        if isinstance(exc, GitHubError) and not exc.transient:
            log.error("%s: GitHub refused: %s", task.name, exc)
            return
        raise task.retry(exc=exc, countdown=min(600, 2 ** task.request.retries * 5))

    @app.task(name=task_queues.HANDLE_EVENT, bind=True, acks_late=True, **_RETRY)
    def handle_event(self: Task, payload: dict[str, Any]) -> None:
        event = ThreadEvent.model_validate(payload)
        try:
            triage().handle(event)
        except TRANSIENT as exc:
            if self.request.retries < self.max_retries and not _permanent(exc):
                _transient(self, exc)
            # Out of retries (or refused for good): a last visible word, if GitHub lets us.
            log.error("%s: giving up on %s: %s", self.name, event.delivery, exc)
            with contextlib.suppress(*TRANSIENT):
                triage().report_failure(event, _reason(exc))

    @app.task(name=task_queues.PROGRESS, bind=True, acks_late=True, max_retries=3)
    def progress(self: Task, job_id: str) -> None:
        # Progress is best effort: a busy or failing edit is skipped, the next one comes.
        try:
            triage().progress(job_id)
        except CommentBusy:
            return
        except TRANSIENT as exc:
            log.warning("progress for %s skipped: %s", job_id, exc)

    @app.task(name=task_queues.BISECT_COMMITS, bind=True, acks_late=True, max_retries=3)
    def bisect_commits(self: Task, job_id: str, run_json: str) -> None:
        # The runner waits for the answer; one it never gets ends its wait with a note.
        try:
            triage().bisect_commits(job_id, run_json)
        except TRANSIENT as exc:
            if self.request.retries < self.max_retries and not _permanent(exc):
                _transient(self, exc)
            log.error("%s: no commits for %s: %s", self.name, job_id, exc)

    @app.task(name=task_queues.PUBLISH, bind=True, acks_late=True, **_RETRY)
    def publish(self: Task, job_id: str) -> None:
        try:
            triage().publish(job_id)
        except CommentBusy as exc:
            raise self.retry(exc=exc, countdown=2) from None
        except TRANSIENT as exc:
            _transient(self, exc)

    # Enough retries to wait out a live owner for the whole hard limit.
    lock_retries = settings.job_time_limit_s // settings.lock_ttl_s + 3

    @app.task(name=task_queues.RUN_JOB, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=lock_retries)
    def run_job(self: Task, job_id: str) -> str:
        outcome = JobRunner(settings, store(), app, worker=self.request.hostname).run(job_id)
        if outcome == "locked":
            # Another worker holds the job, or one died holding it: look again once the
            # lock would have expired.
            raise self.retry(countdown=store().lock_ttl(job_id) + 1)
        return outcome

    @app.task(name=task_queues.CANARY)
    def canary(token: str) -> str:
        store().redis.set(settings.key("canary", token), "ok", ex=300)
        return token
