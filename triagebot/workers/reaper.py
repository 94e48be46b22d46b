"""The reaper: jobs whose worker died are queued again within a minute, not after hours.

A GPU worker killed as a whole (SIGKILL, a lost machine) leaves its job `running` and its
Celery message unacknowledged; the broker hands the message out again only after the
visibility timeout, which must exceed the job's hard limit (hours). The job's lock expires
`lock_ttl_s` after the last heartbeat, though, so a job with no lock and a stale heartbeat
has no live owner. The reaper moves it back to `queued` and sends a fresh run message; the
runner's lock and attempts counter keep that to one execution at a time and a bounded
number of tries, and the job keeps its one comment.
"""

from __future__ import annotations

import logging
import threading
import uuid

import redis
from celery import Celery

from triagebot.jobs.record import JobError
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.workers import task_queues

log = logging.getLogger(__name__)


def reap_once(settings: Settings, store: JobStore, celery: Celery) -> list[str]:
    """Requeue every running job whose worker is gone; returns their ids."""
    requeued = []
    for id_ in store.ids_in_state("running"):
        try:
            job = store.requeue_if_abandoned(id_, stale_s=settings.lock_ttl_s)
        except JobError:
            continue  # expired meanwhile
        if job is None:
            continue
        celery.send_task(task_queues.RUN_JOB, args=[job.id], queue=settings.queue_for(job.gpu_kind),
                         task_id=f"job-{job.id}-{uuid.uuid4().hex[:8]}", ignore_result=True)
        store.set(job.id, enqueued=True)
        # Its comment said "Running": it now says the job waits in the queue again.
        celery.send_task(task_queues.PROGRESS, args=[job.id], queue=task_queues.TRIAGE_QUEUE,
                         ignore_result=True)
        log.warning("job %s: its worker stopped sending heartbeats; queued again "
                    "(reaped %d time(s), %d attempt(s) so far)", job.id, job.reaped,
                    job.attempts)
        requeued.append(job.id)
    return requeued


def reap_forever(settings: Settings, celery: Celery, stop: threading.Event) -> None:
    """Run `reap_once` every `reap_interval_s` until `stop` is set.

    Several triage workers may each run this: the move back to `queued` is a checked
    transaction, so only one of them requeues a given job.
    """
    store = JobStore(settings)
    while not stop.wait(settings.reap_interval_s):
        # Redis away or a bug in one pass: the next pass tries again.
        try:
            reap_once(settings, store, celery)
        except redis.RedisError as exc:
            log.warning("reaper pass skipped: %s", type(exc).__name__)
        except Exception:
            log.exception("reaper pass failed")
