"""The sentinel's history: one schema on SQLite (always) and on a real PostgreSQL server
(where one is reachable), series in release order, flags and maintainers' answers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from triagebot.sentinel.history import History, default_url
from triagebot.sentinel.models import CaseFigures, Flag, ModeFigures

CASE = "vllm-mtp-k1-standin-cpu"
PG_HOST = os.environ.get("TRIAGEBOT_TEST_PG", "127.0.0.1:5432")


def figures(release: str, previous: str | None, ratio: float, acceptance: float,
            status: str = "ok") -> CaseFigures:
    modes = [ModeFigures(mode=m, spec_ratio=ratio, spec_ci=(ratio - 0.02, ratio + 0.02),
                         verdict="DIFFERENT", ratio_of_ratios=1.0 if previous else None,
                         acceptance_rate=acceptance, acceptance_ci=(acceptance - 0.05,
                                                                    acceptance + 0.05),
                         per_position=[acceptance], outputs_equal=True)
             for m in ("eager", "graph")] if status == "ok" else []
    return CaseFigures(case_id=CASE, engine="vllm", release=release, previous=previous,
                       status=status, modes=modes, measured_at=datetime.now(UTC),  # type: ignore[arg-type]
                       error_line=None if status == "ok" else "TypeError: x")


def flag(release: str, kind: str = "speedup_fell") -> Flag:
    return Flag(case_id=CASE, release=release, previous="0.25.1", kind=kind,  # type: ignore[arg-type]
                mode="graph", reason="the speed-up fell under graph")


def exercise(history: History) -> None:
    """What every backend must do alike."""
    # recorded out of order; series come back in release order (0.9.0 before 0.10.0)
    history.record(figures("0.10.0", "0.9.0", 1.10, 0.50), [flag("0.10.0")])
    history.record(figures("0.9.0", None, 1.30, 0.55))
    history.record(figures("0.11.0", "0.10.0", 1.00, 0.45, status="crashed"),
                   [flag("0.11.0", "crashed")])
    assert history.series(CASE, "graph", "spec_ratio") == [("0.9.0", 1.30), ("0.10.0", 1.10)]
    assert history.series(CASE, "eager", "acceptance_rate") == [("0.9.0", 0.55),
                                                                ("0.10.0", 0.50)]
    assert history.releases(CASE) == ["0.9.0", "0.10.0", "0.11.0"]
    stored = history.figures(CASE, "0.10.0")
    assert stored is not None and stored.mode("graph") == figures(
        "0.10.0", "0.9.0", 1.10, 0.50).mode("graph")
    # measured again: the newest measurement stands, no duplicate
    history.record(figures("0.10.0", "0.9.0", 1.05, 0.50), [flag("0.10.0")])
    assert history.series(CASE, "graph", "spec_ratio") == [("0.9.0", 1.30), ("0.10.0", 1.05)]
    assert [f.kind for f in history.flags(CASE)] == ["speedup_fell", "crashed"]
    # a maintainer's answer is counted and survives the flag being raised again
    assert history.mark_not_regression(CASE, "0.10.0", "alice") == 1
    history.record(figures("0.10.0", "0.9.0", 1.05, 0.50), [flag("0.10.0")])
    assert history.counts() == (2, 1)
    assert [f.release for f in history.flags(open_only=True)] == ["0.11.0"]
    assert history.mark_not_regression(CASE, "0.12.0", "alice") == 0
    assert history.cases() == [CASE]
    with pytest.raises(ValueError, match="metrics: spec_ratio"):
        history.series(CASE, "graph", "tok_s")


def test_sqlite_needs_no_set_up_and_keeps_everything(tmp_path: Path) -> None:
    url = default_url(tmp_path / "cache")
    history = History(url)
    exercise(history)
    history.close()
    again = History(url)  # a restart reads the same file
    assert again.counts() == (2, 1)
    again.close()
    assert (tmp_path / "cache" / "sentinel.db").is_file()


def _postgres_url() -> str | None:
    """A URL of the PostgreSQL server this machine runs, or None (with the reason left
    to the skip) when none answers."""
    try:
        import psycopg
    except ImportError:
        return None
    for user in ("postgres", "root"):
        url = f"postgresql://{user}@{PG_HOST}/test"
        try:
            with psycopg.connect(url, connect_timeout=3):
                return url
        except psycopg.Error:
            continue
    return None


@pytest.fixture
def postgres() -> Iterator[str]:
    url = _postgres_url()
    if url is None:
        pytest.skip(f"no PostgreSQL server answers at {PG_HOST} (database test, user "
                    "postgres or root); ./dev test can start one")
    import psycopg

    schema = f"sentinel_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield (url.replace("postgresql://", "postgresql+psycopg://")
               + f"?options=-csearch_path%3D{schema}")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_the_same_schema_runs_on_a_real_postgresql_server(postgres: str) -> None:
    history = History(postgres)
    assert history.engine.dialect.name == "postgresql"
    exercise(history)
    history.close()


def test_a_slow_drift_is_a_change_point_and_a_drift_flag(tmp_path: Path) -> None:
    history = History(default_url(tmp_path))
    releases = [f"0.{20 + i}.0" for i in range(8)]
    previous = None
    for i, release in enumerate(releases):
        # 2 % per release from the fourth on, with tight intervals
        ratio = 1.30 * (0.98 ** max(0, i - 3))
        history.record(figures(release, previous, ratio, 0.5))
        previous = release
    assert history.change_points(CASE, "graph", "spec_ratio")
    drift = history.drift_flags(CASE, modes=["graph"], metrics=["spec_ratio"])
    assert drift and all(f.kind == "drift" for f in drift)
    # a flat series has none
    flat = History(default_url(tmp_path / "flat"))
    for release in releases:
        flat.record(figures(release, None, 1.30, 0.5))
    assert flat.change_points(CASE, "graph", "spec_ratio") == []
