"""Job records in Redis: the state machine's moves, locks with heartbeats, stored results.

The record itself and its states are in `triagebot.jobs.record`. Only one job per
(thread, plan) is active at a time, and every move is checked here, atomically, so two
workers cannot both finish a job. `JobStore` keeps the records: creation (one job per
comment, one active job per thread and plan), reads, checked moves between states,
cancellation, queue positions and the requeue of an abandoned job. It holds two parts
that stand on their own interfaces: `runs` (`store_runs`: what a worker does with a job
it runs, under the job's lock and its fencing token) and `counters` (`store_counters`:
what the service reports). All three name their keys through one `StoreKeys`.

Every key lives under the settings' namespace and has a TTL: nothing grows without bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from triagebot.jobs.record import (
    MOVES,
    OUTCOMES,
    TERMINAL,
    Created,
    JobError,
    JobRecord,
    JobState,
)
from triagebot.jobs.store_counters import CELL_BUCKETS, Beat, ServiceCounters
from triagebot.jobs.store_keys import StoreKeys, connect, connect_async, text_of, utc_day
from triagebot.jobs.store_runs import JobRuns
from triagebot.plan_model import Plan
from triagebot.request_model import ReproRequest
from triagebot.settings import Settings

__all__ = ["CELL_BUCKETS", "Beat", "JobStore", "connect", "connect_async", "text_of", "utc_day"]

# Creation is one script so that a storm of duplicate deliveries makes exactly one job and
# at most one job per (thread, plan) is active, whatever the interleaving.
_CREATE = """
local job_key, active_key, thread_key, state_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local record, id, ttl, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local prefix = ARGV[5]
local existing = redis.call('GET', job_key)
if existing then return {'duplicate', existing} end
local other = redis.call('GET', active_key)
if other and other ~= id then
  local other_record = redis.call('GET', prefix .. other)
  if other_record then
    local state = cjson.decode(other_record)['state']
    if state == 'queued' or state == 'running' then return {'busy', other_record} end
  end
end
redis.call('SET', job_key, record, 'EX', ttl)
redis.call('SET', active_key, id, 'EX', ttl)
redis.call('ZADD', thread_key, now, id)
redis.call('EXPIRE', thread_key, ttl)
redis.call('SADD', state_key, id)
return {'created', record}
"""


class JobStore:
    """Job records in Redis, with the runs (`runs`) and the counters (`counters`) beside."""

    def __init__(self, settings: Settings, client: redis.Redis | None = None) -> None:
        self.keys = StoreKeys(settings, client)
        self.settings = settings
        self.redis = self.keys.redis
        self._create = self.redis.register_script(_CREATE)
        self.runs = JobRuns(self.keys, self.beat)
        self.counters = ServiceCounters(self.keys)

    def beat(self, id_: str) -> None:
        """The record's heartbeat: when its worker last showed it was alive."""
        self.set(id_, heartbeat_at=time.time())

    # --- records -------------------------------------------------------------------------
    def create(self, record: JobRecord, plan: Plan, request: ReproRequest | None) -> Created:
        """Store a new queued job with its plan, unless it exists or its thread is busy."""
        ttl = self.settings.job_ttl_s
        pipe = self.redis.pipeline()
        # The plan and request go first: a worker that sees the record must find them.
        pipe.set(self.keys.job(record.id, "plan"), plan.model_dump_json(), ex=ttl)
        if request is not None:
            pipe.set(self.keys.job(record.id, "request"), request.model_dump_json(), ex=ttl)
        pipe.execute()
        status, raw = self._create(
            keys=[self.keys.job(record.id), self.keys.active(record.repo, record.number,
                                                     record.plan_hash),
                  self.keys.thread(record.repo, record.number), self.keys.k("state", "queued")],
            args=[record.model_dump_json(), record.id, ttl, time.time(),
                  self.keys.k("job", "")])
        return Created(status=text_of(status), job=JobRecord.model_validate_json(raw))

    def get(self, id_: str) -> JobRecord | None:
        raw = self.redis.get(self.keys.job(id_))
        return JobRecord.model_validate_json(raw) if raw is not None else None

    def require(self, id_: str) -> JobRecord:
        record = self.get(id_)
        if record is None:
            raise JobError(f"job {id_} does not exist (or has expired)")
        return record

    def plan(self, id_: str) -> Plan:
        raw = self.redis.get(self.keys.job(id_, "plan"))
        if raw is None:
            raise JobError(f"job {id_} has no stored plan")
        return Plan.model_validate_json(raw)

    def request(self, id_: str) -> ReproRequest | None:
        raw = self.redis.get(self.keys.job(id_, "request"))
        return ReproRequest.model_validate_json(raw) if raw is not None else None

    def update(self, id_: str, change: Callable[[JobRecord], JobRecord | None]) -> JobRecord:
        """Apply `change` atomically (optimistic: retried if someone else wrote meanwhile).

        `change` returns the new record, or None to leave it as it is.
        """
        key = self.keys.job(id_)
        while True:
            with self.redis.pipeline() as pipe:
                try:
                    pipe.watch(key)
                    raw = pipe.get(key)
                    if raw is None:
                        raise JobError(f"job {id_} does not exist (or has expired)")
                    old = JobRecord.model_validate_json(raw)
                    new = change(old.model_copy(deep=True))
                    if new is None:
                        pipe.unwatch()
                        return old
                    new.updated_at = time.time()
                    pipe.multi()
                    pipe.set(key, new.model_dump_json(), keepttl=True)
                    if new.state != old.state:
                        # Live jobs are sets (bounded by what runs); finished ones only
                        # counted, so nothing outlives the records' TTL.
                        pipe.srem(self.keys.k("state", old.state), id_)
                        if new.state in TERMINAL:
                            pipe.incr(self.keys.k("finished", new.state))
                            if new.outcome in OUTCOMES:
                                pipe.incr(self.keys.k("outcome", new.outcome))
                            self._release_active(pipe, new)
                        else:
                            pipe.sadd(self.keys.k("state", new.state), id_)
                    pipe.execute()
                    return new
                except redis.WatchError:
                    continue

    def _release_active(self, pipe: Any, record: JobRecord) -> None:
        # Only our own entry: a newer job on the thread may hold the key by now.
        key = self.keys.active(record.repo, record.number, record.plan_hash)
        current = self.redis.get(key)
        if current is not None and text_of(current) == record.id:
            pipe.delete(key)

    def move(self, id_: str, to: JobState, **fields: Any) -> JobRecord:
        """Change state, checking the move is allowed; other fields are set alongside."""

        def change(record: JobRecord) -> JobRecord:
            if to != record.state and to not in MOVES.get(record.state, frozenset()):
                raise JobError(f"job {id_} cannot go from {record.state} to {to}")
            now = time.time()
            update: dict[str, Any] = {"state": to, **fields}
            if to == "running" and record.started_at is None:
                update["started_at"] = now
            if to in TERMINAL:
                update["finished_at"] = now
            return record.model_copy(update=update)

        return self.update(id_, change)

    def set(self, id_: str, **fields: Any) -> JobRecord:
        return self.update(id_, lambda r: r.model_copy(update=fields))

    def request_cancel(self, id_: str, by: str, reason: str | None = None) -> JobRecord:
        """Queued jobs are cancelled now; running ones when their worker next looks."""

        def change(record: JobRecord) -> JobRecord | None:
            if record.terminal:
                return None
            update: dict[str, Any] = {"cancel_requested": True, "cancelled_by": by,
                                      "cancel_reason": reason}
            if record.state == "queued":
                update.update(state="cancelled", finished_at=time.time())
            return record.model_copy(update=update)

        return self.update(id_, change)

    def thread_jobs(self, repo: str, number: int, limit: int = 20) -> list[JobRecord]:
        """The thread's jobs, newest first."""
        ids = self.redis.zrevrange(self.keys.thread(repo, number), 0, limit - 1)
        records = [self.get(text_of(i)) for i in ids]
        return [r for r in records if r is not None]

    def queued_ahead(self, record: JobRecord) -> int:
        """Jobs for the same GPU kind created before this one and not started yet."""
        return self.queue_position(record)[0]

    def queue_position(self, record: JobRecord) -> tuple[int, float]:
        """Jobs ahead of this one for its GPU kind, and the GPU seconds they still need.

        The seconds are the queued jobs' estimates plus the running ones' remaining time;
        with several workers per kind the wait is shorter, so this is an upper bound.
        """
        ahead, seconds = 0, 0.0
        for state in ("queued", "running"):
            ids = [text_of(i) for i in self.redis.smembers(self.keys.k("state", state))]
            for other in filter(None, (self.get(i) for i in ids)):
                if other.gpu_kind != record.gpu_kind or other.id == record.id:
                    continue
                if state == "running":
                    seconds += other.eta_s if other.eta_s is not None else other.estimated_s
                elif other.created_at < record.created_at:
                    ahead += 1
                    seconds += other.estimated_s
        return ahead, seconds

    def requeue_if_abandoned(self, id_: str, stale_s: float) -> JobRecord | None:
        """Put a running job back in the queue when its worker is gone.

        Gone means: nobody holds the job's lock (it expires `lock_ttl_s` after the last
        heartbeat) and the record's heartbeat is older than `stale_s`. Returns the requeued
        record, or None when the job is alive, finished or already requeued by someone else.
        """
        if self.redis.exists(self.keys.job(id_, "lock")):
            return None
        moved: list[JobRecord] = []

        def change(record: JobRecord) -> JobRecord | None:
            last = record.heartbeat_at or record.started_at or record.updated_at
            if record.state != "running" or time.time() - last < stale_s:
                return None
            new = record.model_copy(update={
                "state": "queued", "worker": None, "enqueued": False, "reaped": record.reaped + 1,
                "current": "requeued: its worker stopped sending heartbeats",
                # No estimate holds now, and its comment is due an edit at once.
                "eta_s": None, "progress_posted_at": None})
            moved.append(new)
            return new

        self.update(id_, change)
        return moved[0] if moved else None

    def ids_in_state(self, state: JobState) -> list[str]:
        return sorted(text_of(i) for i in self.redis.smembers(self.keys.k("state", state)))
