"""Run a watch: each release in turn, measured against the last release measured.

The first release that runs is measured alone with the report's whole plan, which names
the comparison that decides the report (`watch.steps.deciding_comparison`). Each later
release is a step: that comparison at the last release measured and at the new one,
side by side in one job through the same orchestrator as `triagebot repro` (rounds,
ABBA order, escalation of UNKNOWN), plus the new release's A/A pair. A release that
cannot be planned, installed or run is a row of its own (broken, or config no longer
valid) and is never measured against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.findings_models import Findings
from triagebot.errors import PlanRejected
from triagebot.model import Plan, PlanPolicy, ReproRequest
from triagebot.overrides import ReproOptions
from triagebot.plan import build_plan
from triagebot.progress import Event, describe
from triagebot.render import RenderedScript, RenderError, render_plan
from triagebot.run import standins
from triagebot.run.orchestrate import DEFAULT_CACHE, Execution, RunSettings, execute
from triagebot.run.supervise import CellOutcome
from triagebot.watch.models import Direction, Reading, WatchRow
from triagebot.watch.states import direction_of, judge
from triagebot.watch.steps import deciding_comparison, read_step, refused, step_plan

Log = Callable[[str], None]


class WatchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: Path
    cache_dir: Path = DEFAULT_CACHE
    standins_dir: Path = standins.DEFAULT_CACHE
    wheels: Path | None = None
    local: bool = False
    escalate: bool = True
    margin: float = Field(default=0.03, gt=0.0, le=0.5)


class Watched(BaseModel):
    """A watch so far: the comparison it follows, which side of 1 the report's ratio
    lies on, the last release measured and the rows."""

    model_config = ConfigDict(extra="forbid")

    comparison: str = ""
    direction: Direction = "below"
    last: str | None = None
    rows: list[WatchRow] = Field(default_factory=list)


class StepContext(BaseModel):
    """What every step of one watch shares."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    request: ReproRequest
    options: ReproOptions
    settings: WatchSettings
    policy: PlanPolicy | None = None


def plan_at(ctx: StepContext, release: str) -> Plan:
    """The report's plan at exactly `release`, its configs written for that release."""
    opts = ctx.options.model_copy(update={"version": release})
    return build_plan(ctx.request, opts, policy=ctx.policy, exact_version=True)


def watch_step(ctx: StepContext, watched: Watched, release: str, *, log: Log = print,
               stop: Callable[[], bool] | None = None) -> Watched:
    """One release measured (against `watched.last` where there is one) and its row
    appended; the comparison and last release move on when it was measured."""
    started = time.monotonic()
    previous = watched.last
    try:
        new = plan_at(ctx, release)
        old = plan_at(ctx, previous) if previous and watched.comparison else None
        plan = step_plan(new, old, watched.comparison) if watched.comparison else new
        scripts = render_plan(plan)
    except (PlanRejected, RenderError) as exc:
        rejected = exc if isinstance(exc, PlanRejected) else PlanRejected(str(exc))
        return _append(watched, refused(rejected, release, previous), started, measured=False)
    number = len(watched.rows) + 1
    out = ctx.settings.out_dir / f"{number:02d}-{release}"
    versus = f" against {previous}" if old is not None else " (first release measured)"
    log(f"watch {release}{versus}: {len(plan.cells)} cells into {out}")
    execution = execute_step(ctx, plan, scripts, out, log=log, stop=stop)
    findings = execution.findings
    comparison = watched.comparison or _decider(findings, ctx.request)
    reading = read_step(plan, findings, comparison, read_logs(execution.outcomes),
                        previous if old is not None else None)
    if not watched.comparison and not reading.crash:
        watched = watched.model_copy(update={
            "comparison": comparison,
            "direction": direction_of(ctx.request.symptom, reading.ratio)})
    return _append(watched, reading, started, measured=not reading.crash)


def execute_step(ctx: StepContext, plan: Plan, scripts: list[RenderedScript], out: Path, *,
                 log: Log = print, stop: Callable[[], bool] | None = None) -> Execution:
    """One step's plan run through the same orchestrator as `triagebot repro`, stopping
    at the first failed cell, its progress told to `log`."""
    release = plan.engine_version or ""

    def progress(event: Event) -> None:
        if event.kind in ("provision", "engine", "done", "analyse"):
            log(f"{release}: {describe(event)}")

    return execute(plan, scripts, ctx.request, RunSettings(
        out_dir=out, cache_dir=ctx.settings.cache_dir, local=ctx.settings.local,
        standins_dir=ctx.settings.standins_dir, wheels=ctx.settings.wheels,
        escalate=ctx.settings.escalate, margin=ctx.settings.margin, stop_on_failure=True,
        pinned=False),
        progress, stop=stop)


def watch_releases(ctx: StepContext, releases: Sequence[str], *, log: Log = print,
                   on_row: Callable[[Watched], None] | None = None,
                   before: Callable[[str], None] | None = None) -> Watched:
    """Every release in order; `before(release)` readies what it needs (a lock), and a
    failure there is that release's broken row."""
    watched = Watched()
    for i, release in enumerate(releases, 1):
        log(f"watch {i}/{len(releases)}: {release}")
        try:
            if before is not None:
                before(release)
        except (OSError, ValueError) as exc:
            watched = _append(watched, Reading(release=release, against=watched.last,
                                               crash=f"not installable: {exc}"[:300]),
                              time.monotonic(), measured=False)
        else:
            watched = watch_step(ctx, watched, release, log=log)
        row = watched.rows[-1]
        log(f"watch {i}/{len(releases)}: {release} -> {row.words} ({row.reason})")
        if on_row is not None:
            on_row(watched)
    return watched


def _append(watched: Watched, reading: Reading, started: float, *, measured: bool
            ) -> Watched:
    state, reason = judge(reading, watched.rows, watched.direction)
    row = WatchRow(release=reading.release, against=reading.against,
                   date=datetime.now(UTC).strftime("%Y-%m-%d"),
                   comparison=reading.comparison, ratio=reading.ratio,
                   change=reading.change, state=state, reason=reason,
                   runner_minutes=round((time.monotonic() - started) / 60, 2))
    update: dict[str, object] = {"rows": [*watched.rows, row]}
    if measured:  # it ran: the next release is measured against it
        update["last"] = reading.release
    return watched.model_copy(update=update)


def _decider(findings: Findings, request: ReproRequest) -> str:
    try:
        return deciding_comparison(findings, request.symptom)
    except PlanRejected:
        return ""


def read_logs(outcomes: dict[str, list[CellOutcome]]) -> dict[str, str]:
    """Each cell's logs (a live engine's rounds share one), read once."""
    return {cid: "\n".join(_read(p) for p in dict.fromkeys(o.log_path for o in outs))
            for cid, outs in outcomes.items()}


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")[-20000:]
    except OSError:
        return ""
