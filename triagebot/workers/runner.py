"""The GPU side: run one job's plan on this worker's GPU and leave the report in Redis.

It holds no GitHub credentials. It takes the job's lock (so a redelivered message cannot
run the job twice at once), counts the attempt (so a job that keeps killing its worker
stops), resumes from the runs already stored, and asks the triage side to publish.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import socket
import time
from collections.abc import Callable
from typing import Literal

import redis
from celery import Celery

from triagebot.jobs.store import JobStore
from triagebot.progress import Event, describe
from triagebot.render import RenderError, render_plan
from triagebot.report import render_report
from triagebot.run.orchestrate import RunCancelled, RunSettings, execute
from triagebot.run_result import RunResult
from triagebot.settings import Settings
from triagebot.workers import task_queues
from triagebot.workers.runner_bisect import run_bisect_job
from triagebot.workers.runner_watch import run_watch_job
from triagebot.workers.sentinel_runner import run_sentinel_job

log = logging.getLogger(__name__)

Attempt = Literal["missing", "finished", "locked", "ran", "lost", "cancelled", "gave_up"]


class StoredSlots:
    """The job's finished runs in Redis, written only while this worker owns the job."""

    def __init__(self, store: JobStore, job_id: str, token: str) -> None:
        self.store = store
        self.job_id = job_id
        self.token = token

    def get(self, cell_id: str, round_: int) -> RunResult | None:
        return self.store.runs.get_result(self.job_id, cell_id, round_)

    def put(self, cell_id: str, round_: int, result: RunResult, wall_s: float) -> None:
        self.store.runs.put_result(self.job_id, self.token, cell_id, round_, result)
        if wall_s > 0:
            self.store.counters.observe_cell(wall_s)


class JobRunner:
    def __init__(self, settings: Settings, store: JobStore, celery: Celery,
                 worker: str | None = None) -> None:
        self.settings = settings
        self.store = store
        self.celery = celery
        self.worker = worker or socket.gethostname()

    def run(self, id_: str) -> Attempt:
        job = self.store.get(id_)
        if job is None:
            return "missing"
        if job.terminal:
            return "finished"
        if job.cancel_requested:
            self.store.move(id_, "cancelled")
            self._publish(id_)
            return "cancelled"
        token = self.store.runs.acquire(id_)
        if token is None:
            return "locked"
        try:
            return self._run_owned(id_, token)
        finally:
            self.store.runs.release(id_, token)

    def _run_owned(self, id_: str, token: str) -> Attempt:
        job = self.store.set(id_, attempts=self.store.require(id_).attempts + 1)
        if job.attempts > self.settings.max_attempts:
            self.store.move(id_, "failed", error=(
                f"gave up after {self.settings.max_attempts} attempts: the worker running "
                "it was lost each time (a crash, an out-of-memory kill or a shutdown)"))
            self._publish(id_)
            return "gave_up"
        self.store.move(id_, "running", worker=self.worker, heartbeat_at=time.time())
        started = time.monotonic()
        plan = self.store.plan(id_)
        try:
            with self.store.runs.heartbeat(id_, token) as lost:
                stop = _Stop(self.store, id_, lost.is_set)
                if job.bisect is not None:
                    run_bisect_job(self, id_, job, stop)
                    return "ran"
                if job.sentinel is not None:
                    run_sentinel_job(self, id_, job, stop, self._progress(id_))
                    return "ran"
                if job.watch is not None:
                    run_watch_job(self, id_, job, StoredSlots(self.store, id_, token), stop,
                                  self._progress(id_))
                    return "ran"
                scripts = render_plan(plan)
                settings = RunSettings(
                    out_dir=self.settings.data_dir / id_, cache_dir=self.settings.env_cache_dir,
                    local=self.settings.run_local, silence_limit_s=self.settings.silence_limit_s,
                    escalate=self.settings.escalate, margin=job.margin,
                    negligible=job.negligible)
                execution = execute(plan, scripts, self.store.request(id_), settings,
                                    self._progress(id_), store=StoredSlots(self.store, id_, token),
                                    stop=stop)
        except RunCancelled:
            if lost.is_set():
                log.warning("job %s: lost its lock; another worker owns it now", id_)
                return "lost"
            self.store.move(id_, "cancelled")
            self._publish(id_)
            return "cancelled"
        except RenderError as exc:
            self.store.move(id_, "failed", error=f"the plan could not be rendered: {exc}")
            self._publish(id_)
            return "ran"
        except Exception as exc:
            # A bug or a lasting Redis outage: say so on the thread rather than leave the
            # job running forever.
            log.exception("job %s failed inside the runner", id_)
            with contextlib.suppress(Exception):
                self.store.move(id_, "failed", error=f"internal error in the runner: "
                                                     f"{type(exc).__name__}")
                self._publish(id_)
            return "ran"
        finally:
            used = time.monotonic() - started
            self.store.counters.add_gpu_seconds(job.repo, used)
            # The job's own total too (the job page shows it), over every attempt.
            self.store.update(id_, lambda r: r.model_copy(
                update={"gpu_seconds": r.gpu_seconds + used}))
        job = self.store.require(id_)
        command = shlex.join(["triagebot", "repro",
                              self.settings.thread_url(job.repo, job.number),
                              *job.command.split()[1:]])
        report = render_report(plan, execution.findings, scripts=scripts, command=command,
                               docs_url=self.settings.docs_url)
        self.store.runs.save_report(id_, execution.findings.model_dump_json(), report)
        self.store.move(id_, "done", outcome=execution.findings.outcome,
                        headline=execution.findings.headline, eta_s=0.0)
        self._publish(id_)
        return "ran"

    def _progress(self, id_: str) -> Callable[[Event], None]:
        last_sent = [0.0]

        def update(event: Event) -> None:
            # The same line the CLI prints (`triagebot.progress.describe`): installs and
            # engine starts too, which are minutes on a fresh runner.
            fields: dict[str, object] = {"current": describe(event)}
            if event.kind in ("engine", "start", "done", "round"):
                fields.update(runs_done=event.runs_done, runs_planned=event.runs_planned,
                              eta_s=event.eta_s, current_cell=event.label)
            try:
                self.store.set(id_, **fields)
            except redis.RedisError:
                return  # progress is best effort; the runs go on
            now = time.monotonic()
            if now - last_sent[0] >= self.settings.progress_interval_s:
                last_sent[0] = now
                self.celery.send_task(task_queues.PROGRESS, args=[id_],
                                      queue=task_queues.TRIAGE_QUEUE, ignore_result=True)

        return update

    def _publish(self, id_: str) -> None:
        self.celery.send_task(task_queues.PUBLISH, args=[id_], queue=task_queues.TRIAGE_QUEUE,
                              ignore_result=True)

    publish = _publish

    def send_progress(self, id_: str) -> None:
        self.celery.send_task(task_queues.PROGRESS, args=[id_],
                              queue=task_queues.TRIAGE_QUEUE, ignore_result=True)


class _Stop:
    """Polled by the supervisor every 0.1 s; reads Redis at most once a second."""

    def __init__(self, store: JobStore, id_: str, lost: Callable[[], bool]) -> None:
        self.store = store
        self.id = id_
        self.lost = lost
        self.checked = 0.0
        self.cancelled = False

    def __call__(self) -> bool:
        if self.lost():
            return True
        now = time.monotonic()
        if not self.cancelled and now - self.checked >= 1.0:
            self.checked = now
            try:
                job = self.store.get(self.id)
            except redis.RedisError:
                return False  # a blip is not a cancel; the lock says when we lost the job
            self.cancelled = job is None or job.cancel_requested
        return self.cancelled
