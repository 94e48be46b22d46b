"""The reaper's decisions against a real Redis: which running jobs have lost their worker."""

from __future__ import annotations

import time

from tests.service.support import record
from tests.service.threads import queued
from triagebot.jobs.store import JobStore
from triagebot.model import Plan
from triagebot.settings import Settings
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery
from triagebot.workers.reaper import reap_once


def _running(store: JobStore, plan: Plan, trigger: str, heartbeat_age_s: float) -> str:
    job = store.create(record(plan, trigger=trigger), plan, None).job
    store.move(job.id, "running", heartbeat_at=time.time() - heartbeat_age_s, attempts=1)
    return job.id


def test_only_jobs_without_lock_and_heartbeat_are_requeued(settings: Settings,
                                                           store: JobStore) -> None:
    celery = create_celery(settings, register_tasks=False)
    plans = [Plan(engine="transformers", gpu_kind="cpu", question=f"q{i}", cells=[],
                  plan_hash=f"plan-{i}") for i in range(3)]
    dead = _running(store, plans[0], "comment-1", heartbeat_age_s=settings.lock_ttl_s + 5)
    fresh = _running(store, plans[1], "comment-2", heartbeat_age_s=0.5)
    locked = _running(store, plans[2], "comment-3", heartbeat_age_s=settings.lock_ttl_s + 5)
    assert store.runs.acquire(locked) is not None  # a live worker still holds this one

    assert reap_once(settings, store, celery) == [dead]
    job = store.require(dead)
    assert job.state == "queued" and job.reaped == 1 and job.attempts == 1 and job.enqueued
    assert store.require(fresh).state == "running"
    assert store.require(locked).state == "running"
    runs = [m for m in queued(settings, "gpu-cpu") if m["headers"]["task"] == task_queues.RUN_JOB]
    assert [m["headers"]["argsrepr"] for m in runs] == [repr([dead])]
    # A second pass (or a second triage worker's reaper) finds nothing more to do.
    assert reap_once(settings, store, celery) == []
    assert len(queued(settings, "gpu-cpu")) == 1
