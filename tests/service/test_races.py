"""Concurrent copies of one delivery, as GitHub sends them (redeliveries, re-fired edits).

Each copy is handled by its own triage executor (its own Redis and broker connections and
GitHub client), as separate pool processes would, all released at once by a barrier.
Issue 15, defect 1: two or five copies used to post two job comments and two runs.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.service.threads import bot_comments, comment_event, queued
from triagebot.github.client import GitHubClient
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery
from triagebot.workers.triage import Triage

# Measured figures go to the log: pytest shows them with a failure or with --log-cli-level=INFO.
log = logging.getLogger(__name__)


def _executor(settings: Settings) -> Triage:
    def github(installation_id: int | None) -> GitHubClient:
        assert installation_id == INSTALLATION_ID
        return GitHubClient.for_installation(settings, installation_id)

    return Triage(settings, JobStore(settings), create_celery(settings, register_tasks=False),
                  github)


def _all_at_once(settings: Settings, events: list[Any]) -> float:
    """Handle every event on its own executor and thread; returns the seconds it took."""
    executors = [_executor(settings) for _ in events]
    barrier = threading.Barrier(len(events))
    errors: list[BaseException] = []

    def one(triage: Triage, event: Any) -> None:
        barrier.wait()
        try:
            triage.handle(event)
        except BaseException as exc:  # reported below, with the thread's traceback lost
            errors.append(exc)

    threads = [threading.Thread(target=one, args=pair) for pair in zip(executors, events,
                                                                       strict=True)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return time.monotonic() - started


@pytest.mark.parametrize("copies", [2, 5, 17, 50])
def test_concurrent_copies_of_a_repro_make_one_comment_and_one_run(
        env: dict[str, Any], copies: int) -> None:
    fake, settings, store = env["fake"], env["settings"], env["store"]
    store.counters.worker_alive("gpu-h100@runner", 60, ["gpu-h100"])
    first = comment_event(fake, "@triagebot repro k=1", delivery="race-0")
    assert first.comment is not None
    events = [first.model_copy(update={"delivery": f"race-{i}"}) for i in range(copies)]
    took = _all_at_once(settings, events)
    jobs = store.thread_jobs(REPO, 42)
    assert len(jobs) == 1 and jobs[0].enqueued
    job_comments = [c for c in bot_comments(fake) if f"job={jobs[0].id}" in c.body]
    assert len(job_comments) == 1, [c.body[:80] for c in job_comments]
    assert len(bot_comments(fake)) == 1  # and no reply besides it
    runs = [m for m in queued(settings, "gpu-h100") if m["headers"]["task"] == task_queues.RUN_JOB]
    assert len(runs) == 1
    assert store.require(jobs[0].id).comment_id == job_comments[0].id
    log.info(f"{copies} concurrent deliveries: 1 comment, 1 run, {took:.2f} s")


@pytest.mark.parametrize("copies", [2, 20])
def test_concurrent_copies_of_a_reply_make_one_reply(env: dict[str, Any], copies: int) -> None:
    fake, settings = env["fake"], env["settings"]
    first = comment_event(fake, "@triagebot help\n@triagebot repro colour=blue")
    events = [first.model_copy(update={"delivery": f"reply-{i}"}) for i in range(copies)]
    _all_at_once(settings, events)
    replies = bot_comments(fake)
    assert len(replies) == 1 and "colour" in replies[0].body
    assert len(fake.calls_to("POST", r"/repos/acme/engine/issues/42/comments")) == 1
