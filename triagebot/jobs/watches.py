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
from triagebot.jobs.optimistic import update_record
from triagebot.jobs.store_keys import text_of
from triagebot.watch.models import Direction, WatchRow

Status = Literal["active", "paused", "stopped"]


class WatchRecord(Frozen):
    """One watched thread. It copies what its runs need from the report's job (whose
    records expire): the parsed report, the repro command's words, the verdict rule."""

    repo: str
    number: int
    installation_id: int | None = None
    private: bool = False
    engine: str
    runner: str
    reporter: str = ""
    started_by: str = ""
    # The job whose report decided the thread; its comment gains the Watch table.
    job_id: str = ""
    comment_id: int | None = None
    request: str = ""  # ReproRequest JSON
    words: tuple[str, ...] = ()  # the repro command's key=value words
    margin: float = 0.03
    comparison: str = ""
    direction: Direction = "below"
    last: str | None = None  # the last release measured
    status: Status = "active"
    rows: tuple[WatchRow, ...] = ()
    attempts: dict[str, int] = Field(default_factory=dict)  # release -> failed runs
    # Why the next release has not run yet (a limit of the repo's), shown on the thread.
    waiting: str = ""
    started_at: float = 0.0

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
        return [rec for rec in self._all(engine) if rec.status == "active"]

    def set_status(self, repo: str, number: int, status: Status) -> WatchRecord | None:
        """Stop (unwatch), pause (the issue closed) or resume (reopened) a watch."""
        return self._update(f"{repo}#{number}", lambda rec: rec.model_copy(
            update={"status": status}))

    def claim(self, thread: str, release: str) -> bool:
        """True for exactly one caller per (thread, release) until the claim is given back."""
        return bool(self.r.set(f"{self.ns}:watch-claim:{thread}:{release}", 1, nx=True))

    def unclaim(self, thread: str, release: str) -> None:
        self.r.delete(f"{self.ns}:watch-claim:{thread}:{release}")

    def give_back(self, thread: str, release: str, error: str) -> int:
        """A failed run: the claim returns (the next tick retries) and the attempt counts.
        Returns the attempts so far."""
        rec = self._update(thread, lambda rec: rec.model_copy(update={"attempts": {
            **rec.attempts, release: rec.attempts.get(release, 0) + 1}}))
        self.unclaim(thread, release)
        return rec.attempts.get(release, 0) if rec else 0

    def put_row(self, thread: str, row: WatchRow, *, ran: bool) -> WatchRecord | None:
        """The release's row, replacing an earlier one of the same release; the last
        release measured moves on only where the release `ran`."""
        def write(rec: WatchRecord) -> WatchRecord:
            rows = [r for r in rec.rows if r.release != row.release] + [row]
            return rec.model_copy(update={"rows": tuple(rows),
                                          "last": row.release if ran else rec.last})
        return self._update(thread, write)

    def change(self, thread: str, **fields: object) -> WatchRecord | None:
        return self._update(thread, lambda rec: rec.model_copy(update=fields))

    def active_in(self, repo: str) -> int:
        """Watched threads of a repo that are not stopped (paused ones hold their place)."""
        return sum(1 for engine in self._engines() for rec in self._all(engine)
                   if rec.repo.lower() == repo.lower() and rec.status != "stopped")

    def add_minutes(self, repo: str, day: str, minutes: float) -> float:
        key = f"{self.ns}:watch-minutes:{repo.lower()}:{day}"
        total = float(self.r.incrbyfloat(key, minutes))
        self.r.expire(key, 3 * 24 * 3600)
        return total

    def minutes(self, repo: str, day: str) -> float:
        raw = self.r.get(f"{self.ns}:watch-minutes:{repo.lower()}:{day}")
        return float(raw) if raw else 0.0

    def subscribe(self, run_id: str, thread: str) -> None:
        """`thread` hears from run `run_id` when it ends."""
        self.r.sadd(f"{self.ns}:watch-subscribers:{run_id}", thread)

    def subscribers(self, run_id: str) -> list[str]:
        return sorted(text_of(m) for m in self.r.smembers(
            f"{self.ns}:watch-subscribers:{run_id}"))

    def feed(self, package: str) -> str | None:
        """The last good answer of a package's feed (JSON the poller wrote)."""
        raw = self.r.get(f"{self.ns}:watch-feed:{package}")
        return text_of(raw) if raw else None

    def save_feed(self, package: str, state_json: str) -> None:
        self.r.set(f"{self.ns}:watch-feed:{package}", state_json)

    def feed_error(self, package: str, kind: str) -> None:
        """Count an unreachable or malformed feed answer, for /metrics."""
        self.r.hincrby(f"{self.ns}:watch-feed-errors", f"{package}|{kind}", 1)

    def feed_errors(self) -> dict[tuple[str, str], int]:
        raw = self.r.hgetall(f"{self.ns}:watch-feed-errors")
        out: dict[tuple[str, str], int] = {}
        for k, v in raw.items():
            package, _, kind = text_of(k).partition("|")
            out[(package, kind)] = int(v)
        return out

    def poll_due(self, every_s: float) -> bool:
        """True for one caller per `every_s` seconds, however many beats tick."""
        return bool(self.r.set(f"{self.ns}:watch-poll-gate", 1, nx=True,
                               px=max(1, int(every_s * 1000))))

    def engines(self) -> list[str]:
        return self._engines()

    def _engines(self) -> list[str]:
        prefix = f"{self.ns}:watches:"
        return sorted(text_of(k)[len(prefix):] for k in self.r.scan_iter(match=prefix + "*"))

    def _all(self, engine: str) -> list[WatchRecord]:
        out = []
        for thread in sorted(text_of(m) for m in self.r.smembers(self._engine(engine))):
            raw = self.r.get(self._key(thread))
            if raw:
                out.append(WatchRecord.model_validate_json(raw))
        return out

    def shared_run(self, plan_hash: str, release: str, runner: str, run_id: str) -> str:
        """The run id of (plan, release, runner kind): `run_id` if this call made it."""
        key = f"{self.ns}:watch-run:{plan_hash}:{release}:{runner}"
        self.r.set(key, run_id, nx=True)
        got = self.r.get(key)
        return text_of(got) if got else run_id

    def _update(self, thread: str, change: Callable[[WatchRecord], WatchRecord]
                ) -> WatchRecord | None:
        """Read, change, write under WATCH: a concurrent writer makes this one retry."""
        return update_record(self.r, self._key(thread), WatchRecord, change)
