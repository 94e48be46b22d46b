"""Job records against a real Redis: identity, the state machine, locks, results, counts."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest
import redis

from tests.service.support import LINK_KEY, REPORT, record
from triagebot.jobs.record import JobError, job_id
from triagebot.jobs.store import JobStore
from triagebot.parse import parse_report
from triagebot.plan_model import Plan
from triagebot.run_result import RunResult
from triagebot.settings import Settings


def test_job_id_is_stable_and_separates_what_differs() -> None:
    base = job_id(LINK_KEY, "acme/engine", 42, "comment-1", "repro k=1")
    assert base == job_id(LINK_KEY, "ACME/engine", 42, "comment-1", "repro k=1")
    assert len(base) == 32 and int(base, 16) >= 0
    others = {job_id(LINK_KEY, "acme/engine", 43, "comment-1", "repro k=1"),
              job_id(LINK_KEY, "acme/engine", 42, "comment-2", "repro k=1"),
              job_id(LINK_KEY, "acme/engine", 42, "comment-1", "repro k=2")}
    assert base not in others and len(others) == 3


def test_job_id_cannot_be_computed_from_public_facts() -> None:
    # Issue 15, defect 6: the id was sha256(repo, number, comment, command)[:20], which
    # anyone could compute for a private repository's job.
    facts = "\x1f".join(("acme/engine", "42", "comment-1", "repro k=1")).encode()
    guessed = hashlib.sha256(facts).hexdigest()
    ours = job_id(LINK_KEY, "acme/engine", 42, "comment-1", "repro k=1")
    assert not guessed.startswith(ours[:20])
    assert ours != job_id(b"another-deployment-key", "acme/engine", 42, "comment-1",
                          "repro k=1")


def test_create_then_duplicate_then_busy(store: JobStore, plan: Plan) -> None:
    first = store.create(record(plan), plan, None)
    assert first.status == "created" and first.job.state == "queued"
    again = store.create(record(plan), plan, None)
    assert again.status == "duplicate" and again.job.id == first.job.id
    # Another comment asking for the same plan while the first is live: busy.
    other = store.create(record(plan, trigger="comment-2"), plan, None)
    assert other.status == "busy" and other.job.id == first.job.id
    assert store.get(record(plan, trigger="comment-2").id) is None
    # Once the first is over, the thread is free again.
    store.move(first.job.id, "running")
    store.move(first.job.id, "done", outcome="reproduced")
    assert store.create(record(plan, trigger="comment-2"), plan, None).status == "created"


def test_concurrent_creates_make_one_job(store: JobStore, plan: Plan) -> None:
    results: list[str] = []

    def go(i: int) -> None:
        results.append(store.create(record(plan, trigger=f"comment-{i % 3}"), plan,
                                    None).status)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("created") == 1
    assert store.counters.count_by_state()["queued"] == 1


def test_state_machine_refuses_bad_moves(store: JobStore, plan: Plan) -> None:
    job = store.create(record(plan), plan, None).job
    with pytest.raises(JobError, match="cannot go from queued to done"):
        store.move(job.id, "done")
    running = store.move(job.id, "running", worker="w1")
    assert running.started_at is not None and running.worker == "w1"
    done = store.move(job.id, "done", outcome="reproduced")
    assert done.finished_at is not None and done.terminal
    with pytest.raises(JobError, match="cannot go from done to running"):
        store.move(job.id, "running")
    with pytest.raises(JobError, match="does not exist"):
        store.move("0" * 20, "running")
    counts = store.counters.count_by_state()
    assert counts["queued"] == 0 and counts["running"] == 0 and counts["done"] == 1


def test_cancel_queued_now_running_later(store: JobStore, plan: Plan) -> None:
    job = store.create(record(plan), plan, None).job
    cancelled = store.request_cancel(job.id, "maint")
    assert cancelled.state == "cancelled" and cancelled.cancelled_by == "maint"
    second = store.create(record(plan, trigger="comment-9"), plan, None).job
    store.move(second.id, "running")
    flagged = store.request_cancel(second.id, "maint")
    assert flagged.state == "running" and flagged.cancel_requested


def test_lock_is_exclusive_fenced_and_refreshable(store: JobStore, plan: Plan) -> None:
    job = store.create(record(plan), plan, None).job
    token = store.runs.acquire(job.id)
    assert token is not None
    assert store.runs.acquire(job.id) is None
    assert store.runs.refresh(job.id, token)
    assert not store.runs.refresh(job.id, "1:stale")
    assert store.runs.lock_ttl(job.id) > 0
    result = RunResult(cell_id=plan.cells[0].cell_id, engine="transformers", status="ok")
    assert store.runs.put_result(job.id, token, plan.cells[0].cell_id, 0, result)
    store.runs.release(job.id, token)
    # A worker that lost the lock cannot write results any more.
    assert not store.runs.put_result(job.id, token, plan.cells[0].cell_id, 1, result)
    newer = store.runs.acquire(job.id)
    assert newer is not None and int(newer.split(":")[0]) > int(token.split(":")[0])
    assert store.runs.get_result(job.id, plan.cells[0].cell_id, 0) == result
    assert store.runs.get_result(job.id, plan.cells[0].cell_id, 1) is None


def test_heartbeat_keeps_the_lock_and_reports_its_loss(settings: Settings,
                                                        plan: Plan) -> None:
    store = JobStore(settings)
    job = store.create(record(plan), plan, None).job
    token = store.runs.acquire(job.id)
    assert token is not None
    with store.runs.heartbeat(job.id, token) as lost:
        time.sleep(settings.lock_ttl_s + 1.5)
        assert not lost.is_set()
        assert store.runs.lock_ttl(job.id) > 0
        assert store.require(job.id).heartbeat_at is not None
        store.redis.delete(settings.key("job", job.id, "lock"))
        deadline = time.monotonic() + 5
        while not lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lost.is_set()


def test_every_key_expires(store: JobStore, plan: Plan, redis_client: redis.Redis,
                           settings: Settings) -> None:
    job = store.create(record(plan), plan, None).job
    token = store.runs.acquire(job.id)
    assert token is not None
    store.runs.put_result(job.id, token, plan.cells[0].cell_id, 0,
                     RunResult(cell_id=plan.cells[0].cell_id, engine="transformers", status="ok"))
    store.runs.save_report(job.id, "{}", "report")
    store.counters.add_gpu_seconds("acme/engine", 12.5)
    store.counters.worker_alive("w1", 30)
    store.move(job.id, "running")
    store.move(job.id, "done")
    persistent = {settings.key("finished", "done"), settings.key("state", "queued"),
                  settings.key("state", "running")}
    for key in redis_client.scan_iter(match=f"{settings.namespace}:*"):
        name = key.decode()
        if name in persistent:
            continue
        assert redis_client.ttl(key) > 0, f"{name} has no TTL"


def test_results_plan_and_budget_round_trip(store: JobStore, plan: Plan) -> None:
    job = store.create(record(plan), plan, parse_report(REPORT)).job
    assert store.plan(job.id) == plan
    assert store.request(job.id) is not None
    token = store.runs.acquire(job.id)
    assert token is not None
    cell = plan.cells[0].cell_id
    for round_ in (1, 0, 10, 2):
        store.runs.put_result(job.id, token, cell, round_,
                         RunResult(cell_id=cell, engine="transformers", status="ok",
                                   error=str(round_)))
    assert [r.error for r in store.runs.results(job.id)[cell]] == ["0", "1", "2", "10"]
    assert store.counters.add_gpu_seconds("acme/engine", 30, day="20261122") == 30
    assert store.counters.add_gpu_seconds("acme/engine", 15, day="20261122") == 45
    assert store.counters.gpu_seconds_today("acme/engine", day="20261122") == 45
    store.counters.observe_cell(3)
    store.counters.observe_cell(700)
    buckets, total, count = store.counters.cell_histogram()
    assert buckets == {"5": 1, "1200": 1} and total == 703 and count == 2


def test_queue_position_counts_jobs_ahead_and_their_time(store: JobStore, plan: Plan) -> None:
    first = record(plan, trigger="comment-1").model_copy(update={"estimated_s": 100.0})
    store.create(first, plan, None)
    other_thread = record(plan, trigger="comment-2").model_copy(
        update={"number": 43, "estimated_s": 50.0,
                "id": job_id(LINK_KEY, "acme/engine", 43, "comment-2", "repro")})
    store.create(other_thread, plan, None)
    elsewhere = record(plan, trigger="comment-3").model_copy(
        update={"number": 44, "gpu_kind": "h100", "estimated_s": 999.0,
                "id": job_id(LINK_KEY, "acme/engine", 44, "comment-3", "repro")})
    store.create(elsewhere, plan, None)
    assert store.queue_position(store.require(first.id)) == (0, 0.0)
    assert store.queue_position(store.require(other_thread.id)) == (1, 100.0)
    store.move(first.id, "running", eta_s=30.0)
    assert store.queue_position(store.require(other_thread.id)) == (0, 30.0)
    assert store.queued_ahead(store.require(other_thread.id)) == 0
