"""Watches in a real Redis: a release is processed once per thread, however many ticks
race for it; rows are written by release; a failed run is given back and counted."""

from __future__ import annotations

import threading

import redis

from triagebot.jobs.watches import WatchRecord, WatchStore
from triagebot.watch.models import WatchRow

REPO = "vllm-project/vllm"


def row(release: str, state: str = "reproduced") -> WatchRow:
    return WatchRow(release=release, state=state, reason="-")  # type: ignore[arg-type]


def store(client: redis.Redis, namespace: str) -> WatchStore:
    s = WatchStore(client, namespace)
    assert s.start(WatchRecord(repo=REPO, number=37551, engine="vllm", runner="cpu",
                               last="0.25.1"))
    return s


def test_one_of_many_racing_ticks_claims_a_release(redis_client: redis.Redis,
                                                   namespace: str) -> None:
    s = store(redis_client, namespace)
    wins: list[bool] = []
    gate = threading.Barrier(8)

    def tick() -> None:
        gate.wait()
        wins.append(WatchStore(redis.Redis.from_url("redis://127.0.0.1:6379/0"),
                               namespace).claim(f"{REPO}#37551", "0.32.0"))

    threads = [threading.Thread(target=tick) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]
    assert s.claim(f"{REPO}#37551", "0.33.0")  # another release is its own claim


def test_a_row_is_written_once_per_release_and_moves_the_last_release(
        redis_client: redis.Redis, namespace: str) -> None:
    s = store(redis_client, namespace)
    thread = f"{REPO}#37551"
    s.put_row(thread, row("0.32.0"), ran=True)
    rec = s.put_row(thread, row("0.32.0", "worse"), ran=True)  # a worker redoing the row
    assert rec is not None and [(r.release, r.state) for r in rec.rows] == [("0.32.0", "worse")]
    assert rec.last == "0.32.0"
    rec = s.put_row(thread, row("0.33.0", "broken"), ran=False)
    assert rec is not None and rec.last == "0.32.0"  # a broken release is not measured against


def test_a_failed_run_is_given_back_counted_and_claimable_again(
        redis_client: redis.Redis, namespace: str) -> None:
    s = store(redis_client, namespace)
    thread = f"{REPO}#37551"
    assert s.claim(thread, "0.32.0")
    assert s.give_back(thread, "0.32.0", "worker lost") == 1
    assert s.claim(thread, "0.32.0")
    assert s.give_back(thread, "0.32.0", "worker lost") == 2
    rec = s.get(REPO, 37551)
    assert rec is not None and rec.attempts == {"0.32.0": 2}


def test_closing_pauses_reopening_resumes_and_one_watch_per_thread(
        redis_client: redis.Redis, namespace: str) -> None:
    s = store(redis_client, namespace)
    assert not s.start(WatchRecord(repo=REPO, number=37551, engine="vllm", runner="cpu"))
    assert [w.number for w in s.watching("vllm")] == [37551]
    s.set_status(REPO, 37551, "paused")
    assert s.watching("vllm") == []
    s.set_status(REPO, 37551, "active")
    assert [w.number for w in s.watching("vllm")] == [37551]
    s.set_status(REPO, 37551, "stopped")
    assert s.start(WatchRecord(repo=REPO, number=37551, engine="vllm", runner="cpu"))


def test_one_run_serves_every_thread_of_a_plan_release_and_kind(
        redis_client: redis.Redis, namespace: str) -> None:
    s = WatchStore(redis_client, namespace)
    assert s.shared_run("abc", "0.32.0", "cpu", "run-1") == "run-1"
    assert s.shared_run("abc", "0.32.0", "cpu", "run-2") == "run-1"
    assert s.shared_run("abc", "0.32.0", "h100", "run-3") == "run-3"
