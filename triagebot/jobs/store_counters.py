"""What the service reports from the job store: each repo's GPU time today, the workers'
heartbeats and the queues they serve, cell durations, queue depths, and jobs by state and
by outcome (`/metrics`, `/readyz`, the budget a decision is given)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from triagebot.jobs.record import OUTCOMES, STATES, TERMINAL
from triagebot.jobs.store_keys import StoreKeys, text_of, utc_day


class Beat(NamedTuple):
    """A worker's last heartbeat: how old, the queues it consumes, what stops it."""

    age: float
    queues: list[str]
    problem: str | None = None


def _read_beat(raw: Any, now: float) -> Beat | None:
    """A heartbeat as stored; None for a missing or unreadable one."""
    try:
        beat = json.loads(raw)
        problem = beat.get("problem")
        return Beat(max(0.0, now - float(beat["at"])), [str(q) for q in beat["queues"]],
                    str(problem) if problem else None)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


# Buckets of the cell-duration histogram, in seconds.
CELL_BUCKETS: tuple[float, ...] = (5, 15, 30, 60, 120, 300, 600, 1200, 2400, 3600)


class ServiceCounters:
    """The counters and heartbeats the service reports, in Redis."""

    def __init__(self, keys: StoreKeys) -> None:
        self.keys = keys
        self.settings = keys.settings
        self.redis = keys.redis

    # --- budgets ---------------------------------------------------------------------------
    def add_gpu_seconds(self, repo: str, seconds: float, day: str | None = None) -> float:
        """Add to the repo's GPU time today (UTC); returns the day's total in seconds."""
        key = self.keys.k("gpu-seconds", repo.lower(), day or utc_day())
        total = float(self.redis.incrbyfloat(key, seconds))
        self.redis.expire(key, 3 * 24 * 3600)
        return total

    def gpu_seconds_today(self, repo: str, day: str | None = None) -> float:
        raw = self.redis.get(self.keys.k("gpu-seconds", repo.lower(), day or utc_day()))
        return float(raw) if raw is not None else 0.0

    # --- what /metrics and /readyz read ------------------------------------------------------
    def worker_alive(self, name: str, ttl_s: int, queues: Sequence[str] = (),
                     problem: str | None = None) -> None:
        """A worker's heartbeat, with the queues it consumes (so readiness is per kind)
        and what keeps it from doing its work, if anything (a triage worker that cannot
        act as the GitHub App)."""
        value = json.dumps({"at": time.time(), "queues": list(queues), "problem": problem})
        self.redis.set(self.keys.k("worker", name), value, ex=ttl_s)

    def worker_beats(self) -> dict[str, Beat]:
        """Live workers: the age of their last heartbeat, their queues and problem."""
        now = time.time()
        out: dict[str, Beat] = {}
        for key in self.redis.scan_iter(match=self.keys.k("worker", "*"), count=200):
            beat = _read_beat(self.redis.get(key), now)
            if beat is not None:
                out[text_of(key).rsplit(":", 1)[-1]] = beat
        return out

    def workers(self) -> dict[str, float]:
        """Live workers and the age of their last heartbeat, in seconds."""
        return {name: beat.age for name, beat in self.worker_beats().items()}

    def live_queues(self, max_age_s: float) -> frozenset[str]:
        """Queues some worker with a heartbeat younger than `max_age_s` consumes."""
        return frozenset(q for beat in self.worker_beats().values() if beat.age <= max_age_s
                         for q in beat.queues)

    def live_runner_kinds(self, max_age_s: float) -> frozenset[str]:
        """Runner kinds (`gpu-<kind>` queues) that a live worker serves."""
        return frozenset(q.removeprefix("gpu-") for q in self.live_queues(max_age_s)
                         if q.startswith("gpu-"))

    def observe_cell(self, seconds: float) -> None:
        key = self.keys.k("metrics", "cell-seconds")
        bucket = next((str(b) for b in CELL_BUCKETS if seconds <= b), "+Inf")
        pipe = self.redis.pipeline()
        pipe.hincrby(key, bucket, 1)
        pipe.hincrbyfloat(key, "sum", seconds)
        pipe.hincrby(key, "count", 1)
        pipe.execute()

    def cell_histogram(self) -> tuple[dict[str, int], float, int]:
        """Per-bucket (not cumulative) counts, the sum and the count of cell durations."""
        raw = {text_of(k): text_of(v) for k, v in
               self.redis.hgetall(self.keys.k("metrics", "cell-seconds")).items()}
        buckets = {k: int(v) for k, v in raw.items() if k not in ("sum", "count")}
        return buckets, float(raw.get("sum", 0)), int(raw.get("count", 0))

    def queue_depth(self, queue: str) -> int:
        # Kombu's Redis transport keeps a queue as a list named after it, under its prefix.
        return int(self.redis.llen(self.settings.celery_key_prefix + queue))

    def count_by_state(self) -> dict[str, int]:
        """Live jobs by state, and jobs finished in each terminal state so far."""
        pipe = self.redis.pipeline()
        for state in STATES:
            if state in TERMINAL:
                pipe.get(self.keys.k("finished", state))
            else:
                pipe.scard(self.keys.k("state", state))
        return {state: int(value or 0)
                for state, value in zip(STATES, pipe.execute(), strict=True)}

    def count_by_outcome(self) -> dict[str, int]:
        """Finished jobs so far by the outcome of their report."""
        values = self.redis.mget([self.keys.k("outcome", o) for o in OUTCOMES])
        return {o: int(v or 0) for o, v in zip(OUTCOMES, values, strict=True)}
