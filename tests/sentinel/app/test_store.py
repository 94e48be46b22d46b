"""The sentinel's Redis state (jobs/sentinels.py) on a real Redis: tracking records
written once, the issue they name, counts that a repeat does not move."""

from __future__ import annotations

import threading

import redis

from triagebot.jobs.sentinels import SentinelStore, TrackRecord, false_positive_rate
from triagebot.report.sentinel import TrackRow

ROW = TrackRow(release="0.32.0", previous="0.29.0", reason="stopped paying")


def test_one_tracking_record_per_regression_under_concurrent_writers(
        redis_client: redis.Redis, namespace: str) -> None:
    stores = [SentinelStore(redis.Redis.from_url("redis://127.0.0.1:6379/0"), namespace)
              for _ in range(8)]
    won: list[bool] = []
    start = threading.Barrier(len(stores))

    def write(store: SentinelStore) -> None:
        start.wait()
        won.append(store.open_track(TrackRecord(repo="o/r", case_id="c", kind="crashed",
                                                rows=(ROW,), flagged=("0.32.0",))))

    threads = [threading.Thread(target=write, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == [False] * 7 + [True]
    store = stores[0]
    assert store.track_of_issue("o/r", 7) is None
    rec = store.track("o/r", "c", "crashed")
    assert rec is not None and rec.number is None
    store.name_issue(rec, 7)
    found = store.track_of_issue("O/R", 7)
    assert found is not None and (found.number, found.case_id, found.kind) == (7, "c", "crashed")
    assert store.track("o/r", "c", "stopped_paying") is None


def test_flags_and_marks_count_once_and_give_the_rate(redis_client: redis.Redis,
                                                      namespace: str) -> None:
    store = SentinelStore(redis_client, namespace)
    assert store.counts() == (0, 0) and false_positive_rate(0, 0) is None
    assert store.count_flag("o/r", "c", "crashed", "0.32.0")
    assert not store.count_flag("O/r", "c", "crashed", "0.32.0")
    store.count_flag("o/r", "c", "crashed", "0.33.0")
    store.count_flag("o/r", "d", "refused", "0.33.0")
    assert store.count_not_regression("o/r", "c", "crashed", ("0.32.0", "0.33.0")) == 2
    assert store.count_not_regression("o/r", "c", "crashed", ("0.32.0", "0.33.0")) == 0
    assert store.count_not_regression("o/r", "c", "crashed", ()) == 0
    assert store.counts() == (3, 2)
    assert false_positive_rate(*store.counts()) == 2 / 3


def test_enrolment_baseline_and_the_runs_cases(redis_client: redis.Redis,
                                               namespace: str) -> None:
    store = SentinelStore(redis_client, namespace)
    store.enrol("o/r", 5)
    store.enrol("o/s", None)
    assert store.repos() == {"o/r": 5, "o/s": None}
    store.drop("o/s")
    assert store.repos() == {"o/r": 5}
    assert store.last("o/r", "vllm", "cpu") is None
    assert store.baseline("o/r", "vllm", "cpu", "0.29.0")
    assert not store.baseline("o/r", "vllm", "cpu", "0.32.0")
    store.set_last("o/r", "vllm", "cpu", "0.32.0")
    assert store.last("O/r", "vllm", "cpu") == "0.32.0"
    store.put_case("job1", "c", '{"a": 1}', ttl_s=60)
    store.put_case("job1", "c", '{"a": 2}', ttl_s=60)
    assert store.cases("job1") == {"c": '{"a": 2}'} and store.cases("job2") == {}
    assert store.poll_due(60) and not store.poll_due(60)


def test_runner_minutes_add_up_per_repo_and_day(redis_client: redis.Redis,
                                               namespace: str) -> None:
    store = SentinelStore(redis_client, namespace)
    assert store.minutes("o/r", "20261128") == 0.0
    store.add_minutes("o/r", "20261128", 1.5)
    assert store.add_minutes("O/R", "20261128", 2.0) == 3.5
    assert store.minutes("o/r", "20261129") == 0.0
