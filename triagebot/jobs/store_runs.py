"""Running a job in Redis: claims, the job lock with its fencing token and heartbeat, and
the results and report written under it."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from triagebot.jobs.record import JobError
from triagebot.jobs.store_keys import StoreKeys, text_of
from triagebot.run_result import RunResult

_REFRESH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_PUT_IF_OWNER = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""


def slot_order(field: str) -> tuple[str, int]:
    """A stored run's place: its cell, then its round (`<cell>-r<round>`)."""
    cell, _, round_number = field.partition("-r")
    return cell, int(round_number) if round_number.isdigit() else 0


class JobRuns:
    """What a worker does with a job it runs: claims, the lock, results and the report."""

    def __init__(self, keys: StoreKeys, beat: Callable[[str], object]) -> None:
        self.keys = keys
        self.settings = keys.settings
        self.redis = keys.redis
        self.beat = beat  # records the heartbeat on the job's record
        self._refresh = self.redis.register_script(_REFRESH)
        self._release = self.redis.register_script(_RELEASE)
        self._put_if_owner = self.redis.register_script(_PUT_IF_OWNER)

    # --- short claims: one actor does a step that must not be done twice ---------------------
    @contextmanager
    def claimed(self, *parts: str, ttl_s: int = 120) -> Iterator[bool]:
        """Yields True to the one caller that holds `parts` now, False to everyone else.

        The claim is released on exit (only if still ours); a holder that dies leaves it to
        expire after `ttl_s`, so a retry or redelivery can finish the step.
        """
        key = self.keys.k("claim", *parts)
        token = uuid.uuid4().hex
        ours = bool(self.redis.set(key, token, nx=True, ex=ttl_s))
        try:
            yield ours
        finally:
            if ours:
                self._release(keys=[key], args=[token])

    # --- the lock a worker holds while it runs a job ----------------------------------------
    def acquire(self, id_: str) -> str | None:
        """A fencing token when the job is free, None when a live worker holds it."""
        fence = self.redis.incr(self.keys.job(id_, "fence"))
        self.redis.expire(self.keys.job(id_, "fence"), self.settings.job_ttl_s)
        token = f"{fence}:{uuid.uuid4().hex}"
        ttl_ms = int(self.settings.lock_ttl_s * 1000)
        if self.redis.set(self.keys.job(id_, "lock"), token, nx=True, px=ttl_ms):
            return token
        return None

    def refresh(self, id_: str, token: str) -> bool:
        ttl_ms = int(self.settings.lock_ttl_s * 1000)
        return bool(self._refresh(keys=[self.keys.job(id_, "lock")], args=[token, ttl_ms]))

    def release(self, id_: str, token: str) -> None:
        self._release(keys=[self.keys.job(id_, "lock")], args=[token])

    def lock_ttl(self, id_: str) -> float:
        """Seconds until the current lock expires (0 when nobody holds it)."""
        ms = self.redis.pttl(self.keys.job(id_, "lock"))
        return max(0.0, ms / 1000) if ms and ms > 0 else 0.0

    @contextmanager
    def heartbeat(self, id_: str, token: str) -> Iterator[threading.Event]:
        """Keep the lock alive from a thread; the event is set if the lock is lost."""
        lost = threading.Event()
        done = threading.Event()

        def keep_alive() -> None:
            while not done.wait(self.settings.heartbeat_s):
                try:
                    if not self.refresh(id_, token):
                        lost.set()
                        return
                    self.beat(id_)
                except (redis.RedisError, JobError):
                    # A blip: the lock outlives a few missed beats; give up only when it is
                    # really gone, which the next successful refresh reports.
                    continue

        thread = threading.Thread(target=keep_alive, name=f"heartbeat-{id_}", daemon=True)
        thread.start()
        try:
            yield lost
        finally:
            done.set()
            thread.join(timeout=5)

    # --- results, findings and the report ---------------------------------------------------
    def put_result(self, id_: str, token: str, cell_id: str, round_number: int,
                   result: RunResult) -> bool:
        """Keep a finished run, only while `token` still owns the job."""
        return bool(self._put_if_owner(
            keys=[self.keys.job(id_, "lock"), self.keys.job(id_, "results")],
            args=[token, f"{cell_id}-r{round_number}", result.model_dump_json(),
                  self.settings.job_ttl_s]))

    def get_result(self, id_: str, cell_id: str, round_number: int) -> RunResult | None:
        raw = self.redis.hget(self.keys.job(id_, "results"), f"{cell_id}-r{round_number}")
        return RunResult.model_validate_json(raw) if raw is not None else None

    def results(self, id_: str) -> dict[str, list[RunResult]]:
        out: dict[str, list[RunResult]] = {}
        stored = self.redis.hgetall(self.keys.job(id_, "results"))
        for field in sorted(stored, key=lambda f: slot_order(text_of(f))):
            cell_id = text_of(field).split("-r")[0]
            out.setdefault(cell_id, []).append(RunResult.model_validate_json(stored[field]))
        return out

    def save_report(self, id_: str, findings_json: str, report: str) -> None:
        ttl = self.settings.job_ttl_s
        pipe = self.redis.pipeline()
        pipe.set(self.keys.job(id_, "findings"), findings_json, ex=ttl)
        pipe.set(self.keys.job(id_, "report"), report, ex=ttl)
        pipe.execute()

    def report(self, id_: str) -> str | None:
        raw = self.redis.get(self.keys.job(id_, "report"))
        return text_of(raw) if raw is not None else None

    def findings(self, id_: str) -> dict[str, Any] | None:
        raw = self.redis.get(self.keys.job(id_, "findings"))
        return json.loads(raw) if raw is not None else None
