"""The GPU-side runner's decisions before and around a run (no cells executed here; the
end-to-end tests run real ones)."""

from __future__ import annotations

import json

import pytest
import redis

from tests.service.support import record
from triagebot.jobs.store import JobStore
from triagebot.plan_model import Plan
from triagebot.settings import Settings
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery
from triagebot.workers.runner import JobRunner


@pytest.fixture
def runner(settings: Settings) -> JobRunner:
    return JobRunner(settings, JobStore(settings), create_celery(settings), worker="w-test")


def published(settings: Settings) -> list[str]:
    client = redis.Redis.from_url(settings.redis_url)
    messages = [json.loads(m) for m in
                client.lrange(settings.celery_key_prefix + task_queues.TRIAGE_QUEUE, 0, -1)]
    return [m["headers"]["argsrepr"] for m in messages
            if m["headers"]["task"] == task_queues.PUBLISH]


def test_missing_and_finished_jobs_are_left_alone(runner: JobRunner, plan: Plan) -> None:
    assert runner.run("0" * 20) == "missing"
    job = runner.store.create(record(plan), plan, None).job
    runner.store.move(job.id, "cancelled")
    assert runner.run(job.id) == "finished"


def test_a_held_lock_means_someone_else_runs_it(runner: JobRunner, plan: Plan) -> None:
    job = runner.store.create(record(plan), plan, None).job
    assert runner.store.runs.acquire(job.id) is not None
    assert runner.run(job.id) == "locked"
    assert runner.store.require(job.id).attempts == 0


def test_cancel_before_start_cancels_and_publishes(runner: JobRunner, plan: Plan,
                                                   settings: Settings) -> None:
    job = runner.store.create(record(plan), plan, None).job
    runner.store.move(job.id, "running")
    runner.store.request_cancel(job.id, "maint")
    assert runner.run(job.id) == "cancelled"
    assert runner.store.require(job.id).state == "cancelled"
    assert len(published(settings)) == 1


def test_attempts_are_capped(runner: JobRunner, plan: Plan, settings: Settings) -> None:
    job = runner.store.create(record(plan), plan, None).job
    runner.store.move(job.id, "running")
    runner.store.set(job.id, attempts=settings.max_attempts)
    assert runner.run(job.id) == "gave_up"
    failed = runner.store.require(job.id)
    assert failed.state == "failed" and "gave up after 2 attempts" in (failed.error or "")
    assert failed.attempts == settings.max_attempts + 1
    assert len(published(settings)) == 1
    # The lock is released, so nothing is left holding the job.
    assert runner.store.runs.lock_ttl(job.id) == 0


def test_the_time_an_attempt_held_the_runner_is_on_the_job(runner: JobRunner,
                                                           plan: Plan) -> None:
    # Issue 41, item 12: the job page's JSON always showed gpu_seconds 0.0. An attempt
    # that fails inside the runner (here a bisect whose spec cannot be read) still held it.
    job = runner.store.create(record(plan), plan, None).job
    runner.store.set(job.id, bisect="{}")
    assert runner.run(job.id) == "ran"
    failed = runner.store.require(job.id)
    assert failed.state == "failed" and failed.gpu_seconds > 0
    assert runner.store.counters.gpu_seconds_today(failed.repo) == pytest.approx(failed.gpu_seconds)
