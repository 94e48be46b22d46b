"""What a case's step measured: its figures per mode, read from the step's findings.

A case's step is a watch step (`watch.steps.step_plan`) over several comparisons: the
spec/no-spec ratio of each of the case's modes, at the new release and at the previous
one, side by side in one plan, with the change of each (new over previous) as the
plan's interaction. Acceptance comes from the engine's own counters (the analysis reads
them per cell); output equality from the digests of the greedy token ids each cell's
runs produced (the offline template records them).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from triagebot.analyze.findings_models import CellFinding, ComparisonFinding, Findings
from triagebot.errors import PlanRejected
from triagebot.model import Plan
from triagebot.sentinel.flags import acceptance_interval
from triagebot.sentinel.models import CaseFigures, Interval, Mode, ModeFigures, SentinelCase
from triagebot.watch.models import Ratio
from triagebot.watch.steps import change_of, ratio_of, read_step, step_names

# A cell status that says the engine refused the configuration rather than crashing.
REFUSED_STATUS = "config_rejected"


def mode_comparisons(plan: Plan, case: SentinelCase) -> dict[Mode, str]:
    """The spec/no-spec comparison of each of the case's modes in its plan (a plan of one
    mode has no graph axis: its one spec/no-spec comparison is that mode's)."""
    found: dict[Mode, str] = {}
    for comp in plan.comparisons:
        if comp.kind != "ratio" or len(comp.numerator) != 1 or len(comp.denominator) != 1:
            continue
        num, den = plan.cell(comp.numerator[0]), plan.cell(comp.denominator[0])
        if num.spec is None or den.spec is not None:
            continue
        if num.varies.get("graph") != den.varies.get("graph"):
            continue
        level = num.varies.get("graph", case.modes[0] if len(case.modes) == 1 else "")
        mode = next((m for m in case.modes if m == level), None)
        if mode is not None:
            found.setdefault(mode, comp.name)
    missing = [m for m in case.modes if m not in found]
    if missing:
        raise PlanRejected(f"the plan of {case.case_id} has no spec/no-spec comparison "
                           f"under {missing[0]}", field="modes")
    return found


def read_case(plan: Plan, findings: Findings, logs: Mapping[str, str], case: SentinelCase,
              names: Mapping[Mode, str], previous: str | None) -> CaseFigures:
    """The case's figures at the plan's release: crashed (the engine's line), refused
    (the engine rejected the configuration), inconclusive (the previous release failed
    in this job), or each mode's ratios, acceptance and output equality."""
    release = plan.engine_version or ""
    base = CaseFigures(case_id=case.case_id, engine=case.engine, release=release,
                       previous=previous, status="ok", measured_at=datetime.now(UTC))
    first = next(iter(names.values()))
    reading = read_step(plan, findings, first, logs, previous)
    if reading.crash:
        statuses = {c.cell_id: c.status for c in findings.cells}
        versions = {c.cell_id: c.version for c in plan.cells}
        mine = [s for cid, s in statuses.items() if versions.get(cid) == release]
        status = "refused" if REFUSED_STATUS in mine else "crashed"
        return base.model_copy(update={"status": status, "error_line": reading.crash})
    if reading.ratio is not None and reading.ratio.value is None and any(
            c.status != "ok" for c in findings.cells):
        return base.model_copy(update={"status": "inconclusive",
                                       "error_line": reading.ratio.reason})
    comps = {c.name: c for c in findings.comparisons}
    changes = {i.name: i for i in findings.interactions}
    cells = {c.cell_id: c for c in findings.cells}
    greedy = all(c.sampling.temperature == 0 for c in plan.cells)
    modes = []
    for mode, name in names.items():
        now_name, then_name, change_name = step_names(name, release, previous,
                                                      tagged=len(names) > 1)
        now = comps.get(now_name) or comps.get(name)
        then = comps.get(then_name) if previous is not None else None
        change = changes.get(change_name) if previous is not None else None
        figures = ModeFigures(mode=mode, note="" if now else "not measured")
        if now is not None:
            figures = _side(figures, now, cells, greedy, "")
        if then is not None:
            figures = _side(figures, then, cells, greedy, "previous_")
        if change is not None:
            ror = change_of(change.result)
            figures = figures.model_copy(update={
                "ratio_of_ratios": ror.value, "ror_ci": _interval(ror),
                "ror_verdict": ror.verdict})
        modes.append(figures)
    return base.model_copy(update={"modes": modes})


def _side(figures: ModeFigures, comp: ComparisonFinding, cells: Mapping[str, CellFinding],
          greedy: bool, prefix: str) -> ModeFigures:
    """One release's ratio, acceptance and output equality into `figures` (`prefix`
    "previous_": the previous release's fields)."""
    ratio = ratio_of(comp.result)
    spec, base = cells.get(comp.numerator[0]), cells.get(comp.denominator[0])
    rate, interval, per_position = acceptance_of(spec)
    equal = None
    if greedy and spec is not None and base is not None and spec.outputs_digest \
            and base.outputs_digest:
        equal = spec.outputs_digest == base.outputs_digest
    update: dict[str, object] = {
        f"{prefix}spec_ratio": ratio.value, f"{prefix}spec_ci": _interval(ratio),
        f"{prefix}verdict" if prefix else "verdict": ratio.verdict,
        f"{prefix}acceptance" if prefix else "acceptance_rate": rate,
        f"{prefix}acceptance_ci": interval, f"{prefix}outputs_equal": equal}
    if not prefix:
        update["per_position"] = per_position
    return figures.model_copy(update=update)


def acceptance_of(cell: CellFinding | None) -> tuple[float | None, Interval | None, list[float]]:
    """(rate, interval, per-position rates) from the engine's counters. Every measured
    run repeats the same prompts greedily, so the interval counts one run's drafted
    tokens, not all runs' (repeats of one outcome are not new evidence)."""
    stats = cell.acceptance if cell is not None else None
    if stats is None or stats.acceptance_rate is None:
        return None, None, []
    runs = max(1, cell.throughput.n) if cell is not None else 1
    drafted = stats.num_draft_tokens / runs
    return (stats.acceptance_rate,
            acceptance_interval(stats.acceptance_rate * drafted, drafted),
            list(stats.per_position))


def _interval(ratio: Ratio) -> Interval | None:
    if ratio.ci_low is None or ratio.ci_high is None:
        return None
    return ratio.ci_low, ratio.ci_high
