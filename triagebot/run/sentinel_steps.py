"""Run the sentinel: each standing case at a new release against the previous one.

A case at a release is one watch step (`run.watch_steps`): the case's plan is built as
`triagebot repro` builds one from `key=value` options (speculation on and off, in each
of the case's modes, on its runner), at the new release and at the previous one; both
releases' cells run side by side in one job through the same orchestrator, with the
group-sequential verdict; `sentinel.reading` reads the figures and `sentinel.flags`
says what to flag. A release a case cannot run at all (`sentinel.cases.skip_reason`) is
skipped with its reason, and a release that crashed or refused is never a case's
"previous": the next release is measured against the last one that ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from triagebot.errors import PlanRejected
from triagebot.model import PlanPolicy, ReproRequest
from triagebot.overrides import OptionsError, parse_overrides
from triagebot.render import RenderError, render_plan
from triagebot.run.provision import ProvisionError
from triagebot.run.watch_steps import StepContext, WatchSettings, execute_step, plan_at, read_logs
from triagebot.sentinel.cases import overrides, skip_reason
from triagebot.sentinel.flags import flags_for
from triagebot.sentinel.models import CaseFigures, Flag, SentinelCase
from triagebot.sentinel.reading import mode_comparisons, read_case
from triagebot.watch.steps import refused, step_plan

Log = Callable[[str], None]


class SentinelContext(BaseModel):
    """What every case of one sentinel run shares: where runs go, the plan policy, the
    margin, and options added to every case (`runs=8`, `max_tokens=32`)."""

    model_config = ConfigDict(extra="forbid")

    settings: WatchSettings
    policy: PlanPolicy | None = None
    extra: list[str] = Field(default_factory=list)
    margin: float = Field(default=0.05, gt=0.0, le=0.5)


class SentinelRound(BaseModel):
    """One release of a sentinel run: every case's figures, flags, and the cases skipped
    (case id -> why)."""

    model_config = ConfigDict(extra="forbid")

    release: str
    figures: list[CaseFigures] = Field(default_factory=list)
    flags: list[Flag] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)


def run_case(ctx: SentinelContext, case: SentinelCase, release: str, previous: str | None,
             *, log: Log = print, stop: Callable[[], bool] | None = None) -> CaseFigures:
    """`case` at `release` against `previous` (None: the release alone), in one job."""
    def failed(status: str, line: str) -> CaseFigures:
        return CaseFigures.model_validate({
            "case_id": case.case_id, "engine": case.engine, "release": release,
            "previous": previous, "status": status, "error_line": line[:300],
            "measured_at": datetime.now(UTC)})

    try:
        step = StepContext(request=ReproRequest(), settings=ctx.settings, policy=ctx.policy,
                           options=parse_overrides([*overrides(case), *ctx.extra]))
    except OptionsError as exc:
        return failed("refused", f"the case's options are not valid: {exc}")
    try:
        new = plan_at(step, release)
        names = mode_comparisons(new, case)
    except PlanRejected as exc:
        reading = refused(exc, release, previous)  # names a key the release no longer takes
        return failed("refused", reading.invalid or str(exc))
    old = None
    if previous is not None:
        try:
            old = plan_at(step, previous)
        except PlanRejected as exc:
            log(f"{case.case_id}: {previous} refuses the case ({exc}); {release} runs alone")
            previous = None
    try:
        plan = step_plan(new, old, list(names.values()))
        scripts = render_plan(plan)
    except (PlanRejected, RenderError) as exc:
        return failed("refused", str(exc))
    out = ctx.settings.out_dir / case.case_id / release
    versus = f" against {previous}" if previous else " (first release measured)"
    log(f"{case.case_id} {release}{versus}: {len(plan.cells)} cells into {out}")
    execution = execute_step(step, plan, scripts, out, log=log, stop=stop)
    return read_case(plan, execution.findings, read_logs(execution.outcomes), case, names,
                     previous)


def sentinel_releases(ctx: SentinelContext, cases: Sequence[SentinelCase],
                      releases: Sequence[str], *, log: Log = print,
                      on_figures: Callable[[CaseFigures, list[Flag]], None] | None = None,
                      before: Callable[[str], None] | None = None) -> list[SentinelRound]:
    """Every release in order, every case at each against the last release it ran on;
    `before(release)` readies what a release needs (a lock), and a failure there is a
    crash of every case at that release. `on_figures` hears each case as it ends."""
    last: dict[str, str] = {}
    rounds: list[SentinelRound] = []
    for i, release in enumerate(releases, 1):
        log(f"sentinel {i}/{len(releases)}: {release}")
        current = SentinelRound(release=release)
        broken = ""
        try:
            if before is not None:
                before(release)
        except (OSError, ValueError, ProvisionError) as exc:
            broken = f"not installable: {exc}"
        for case in cases:
            why = skip_reason(case, release)
            if why:
                log(f"{case.case_id} {release}: skipped, {why}")
                current.skipped[case.case_id] = why
                continue
            previous = last.get(case.case_id)
            if broken:
                figures = CaseFigures(case_id=case.case_id, engine=case.engine,
                                      release=release, previous=previous, status="crashed",
                                      error_line=broken[:300], measured_at=datetime.now(UTC))
            else:
                figures = run_case(ctx, case, release, previous, log=log)
            flags = flags_for(figures, ctx.margin)
            if figures.status in ("ok", "inconclusive"):
                last[case.case_id] = release
            log(f"{case.case_id} {release}: {figures.status}, {len(flags)} flag(s)")
            current.figures.append(figures)
            current.flags.extend(flags)
            if on_figures is not None:
                on_figures(figures, flags)
        rounds.append(current)
    return rounds
