"""The reaper's decisions against a real Redis: which running jobs have lost their worker."""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.support import record
from tests.service.threads import bot_comments, comment_event, queued
from triagebot.jobs.store import JobStore
from triagebot.plan_model import Plan
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


def test_a_requeued_jobs_comment_no_longer_says_running(env: dict[str, Any]) -> None:
    # Issue 41, item 7: after its runner died, the thread still said "Running: 2/9 runs;
    # about 74 s left" while the job waited in the queue again.
    triage, fake, store, settings = env["triage"], env["fake"], env["store"], env["settings"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    [job] = store.thread_jobs(REPO, 42)
    store.move(job.id, "running", heartbeat_at=time.time())
    store.set(job.id, runs_done=2, runs_planned=9, eta_s=74.0)
    triage.progress(job.id)
    [comment] = bot_comments(fake)
    assert "**Running**: 2/9 runs; about 74 s left" in comment.body
    store.set(job.id, heartbeat_at=time.time() - 10 * settings.lock_ttl_s)
    assert reap_once(settings, store, triage.ctx.celery) == [job.id]
    tasks = [m["headers"]["task"] for m in queued(settings, task_queues.TRIAGE_QUEUE)]
    assert task_queues.PROGRESS in tasks
    triage.progress(job.id)  # what that task does
    [comment] = bot_comments(fake)
    assert "Running" not in comment.body and "74 s" not in comment.body
    assert "**Queued again**" in comment.body and "2/9 runs were done" in comment.body
