"""Thin Celery tasks over the triage executor and the job runner, with their retry policy.

Tasks take only ids and plain JSON. Retries are for transient failures only (GitHub 5xx,
rate limits beyond what the client waits out, Redis connection errors), as
`retry_policy` decides: a rate limit is waited out as GitHub asks and never uses up the
tries. An event given up on (or one that failed in a way no retry cures) is recorded as
failed with its delivery id, so it shows on /metrics and the failed-deliveries page and
GitHub's redelivery of it is taken; an event handled, or refused on purpose, is recorded
as done. A GPU worker lost mid-job (SIGKILL, OOM kill) gets its message back through
`reject_on_worker_lost`; the attempts counter in the job record bounds that loop.
"""

from __future__ import annotations

import contextlib
import logging
import time
from functools import cache
from typing import Any

import redis
from billiard.process import current_process
from celery import Celery, Task

from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.github.events import ThreadEvent
from triagebot.jobs.deliveries import DeliveryLog, FailedEvent
from triagebot.jobs.store import JobStore
from triagebot.run.shutdown import run_until_stopped
from triagebot.settings import Settings, SettingsError
from triagebot.workers import sentinel, task_queues, watch
from triagebot.workers.retry_policy import MAX_FAILURES, next_try
from triagebot.workers.runner import JobRunner
from triagebot.workers.sentinel_issues import TrackBusy
from triagebot.workers.triage import TRANSIENT, CommentBusy, Triage
from triagebot.workers.write_turns import installation_client

log = logging.getLogger(__name__)


def _again(task: Task, exc: Exception, args: list[Any], waits: int) -> None:
    """Schedule the task's next try, as `retry_policy` says; return to give up."""
    found = next_try(exc, failures=task.request.retries - waits, waits=waits)
    if found is None:
        return
    waits += found.wait
    if found.wait:
        log.warning("%s: %s; trying again in %.0f s, as GitHub asked", task.name, exc,
                    found.seconds)
    # The limit is `next_try`'s to keep; Celery's own count includes the waits.
    raise task.retry(exc=exc, countdown=found.seconds, args=args, kwargs={"waits": waits},
                     max_retries=task.request.retries + 1)


def reason_of(exc: BaseException) -> str:
    """Why an event failed, in full, for the log only: our own messages (GitHub's
    answers, settings problems, which may name a file path), anything else by its type."""
    if isinstance(exc, GitHubError | SettingsError):
        return f"{type(exc).__name__}: {exc}"
    return reason_class(exc)


def reason_class(exc: BaseException) -> str:
    """What kind of failure it was, in words safe for a public page and the thread: no
    path, no message, only the class (the log has the detail)."""
    if isinstance(exc, SettingsError):
        return "the worker's settings are incomplete or wrong (its log has the details)"
    if isinstance(exc, GitHubError):
        if exc.token:
            return "GitHub would not give the App an installation token"
        if exc.rate_limited:
            return "GitHub's rate limit"
        if exc.status is None:
            return "GitHub could not be reached"
        return f"GitHub answered HTTP {exc.status}"
    if isinstance(exc, redis.RedisError):
        return f"its job store (Redis) was unavailable ({type(exc).__name__})"
    return f"internal error ({type(exc).__name__})"


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

    def failed(event: ThreadEvent, exc: BaseException) -> None:
        """Give up on the event, visibly: a log line with its delivery id, the record
        that lets its redelivery run and lists it, and a last word on the thread when
        GitHub lets us post one."""
        kind = reason_class(exc)
        log.error("event failed delivery=%s event=%s.%s repo=%s#%d: %s", event.delivery,
                  event.event, event.action, event.repo, event.number, reason_of(exc))
        with contextlib.suppress(redis.RedisError):
            DeliveryLog(settings, store().redis).failed(FailedEvent(
                delivery=event.delivery, event=event.event, action=event.action,
                repo=event.repo, private=event.private, number=event.number,
                reason=kind, at=time.time()))
        with contextlib.suppress(Exception):
            triage().report_failure(event, kind)

    @app.task(name=task_queues.HANDLE_EVENT, bind=True, acks_late=True,
              max_retries=MAX_FAILURES)
    def handle_event(self: Task, payload: dict[str, Any], waits: int = 0) -> None:
        event = ThreadEvent.model_validate(payload)
        try:
            triage().handle(event)
        except TRANSIENT as exc:
            _again(self, exc, [payload], waits)
            failed(event, exc)
            return
        except Exception as exc:
            # A bug or a broken deployment (no key, say): no retry cures it, but its
            # redelivery, once it is fixed, may.
            failed(event, exc)
            raise
        DeliveryLog(settings, store().redis).done(event.delivery)

    @app.task(name=task_queues.PROGRESS, bind=True, acks_late=True, max_retries=3)
    def progress(self: Task, job_id: str) -> None:
        # Progress is best effort: a busy or failing edit is skipped, the next one comes.
        try:
            triage().progress(job_id)
        except CommentBusy:
            return
        except TRANSIENT as exc:
            log.warning("progress for %s skipped: %s", job_id, exc)

    @app.task(name=task_queues.BISECT_COMMITS, bind=True, acks_late=True,
              max_retries=MAX_FAILURES)
    def bisect_commits(self: Task, job_id: str, run_json: str, waits: int = 0) -> None:
        # The runner waits for the answer; one it never gets ends its wait with a note.
        try:
            triage().bisect_commits(job_id, run_json)
        except TRANSIENT as exc:
            _again(self, exc, [job_id, run_json], waits)
            log.error("%s: no commits for %s: %s", self.name, job_id, exc)

    @app.task(name=task_queues.PUBLISH, bind=True, acks_late=True, max_retries=MAX_FAILURES)
    def publish(self: Task, job_id: str, waits: int = 0) -> None:
        try:
            triage().publish(job_id)
        except (CommentBusy, TrackBusy) as exc:
            raise self.retry(exc=exc, countdown=2, args=[job_id], kwargs={"waits": waits},
                             max_retries=self.request.retries + 1) from None
        except TRANSIENT as exc:
            _again(self, exc, [job_id], waits)
            log.error("%s: giving up on publishing job %s: %s", self.name, job_id, exc)
            raise

    # Enough retries to wait out a live owner for the whole hard limit.
    lock_retries = settings.job_time_limit_s // settings.lock_ttl_s + 3

    @app.task(name=task_queues.RUN_JOB, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=lock_retries)
    def run_job(self: Task, job_id: str) -> str:
        # A pool process ends on SIGTERM (Celery's cold shutdown, a revoke with terminate,
        # the first step of a hard time limit) without a `finally`: the engines the job
        # started, in sessions of their own, would outlive it. Stopped first, they don't;
        # the process then dies of the same signal, so Celery still sees a worker lost
        # mid-job and queues the job again (`reject_on_worker_lost`). What a SIGKILL
        # leaves (a hard limit's KILL comes a tenth of a second after its TERM) the next
        # run and the next worker end (`triagebot.run.leftovers`).
        def run() -> str:
            return JobRunner(settings, store(), app, worker=self.request.hostname).run(job_id)

        # Only in a pool process: where the task runs in the worker's own process (the
        # solo pool, an eager call) the signals are Celery's, for its warm shutdown.
        if current_process().name == "MainProcess":
            outcome = run()
        else:
            outcome = run_until_stopped(run, lambda m: log.warning("job %s: %s", job_id, m))
        if outcome == "locked":
            # Another worker holds the job, or one died holding it: look again once the
            # lock would have expired.
            raise self.retry(countdown=store().runs.lock_ttl(job_id) + 1)
        return outcome

    @app.task(name=task_queues.WATCH_POLL, acks_late=True)
    def watch_poll() -> int:
        # A tick that fails is logged and the next one tries again; claims make a
        # repeated or concurrent tick queue nothing twice. The sentinel's runs are
        # queued from the same feeds, each part on its own poll gate.
        queued = 0
        for name, part in (("watch", watch.poll), ("sentinel", sentinel.poll)):
            try:
                queued += part(triage().ctx)
            except TRANSIENT as exc:
                log.warning("%s (%s): %s; the next tick tries again",
                            task_queues.WATCH_POLL, name, exc)
        return queued

    @app.task(name=task_queues.CANARY)
    def canary(token: str) -> str:
        store().redis.set(settings.key("canary", token), "ok", ex=300)
        return token
