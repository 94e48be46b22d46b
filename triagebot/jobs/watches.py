"""Watches in Redis, beside the jobs: what each watched thread follows and its rows.

Everything a watch knows is in Redis (AOF persistence, as the jobs), so a worker or Redis
restart loses nothing. Exactly once, however often the feed is polled and however many
beat schedulers run by mistake: a release is *claimed* per thread with `SET NX` before
its run is queued, and a row is written by release (a second write of one release
replaces it, never adds a row). A failed run gives its claim back and counts the
attempt, so the next tick retries it and the table shows the failure meanwhile. One run
per (plan, release, runner kind) serves every thread that needs it: the first thread to
ask creates the run id, the others get the same one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import redis
from pydantic import Field

from triagebot.frozen import Frozen
from triagebot.watch.models import Direction, WatchRow

Status = Literal["active", "paused", "stopped"]


class WatchRecord(Frozen):
    repo: str
    number: int
    engine: str
    runner: str
    reporter: str = ""
    comparison: str = ""
    direction: Direction = "below"
    plan_hash: str = ""
    last: str | None = None  # the last release measured
    status: Status = "active"
    rows: tuple[WatchRow, ...] = ()
    attempts: dict[str, int] = Field(default_factory=dict)  # release -> failed runs

    @property
    def thread(self) -> str:
        return f"{self.repo}#{self.number}"


class WatchStore:
    def __init__(self, client: redis.Redis, namespace: str = "tb") -> None:
        self.r = client
        self.ns = namespace

    def _key(self, thread: str) -> str:
        return f"{self.ns}:watch:{thread}"

    def _engine(self, engine: str) -> str:
        return f"{self.ns}:watches:{engine}"

    def start(self, record: WatchRecord) -> bool:
        """Record a new watch; False when the thread already has one that is not stopped."""
        key = self._key(record.thread)
        old = self.get(record.repo, record.number)
        if old is not None and old.status != "stopped":
            return False
        pipe = self.r.pipeline()
        pipe.set(key, record.model_dump_json())
        pipe.sadd(self._engine(record.engine), record.thread)
        pipe.execute()
        return True

    def get(self, repo: str, number: int) -> WatchRecord | None:
        raw = self.r.get(self._key(f"{repo}#{number}"))
        return WatchRecord.model_validate_json(raw) if raw else None

    def watching(self, engine: str) -> list[WatchRecord]:
        """The active watches of an engine's threads (paused and stopped ones left out)."""
        out = []
        for thread in sorted(m.decode() for m in self.r.smembers(self._engine(engine))):
            raw = self.r.get(self._key(thread))
            if raw:
                rec = WatchRecord.model_validate_json(raw)
                if rec.status == "active":
                    out.append(rec)
        return out

    def set_status(self, repo: str, number: int, status: Status) -> WatchRecord | None:
        """Stop (unwatch), pause (the issue closed) or resume (reopened) a watch."""
        return self._update(f"{repo}#{number}", lambda rec: rec.model_copy(
            update={"status": status}))

    def claim(self, thread: str, release: str) -> bool:
        """True for exactly one caller per (thread, release) until the claim is given back."""
        return bool(self.r.set(f"{self.ns}:watch-claim:{thread}:{release}", 1, nx=True))

    def give_back(self, thread: str, release: str, error: str) -> int:
        """A failed run: the claim returns (the next tick retries) and the attempt counts.
        Returns the attempts so far."""
        rec = self._update(thread, lambda rec: rec.model_copy(update={"attempts": {
            **rec.attempts, release: rec.attempts.get(release, 0) + 1}}))
        self.r.delete(f"{self.ns}:watch-claim:{thread}:{release}")
        return rec.attempts.get(release, 0) if rec else 0

    def put_row(self, thread: str, row: WatchRow) -> WatchRecord | None:
        """The release's row, replacing an earlier one of the same release; the last
        release measured moves on only when it ran."""
        def write(rec: WatchRecord) -> WatchRecord:
            rows = [r for r in rec.rows if r.release != row.release] + [row]
            ran = row.state not in ("broken", "config_invalid")
            return rec.model_copy(update={"rows": tuple(rows),
                                          "last": row.release if ran else rec.last})
        return self._update(thread, write)

    def shared_run(self, plan_hash: str, release: str, runner: str, run_id: str) -> str:
        """The run id of (plan, release, runner kind): `run_id` if this call made it."""
        key = f"{self.ns}:watch-run:{plan_hash}:{release}:{runner}"
        self.r.set(key, run_id, nx=True)
        got = self.r.get(key)
        return got.decode() if got else run_id

    def _update(self, thread: str, change: Callable[[WatchRecord], WatchRecord]
                ) -> WatchRecord | None:
        """Read, change, write under WATCH: a concurrent writer makes this one retry."""
        key = self._key(thread)
        while True:
            with self.r.pipeline() as pipe:
                try:
                    pipe.watch(key)
                    raw = pipe.get(key)
                    if not raw:
                        return None
                    new = change(WatchRecord.model_validate_json(raw))
                    pipe.multi()
                    pipe.set(key, new.model_dump_json())
                    pipe.execute()
                    return new
                except redis.WatchError:
                    continue
