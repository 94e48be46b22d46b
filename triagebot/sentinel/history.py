"""The sentinel's history: every case's figures per release, its flags and maintainers'
`not-a-regression` answers, in one SQL schema through SQLAlchemy.

SQLite by default (a file under the cache folder, no set-up), PostgreSQL where the
service is deployed (`postgresql+psycopg://user@host/db`). A case measured again at a
release replaces what that release held (the newest measurement stands); a flag raised
again keeps its maintainer's answer. Series come back in release order, for the change
points that catch a drift no single A/B resolves (`sentinel.changepoint`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine

from triagebot.engines.vllm_catalog import UnknownRelease, version_key
from triagebot.sentinel.changepoint import ChangePoint, change_points
from triagebot.sentinel.flags import Z95
from triagebot.sentinel.models import METRICS, CaseFigures, Flag, ModeFigures

SCHEMA = MetaData()
FIGURES = Table(
    "sentinel_figures", SCHEMA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", String(120), nullable=False, index=True),
    Column("engine", String(40), nullable=False),
    Column("release", String(64), nullable=False),
    Column("previous", String(64)),
    Column("status", String(16), nullable=False),
    Column("error_line", Text),
    Column("measured_at", DateTime(timezone=True), nullable=False),
    Column("job_url", Text),
    Column("document", Text, nullable=False),  # the whole CaseFigures, as JSON
    UniqueConstraint("case_id", "release", name="uq_sentinel_figures_case_release"),
)
# One row per (case, release, mode, metric): the series change points run over.
METRIC_ROWS = Table(
    "sentinel_metrics", SCHEMA,
    Column("figures_id", Integer, ForeignKey("sentinel_figures.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("case_id", String(120), nullable=False),
    Column("release", String(64), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("metric", String(32), nullable=False),
    Column("value", Float, nullable=False),
    Column("low", Float),
    Column("high", Float),
    UniqueConstraint("case_id", "release", "mode", "metric", name="uq_sentinel_metric"),
)
FLAGS = Table(
    "sentinel_flags", SCHEMA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", String(120), nullable=False, index=True),
    Column("release", String(64), nullable=False),
    Column("previous", String(64)),
    Column("kind", String(32), nullable=False),
    Column("mode", String(16), nullable=False),  # "" for a flag of the whole case
    Column("reason", Text, nullable=False),
    Column("raised_at", DateTime(timezone=True), nullable=False),
    Column("not_regression", Boolean, nullable=False, default=False),
    Column("marked_by", String(64)),
    Column("marked_at", DateTime(timezone=True)),
    UniqueConstraint("case_id", "release", "kind", "mode", name="uq_sentinel_flag"),
)
# Each metric with the ModeFigures fields of its value and interval.
_METRIC_FIELDS = {"spec_ratio": ("spec_ratio", "spec_ci"),
                  "ratio_of_ratios": ("ratio_of_ratios", "ror_ci"),
                  "acceptance_rate": ("acceptance_rate", "acceptance_ci")}
DB_NAME = "sentinel.db"


def default_url(folder: Path) -> str:
    """The SQLite file under `folder` (the cache or the output folder)."""
    return f"sqlite:///{(folder / DB_NAME).resolve()}"


def release_order(release: str) -> tuple[tuple[int, ...], str]:
    """Releases sort by their numbers; one that is not a version sorts last, by name."""
    try:
        return version_key(release), release
    except UnknownRelease:
        return (1 << 30,), release


class History:
    """The store. `url`: an SQLAlchemy URL (sqlite:///PATH, postgresql+psycopg://...)."""

    def __init__(self, url: str) -> None:
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.url = url
        self.engine: Engine = create_engine(url, future=True)
        SCHEMA.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def record(self, figures: CaseFigures, flags: Sequence[Flag] = ()) -> None:
        """Store one case at one release (replacing what that release held) and its
        flags (a flag raised again keeps its maintainer's answer)."""
        with self.engine.begin() as conn:
            conn.execute(delete(METRIC_ROWS).where(
                METRIC_ROWS.c.case_id == figures.case_id,
                METRIC_ROWS.c.release == figures.release))
            conn.execute(delete(FIGURES).where(FIGURES.c.case_id == figures.case_id,
                                               FIGURES.c.release == figures.release))
            row = conn.execute(insert(FIGURES).values(
                case_id=figures.case_id, engine=figures.engine, release=figures.release,
                previous=figures.previous, status=figures.status,
                error_line=figures.error_line, measured_at=figures.measured_at,
                job_url=figures.job_url, document=figures.model_dump_json()))
            key = row.inserted_primary_key[0] if row.inserted_primary_key else None
            values = [{"figures_id": key, "case_id": figures.case_id,
                       "release": figures.release, **value}
                      for mode in figures.modes for value in _metric_values(mode)]
            if values:
                conn.execute(insert(METRIC_ROWS), values)
            for flag in flags:
                self._raise(conn, flag)

    def _raise(self, conn: Any, flag: Flag) -> None:
        where = (FLAGS.c.case_id == flag.case_id, FLAGS.c.release == flag.release,
                 FLAGS.c.kind == flag.kind, FLAGS.c.mode == (flag.mode or ""))
        found = conn.execute(select(FLAGS.c.id).where(*where)).first()
        if found is not None:
            conn.execute(update(FLAGS).where(FLAGS.c.id == found[0]).values(
                reason=flag.reason, previous=flag.previous))
            return
        conn.execute(insert(FLAGS).values(
            case_id=flag.case_id, release=flag.release, previous=flag.previous,
            kind=flag.kind, mode=flag.mode or "", reason=flag.reason,
            raised_at=datetime.now(UTC), not_regression=False))

    def figures(self, case_id: str, release: str) -> CaseFigures | None:
        with self.engine.connect() as conn:
            doc = conn.execute(select(FIGURES.c.document).where(
                FIGURES.c.case_id == case_id, FIGURES.c.release == release)).scalar()
        return CaseFigures.model_validate_json(doc) if doc else None

    def cases(self) -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(FIGURES.c.case_id).distinct()).scalars().all()
        return sorted(rows)

    def releases(self, case_id: str) -> list[str]:
        """The releases a case was measured at, in release order."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(FIGURES.c.release).where(
                FIGURES.c.case_id == case_id)).scalars().all()
        return sorted(rows, key=release_order)

    def series(self, case_id: str, mode: str, metric: str) -> list[tuple[str, float]]:
        """(release, value) of one metric of one mode of a case, in release order."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; metrics: {', '.join(METRICS)}")
        with self.engine.connect() as conn:
            rows = conn.execute(select(METRIC_ROWS.c.release, METRIC_ROWS.c.value).where(
                METRIC_ROWS.c.case_id == case_id, METRIC_ROWS.c.mode == mode,
                METRIC_ROWS.c.metric == metric)).all()
        return sorted(((r, float(v)) for r, v in rows), key=lambda rv: release_order(rv[0]))

    def noise(self, case_id: str, mode: str, metric: str) -> list[float]:
        """Each point's standard error, from its 95 % interval (half-width / 1.96), in
        the order of `series` (0 where it has no interval)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(METRIC_ROWS.c.release, METRIC_ROWS.c.low,
                                       METRIC_ROWS.c.high).where(
                METRIC_ROWS.c.case_id == case_id, METRIC_ROWS.c.mode == mode,
                METRIC_ROWS.c.metric == metric)).all()
        ordered = sorted(rows, key=lambda row: release_order(row[0]))
        return [(hi - lo) / 2 / Z95 if lo is not None and hi is not None else 0.0
                for _, lo, hi in ordered]

    def flags(self, case_id: str | None = None, release: str | None = None, *,
              open_only: bool = False) -> list[Flag]:
        """Flags in release order; `open_only`: those no maintainer called not a
        regression."""
        query = select(FLAGS)
        if case_id is not None:
            query = query.where(FLAGS.c.case_id == case_id)
        if release is not None:
            query = query.where(FLAGS.c.release == release)
        if open_only:
            query = query.where(FLAGS.c.not_regression.is_(False))
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(FLAGS.c.id)).mappings().all()
        found = [Flag(case_id=r["case_id"], release=r["release"], previous=r["previous"],
                      kind=r["kind"], mode=r["mode"] or None, reason=r["reason"])
                 for r in rows]
        return sorted(found, key=lambda f: release_order(f.release))

    def mark_not_regression(self, case_id: str, release: str, by: str) -> int:
        """A maintainer's `not-a-regression` on a case's flags at a release; how many
        flags it marked (0: none raised there)."""
        with self.engine.begin() as conn:
            done = conn.execute(update(FLAGS).where(
                FLAGS.c.case_id == case_id, FLAGS.c.release == release,
                FLAGS.c.not_regression.is_(False)).values(
                not_regression=True, marked_by=by[:64], marked_at=datetime.now(UTC)))
        return int(done.rowcount or 0)

    def counts(self) -> tuple[int, int]:
        """(flags raised, flags marked not a regression): the observed false-positive
        rate is their quotient."""
        with self.engine.connect() as conn:
            raised = conn.execute(select(func.count()).select_from(FLAGS)).scalar() or 0
            marked = conn.execute(select(func.count()).select_from(FLAGS).where(
                FLAGS.c.not_regression.is_(True))).scalar() or 0
        return int(raised), int(marked)

    def change_points(self, case_id: str, mode: str, metric: str) -> list[ChangePoint]:
        """The change points of a series (`sentinel.changepoint`), each `index` into
        `series`, each point weighted by its standard error (`noise`)."""
        points = self.series(case_id, mode, metric)
        if len(points) < 2:
            return []
        return change_points([v for _, v in points], self.noise(case_id, mode, metric))

    def drift_flags(self, case_id: str, modes: Sequence[str] = ("eager", "graph"),
                    metrics: Sequence[str] = ("spec_ratio", "acceptance_rate")) -> list[Flag]:
        """A flag at each change point of a case's series (kind "drift"), at the
        release the series changed at, with the level before and after."""
        out: list[Flag] = []
        for mode in modes:
            for metric in metrics:
                points = self.series(case_id, mode, metric)
                for change in self.change_points(case_id, mode, metric):
                    release = points[change.index][0]
                    before: str | None
                    if change.kind == "drift":  # called at the last point, over the series
                        before = points[0][0]
                        words = (f"{metric} under {mode} drifted from {change.before:.3g} at "
                                 f"{before} to {change.after:.3g} at {release}")
                    else:
                        before = points[change.index - 1][0] if change.index > 0 else None
                        words = (f"{metric} under {mode} stepped from {change.before:.3g} "
                                 f"to {change.after:.3g} at {release}")
                    p = f", p {change.p_value:.2g}" if change.p_value is not None else ""
                    out.append(Flag.model_validate({
                        "case_id": case_id, "release": release, "previous": before,
                        "kind": "drift", "mode": mode,
                        "reason": f"{words} ({len(points)} releases{p})"}))
        return sorted(out, key=lambda f: release_order(f.release))


def _metric_values(mode: ModeFigures) -> list[dict[str, Any]]:
    out = []
    for metric, (value_field, ci_field) in _METRIC_FIELDS.items():
        value = getattr(mode, value_field)
        if value is None:
            continue
        ci = getattr(mode, ci_field)
        out.append({"mode": mode.mode, "metric": metric, "value": float(value),
                    "low": ci[0] if ci else None, "high": ci[1] if ci else None})
    return out
