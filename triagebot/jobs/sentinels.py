"""The sentinel's App state in Redis, beside the jobs: enrolled repositories, the release
each (repo, engine, runner kind) was last queued at, the case figures a run has finished,
and one tracking record per regression (case and flag kind) with its issue.

Exactly once, however often beat ticks and however many triage workers run:
- a release's run is one job whose id is derived from (repo, engine, runner kind,
  release): the job store creates it once (`SET NX` in its script), and a second
  queueing finds the same job;
- a case's figures are stored by (job, case): a worker killed mid-run resumes with the
  cases it had finished, and never measures one twice;
- a tracking record is written with `SET NX` before its issue is opened; the record
  names the issue once it exists (a worker that died in between leaves a record with no
  number, which the next publish completes by looking the issue up by its marker);
- flags and `not-a-regression` marks are members of sets (repo, case, kind, release),
  so a repeated publish or a repeated command counts nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable

import redis
from pydantic import Field

from triagebot.frozen import Frozen
from triagebot.jobs.optimistic import update_record
from triagebot.jobs.store_keys import text_of
from triagebot.report.sentinel import TrackRow
from triagebot.sentinel.models import FlagKind


class TrackRecord(Frozen):
    """One regression: a case and a flag kind in one repository, and its tracking issue."""

    repo: str  # where the issue is (the config's tracking_repo, else `source`)
    source: str = ""  # the repository whose `[sentinel]` config ran the case
    case_id: str
    kind: FlagKind
    installation_id: int | None = None
    number: int | None = None  # the tracking issue, once opened
    rows: tuple[TrackRow, ...] = ()
    not_regression: tuple[str, ...] = ()  # who marked it so
    # The releases that flagged it (the rows hold them too; kept for the count).
    flagged: tuple[str, ...] = Field(default_factory=tuple)

    @property
    def marker(self) -> str:
        return f"sentinel-issue={self.case_id}:{self.kind}"


class SentinelStore:
    def __init__(self, client: redis.Redis, namespace: str = "tb") -> None:
        self.r = client
        self.ns = namespace

    def _k(self, *parts: str) -> str:
        return ":".join([self.ns, *parts])

    # --- enrolment and the feed ------------------------------------------------------
    def enrol(self, repo: str, installation_id: int | None) -> None:
        """A repo whose config has a `[sentinel]` section (seen on any of its events)."""
        self.r.hset(self._k("sentinel-repos"), repo, str(installation_id or 0))

    def drop(self, repo: str) -> None:
        self.r.hdel(self._k("sentinel-repos"), repo)

    def repos(self) -> dict[str, int | None]:
        raw = self.r.hgetall(self._k("sentinel-repos"))
        return {text_of(k): (int(v) or None) for k, v in raw.items()}

    def last(self, repo: str, engine: str, runner: str) -> str | None:
        """The release last queued (the next one is measured against it)."""
        raw = self.r.get(self._k("sentinel-last", repo.lower(), engine, runner))
        return text_of(raw) if raw else None

    def set_last(self, repo: str, engine: str, runner: str, release: str) -> None:
        self.r.set(self._k("sentinel-last", repo.lower(), engine, runner), release)

    def baseline(self, repo: str, engine: str, runner: str, release: str) -> bool:
        """The first release seen is the baseline, never measured: True if this call set
        it."""
        return bool(self.r.set(self._k("sentinel-last", repo.lower(), engine, runner),
                               release, nx=True))

    def poll_due(self, every_s: float) -> bool:
        """True for one caller per `every_s` seconds, however many beats tick."""
        return bool(self.r.set(self._k("sentinel-poll-gate"), 1, nx=True,
                               px=max(1, int(every_s * 1000))))

    def add_minutes(self, repo: str, day: str, minutes: float) -> float:
        key = self._k("sentinel-minutes", repo.lower(), day)
        total = float(self.r.incrbyfloat(key, minutes))
        self.r.expire(key, 3 * 24 * 3600)
        return total

    def minutes(self, repo: str, day: str) -> float:
        raw = self.r.get(self._k("sentinel-minutes", repo.lower(), day))
        return float(raw) if raw else 0.0

    # --- a run's cases ---------------------------------------------------------------
    def put_case(self, job_id: str, case_id: str, figures_json: str, ttl_s: int) -> None:
        key = self._k("sentinel-case", job_id)
        self.r.hset(key, case_id, figures_json)
        self.r.expire(key, ttl_s)

    def cases(self, job_id: str) -> dict[str, str]:
        """The figures of the cases a run finished, by case id (JSON)."""
        raw = self.r.hgetall(self._k("sentinel-case", job_id))
        return {text_of(k): text_of(v) for k, v in raw.items()}

    # --- tracking records ------------------------------------------------------------
    def _track(self, repo: str, case_id: str, kind: str) -> str:
        return self._k("sentinel-track", repo.lower(), case_id, kind)

    def open_track(self, record: TrackRecord) -> bool:
        """Write the record if the regression has none; True if this call wrote it (the
        one caller that opens its issue)."""
        return bool(self.r.set(self._track(record.repo, record.case_id, record.kind),
                               record.model_dump_json(), nx=True))

    def track(self, repo: str, case_id: str, kind: str) -> TrackRecord | None:
        raw = self.r.get(self._track(repo, case_id, kind))
        return TrackRecord.model_validate_json(raw) if raw else None

    def update_track(self, repo: str, case_id: str, kind: str,
                     change: Callable[[TrackRecord], TrackRecord]) -> TrackRecord | None:
        """Read, change, write under WATCH: a concurrent writer makes this one retry."""
        return update_record(self.r, self._track(repo, case_id, kind), TrackRecord, change)

    def name_issue(self, record: TrackRecord, number: int) -> None:
        """The tracking issue exists: its thread finds the record (for the command)."""
        self.update_track(record.repo, record.case_id, record.kind,
                          lambda rec: rec.model_copy(update={"number": number}))
        self.r.set(self._k("sentinel-issue", f"{record.repo.lower()}#{number}"),
                   f"{record.case_id}\x1f{record.kind}")

    def track_of_issue(self, repo: str, number: int) -> TrackRecord | None:
        raw = self.r.get(self._k("sentinel-issue", f"{repo.lower()}#{number}"))
        if not raw:
            return None
        case_id, _, kind = text_of(raw).partition("\x1f")
        return self.track(repo, case_id, kind)

    # --- counts for the false-positive rate ------------------------------------------
    def count_flag(self, repo: str, case_id: str, kind: str, release: str) -> bool:
        """Count a flag once; True the first time."""
        return bool(self.r.sadd(self._k("sentinel-flags"),
                                f"{repo.lower()}|{case_id}|{kind}|{release}"))

    def count_not_regression(self, repo: str, case_id: str, kind: str,
                             releases: tuple[str, ...]) -> int:
        """Mark each flagged release of a regression as not one; returns how many were new."""
        if not releases:
            return 0
        return int(self.r.sadd(self._k("sentinel-not-regression"), *(
            f"{repo.lower()}|{case_id}|{kind}|{release}" for release in releases)))

    def counts(self) -> tuple[int, int]:
        """(flags, of them marked not a regression)."""
        return (int(self.r.scard(self._k("sentinel-flags"))),
                int(self.r.scard(self._k("sentinel-not-regression"))))


def false_positive_rate(flags: int, marked: int) -> float | None:
    """Marks over flags: the share of flags maintainers said were no regression."""
    return marked / flags if flags else None
