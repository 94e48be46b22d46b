"""Starting a worker: which queues, how many processes, the heartbeat `/readyz` reads, and
on triage workers the check that GitHub accepts the App's credentials (reported in the
heartbeat) and the reaper that requeues jobs whose GPU worker died."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading

import redis
from celery.utils.nodenames import host_format

from triagebot.github.auth import app_problem
from triagebot.jobs.store import JobStore
from triagebot.run import leftovers
from triagebot.settings import Settings
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery
from triagebot.workers.reaper import reap_forever

_QUEUE = re.compile(r"^(triage|gpu-[a-z0-9][a-z0-9-]{0,31})$")
# How often a triage worker asks GitHub whether it accepts the App's credentials.
GITHUB_CHECK_S = 300.0
GITHUB_RECHECK_S = 15.0
log = logging.getLogger(__name__)


class WorkerError(ValueError):
    """The worker was asked for something it cannot serve."""


def check_queues(settings: Settings, queues: list[str]) -> list[str]:
    if not queues:
        raise WorkerError("name at least one queue: triage or gpu-<kind>")
    valid = [task_queues.TRIAGE_QUEUE, *(settings.queue_for(k) for k in settings.gpu_kinds)]
    for queue in queues:
        if not _QUEUE.fullmatch(queue) or queue not in valid:
            raise WorkerError(f"unknown queue {queue!r}; this deployment has: "
                              f"{', '.join(valid)} (TRIAGEBOT_GPU_KINDS sets the GPU kinds)")
    return queues


def worker_argv(settings: Settings, queues: list[str], name: str | None,
                concurrency: int | None, loglevel: str) -> list[str]:
    """Celery's worker arguments. A GPU queue means one process and a fresh one per job:
    the GPU is used by one job at a time and nothing of a job survives into the next."""
    gpu = any(q.startswith("gpu-") for q in check_queues(settings, queues))
    argv = ["worker", "-Q", ",".join(queues), "-n",
            name or f"{'+'.join(queues)}@{socket.gethostname()}", "--loglevel", loglevel,
            "--without-gossip", "--without-mingle"]
    if gpu:
        argv += ["-c", "1", "--max-tasks-per-child", "1"]
    else:
        argv += ["-c", str(concurrency or 2), "--max-tasks-per-child", "1000"]
    return argv


def run_worker(settings: Settings, queues: list[str], *, name: str | None = None,
               concurrency: int | None = None, loglevel: str = "info") -> None:
    argv = worker_argv(settings, queues, name, concurrency, loglevel)
    if any(q.startswith("gpu-") for q in queues):
        # A predecessor killed outright (SIGKILL, the OOM killer, a lost pool process)
        # may have left engines running, or stopped between rounds, holding the memory
        # this worker's jobs need.
        leftovers.reap(leftovers.scope_of(settings.env_cache_dir), log=log.warning)
    app = create_celery(settings)
    stop = threading.Event()
    label = host_format(argv[argv.index("-n") + 1])
    health = Health()
    threads = [threading.Thread(target=_heartbeat, args=(settings, label, queues, health, stop),
                                name="worker-heartbeat", daemon=True)]
    if task_queues.TRIAGE_QUEUE in queues:
        # The triage worker acts as the GitHub App: one that cannot (no key, a wrong one,
        # GitHub out of reach) is not ready, and its heartbeat says why.
        health.problem = "checking the GitHub App's credentials"
        threads.append(threading.Thread(target=_check_github, args=(settings, health, stop),
                                        name="github-check", daemon=True))
        # In the worker's main process, so a pool process that dies mid-task stops nothing.
        threads.append(threading.Thread(target=reap_forever, args=(settings, app, stop),
                                        name="reaper", daemon=True))
    for thread in threads:
        thread.start()
    try:
        app.worker_main(argv)
    finally:
        stop.set()


class Health:
    """What keeps this worker from its work, as its heartbeat reports it (None: nothing)."""

    problem: str | None = None


def _check_github(settings: Settings, health: Health, stop: threading.Event) -> None:
    while True:
        problem = app_problem(settings)
        if problem != health.problem:
            if problem:
                log.error("this worker cannot act as the GitHub App, so /readyz fails: %s",
                          problem)
            else:
                log.info("GitHub accepts the App's credentials")
        health.problem = problem
        # Checked often while broken, so a fix shows up soon; rarely once it works.
        if stop.wait(GITHUB_RECHECK_S if problem else GITHUB_CHECK_S):
            return


def _heartbeat(settings: Settings, name: str, queues: list[str], health: Health,
               stop: threading.Event) -> None:
    store = JobStore(settings)
    ttl = max(2, settings.worker_heartbeat_max_age_s)
    interval = max(0.5, min(settings.heartbeat_s, ttl / 3))
    while True:
        # Redis away: readiness shows it; keep trying.
        with contextlib.suppress(redis.RedisError):
            store.counters.worker_alive(name.replace(":", "_"), ttl, queues, health.problem)
        if stop.wait(interval):
            return


def run_beat(settings: Settings, *, loglevel: str = "info") -> None:
    """Celery beat with the app's schedule; its own schedule file lives in the data dir."""
    app = create_celery(settings, register_tasks=False)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app.start(["beat", "--loglevel", loglevel,
               "--schedule", str(settings.data_dir / "beat-schedule")])
