"""Comparisons judged (ratio verdicts, the A/A noise band, interactions) and the spec
diagnostics across cells: collapse, step cost fits, greedy divergence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from triagebot.analyze import stats, verdict
from triagebot.analyze.findings_cells import LOSSY_REJECTION
from triagebot.analyze.findings_models import (
    AcceptanceStats,
    CellFinding,
    CollapseFlag,
    ComparisonFinding,
    DivergenceFinding,
    InteractionFinding,
    NoiseBand,
    RatioExplanation,
    StepFitFinding,
)
from triagebot.analyze.looks import RUN_STEP
from triagebot.analyze.spec import (
    detect_collapse,
    detect_divergence,
    explain_ratio,
    fit_step_cost,
    step_cost,
    step_seconds,
)
from triagebot.engines import standins
from triagebot.plan.synthetic import is_pinned
from triagebot.plan_model import Cell, Comparison, Plan
from triagebot.run_result import RunResult

# --- comparisons ------------------------------------------------------------------------


def _samples(ids: Sequence[str], results: Mapping[str, Sequence[RunResult]]) -> list[float]:
    return [x for cid in ids for x in stats.samples_from(results.get(cid, ()))]


def _rounds(ids: Sequence[str], results: Mapping[str, Sequence[RunResult]]) -> list[list[float]]:
    """tok/s per round of an arm (cells of the arm pooled round by round).

    Rounds are placed by the plan round each result records, so that two arms line up
    even where one of them sat a round out (an escalation round, or arms added to the
    plan after its first rounds); results without one are placed by position."""
    placed = [(r.round if r.round is not None else i, r)
              for cid in ids for i, r in enumerate(results.get(cid, ()))]
    width = max((at + 1 for at, _ in placed), default=0)
    out: list[list[float]] = [[] for _ in range(width)]
    for at, result in placed:
        out[at].extend(stats.samples_from([result]))
    return out


def shared_span(a: list[list[float]], b: list[list[float]]
                ) -> tuple[list[list[float]], list[list[float]]]:
    """Both arms from the first round in which both ran: an arm added to the plan after
    its first rounds is compared with its partner's runs of the same time only."""
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x and y), 0)
    return a[first:], b[first:]


def plan_noise_band(plan: Plan, results: Mapping[str, Sequence[RunResult]]) -> NoiseBand:
    noise = next((c for c in plan.comparisons if c.kind == "noise"), None)
    if noise is None:
        return stats.default_band("the plan has no A/A pair")
    return stats.noise_band(_samples(noise.numerator, results),
                            _samples(noise.denominator, results))


def main_names(plan: Plan) -> set[str]:
    ratios = [c for c in plan.comparisons if c.kind == "ratio"]
    if not ratios:
        return set()
    prefix = ratios[0].name.split(" @ ")[0]
    return {c.name for c in ratios if c.name.split(" @ ")[0] == prefix}


def cell_context(cell: Cell) -> tuple[tuple[str, str], ...]:
    """What sets a cell apart from its siblings other than speculation: its mode."""
    return tuple(sorted((k, v) for k, v in cell.varies.items() if k != "spec"))


def spec_pair(plan: Plan, numerator: Sequence[str],
              denominator: Sequence[str]) -> tuple[Cell, Cell] | None:
    """(spec cell, no-spec cell) when a comparison's arms differ only by speculation."""
    if len(numerator) != 1 or len(denominator) != 1:
        return None
    num, den = plan.cell(numerator[0]), plan.cell(denominator[0])
    if num.spec is None or den.spec is not None or cell_context(num) != cell_context(den):
        return None
    return num, den


def ratio_finding(
    plan: Plan,
    comp: Comparison,
    results: Mapping[str, Sequence[RunResult]],
    cells: Mapping[str, CellFinding],
    main: set[str],
    margin: float,
    negligible: float = verdict.DEFAULT_NEGLIGIBLE,
) -> tuple[ComparisonFinding, int]:
    a, b = shared_span(_rounds(comp.numerator, results), _rounds(comp.denominator, results))
    runs = min(sum(map(len, a)), sum(map(len, b)))
    max_runs = max(plan.budget.max_runs, runs, 1)
    decision = verdict.next_step(a, b, runs, max_runs, margin=margin, negligible=negligible,
                                 name=comp.name)
    res = decision.comparison
    more = decision.more_runs_per_arm if decision.action == "run_more" else 0
    pair = spec_pair(plan, comp.numerator, comp.denominator)
    ci = (res.ci_low, res.ci_high) if res.ci_low and res.ci_high else None
    cost = None
    explanation = None
    if pair and res.median_a and res.median_b:
        acc = cells[pair[0].cell_id].acceptance
        length = acc.mean_acceptance_length if acc else None
        if length:
            cost = step_cost(length, res.median_a, res.median_b, ratio_ci=ci)
    elif res.ratio:
        explanation = _explain(comp, cells, res.ratio, ci)
    finding = ComparisonFinding(
        name=comp.name,
        kind="ratio",
        question=comp.question,
        numerator=list(comp.numerator),
        denominator=list(comp.denominator),
        main=comp.name in main,
        result=res,
        step_cost=cost,
        explanation=explanation,
        next_action=decision.reason,
    )
    return finding, more


def _explain(comp: Comparison, cells: Mapping[str, CellFinding], ratio: float,
             ci: tuple[float, float] | None) -> RatioExplanation | None:
    """The tokens-per-step / step-cost split, for single-cell arms that both have it."""
    if len(comp.numerator) != 1 or len(comp.denominator) != 1:
        return None
    num, den = cells[comp.numerator[0]], cells[comp.denominator[0]]
    if num.tokens_per_step is None or den.tokens_per_step is None:
        return None
    source = num.tokens_per_step_source if num.tokens_per_step_source == \
        den.tokens_per_step_source else f"{num.tokens_per_step_source} / " \
        f"{den.tokens_per_step_source}"
    return explain_ratio(ratio, ci, num.tokens_per_step, den.tokens_per_step,
                         source=source or "")


def noise_finding(
    comp: Comparison, results: Mapping[str, Sequence[RunResult]], margin: float,
    negligible: float = verdict.DEFAULT_NEGLIGIBLE,
) -> ComparisonFinding:
    a, b = _rounds(comp.numerator, results), _rounds(comp.denominator, results)
    res = verdict.compare(a, b, margin=margin, negligible=negligible, name=comp.name)
    return ComparisonFinding(
        name=comp.name,
        kind="noise",
        question=comp.question,
        numerator=list(comp.numerator),
        denominator=list(comp.denominator),
        result=res,
        next_action="measures the runner's noise and drift between two runs of one cell",
    )


def aa_runs_wanted(plan: Plan, pair: ComparisonFinding) -> int:
    """More runs per arm for an A/A pair that came out DIFFERENT, while the budget's most
    runs per cell allows; 0 otherwise. A pair that disagrees with itself says the runner
    moved between its two engines: more rounds show whether that lasts."""
    res = pair.result
    if res.verdict != "DIFFERENT" or min(res.n_a, res.n_b) >= plan.budget.max_runs:
        return 0
    return min(RUN_STEP, plan.budget.max_runs - min(res.n_a, res.n_b))


def interaction_finding(
    comp: Comparison, by_name: Mapping[str, Comparison],
    results: Mapping[str, Sequence[RunResult]], band: NoiseBand,
) -> InteractionFinding | None:
    if len(comp.of) != 2 or any(name not in by_name for name in comp.of):
        return None
    top, bottom = by_name[comp.of[0]], by_name[comp.of[1]]
    res = stats.interaction(
        (_samples(top.numerator, results), _samples(top.denominator, results)),
        (_samples(bottom.numerator, results), _samples(bottom.denominator, results)),
        band, name=comp.name,
    )
    return InteractionFinding(name=comp.name, question=comp.question, of=list(comp.of),
                              result=res)


# --- spec diagnostics -------------------------------------------------------------------


def random_drafter(cell: Cell) -> bool:
    """A drafter whose acceptance is ~0 by construction (a random stand-in head)."""
    return cell.spec is not None and standins.is_untrained_head(cell.spec.draft_model)


def collapse_flags(plan: Plan, cells: Mapping[str, CellFinding]) -> list[CollapseFlag]:
    """Collapse flags among spec cells that should accept alike (same model, drafter, k,
    rejection method and temperature); a lone spec cell is judged on its length only."""
    groups: dict[tuple[Any, ...], dict[str, AcceptanceStats]] = {}
    for cell in plan.cells:
        found = cells[cell.cell_id]
        if (cell.spec is None or found.acceptance is None or random_drafter(cell)
                or is_pinned(cell)):
            continue
        key = (cell.model, cell.spec.method, cell.spec.num_speculative_tokens,
               cell.spec.draft_model, cell.spec.rejection_sample_method,
               cell.sampling.temperature)
        groups.setdefault(key, {})[cell.label] = found.acceptance
    return [flag for arms in groups.values() for flag in detect_collapse(arms)]


def step_fit_findings(plan: Plan, cells: Mapping[str, CellFinding]) -> list[StepFitFinding]:
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for cell in plan.cells:
        if cell.spec is not None and cell.replica == 0 and not is_pinned(cell):
            groups.setdefault((cell_context(cell), cell.spec.method), []).append(cell)
    out: list[StepFitFinding] = []
    for (context, method), members in groups.items():
        if len({c.spec.num_speculative_tokens for c in members if c.spec}) < 2:
            continue
        points = []
        for c in members:
            found = cells[c.cell_id]
            length = found.acceptance.mean_acceptance_length if found.acceptance else None
            if length and found.throughput.median and c.spec:
                points.append((c.spec.num_speculative_tokens,
                               step_seconds(length, found.throughput.median)))
        base = next((cells[c.cell_id].throughput.median for c in plan.cells
                     if c.spec is None and c.replica == 0 and cell_context(c) == context), None)
        fit = fit_step_cost(points, 1.0 / base if base else None)
        out.append(StepFitFinding(context=context_text(context), method=method,
                                  cells=[c.cell_id for c in members], fit=fit))
    return out


def context_text(context: Sequence[tuple[str, str]]) -> str:
    return " ".join(v for _, v in context) or "all cells"


def divergence_findings(plan: Plan, cells: Mapping[str, CellFinding]) -> list[DivergenceFinding]:
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for cell in plan.cells:
        # A pinned arm keeps drafts the target would not have chosen: its tokens differ
        # by design.
        if not is_pinned(cell):
            groups.setdefault(cell_context(cell), []).append(cell)
    out: list[DivergenceFinding] = []
    for context, members in groups.items():
        if not any(c.spec for c in members) or not any(c.spec is None for c in members):
            continue
        lossless = all(c.sampling.temperature == 0 for c in members) and not any(
            c.spec and c.spec.rejection_sample_method in LOSSY_REJECTION for c in members)
        digests = {c.label: cells[c.cell_id].outputs_digest for c in members
                   if cells[c.cell_id].status == "ok"}
        res = detect_divergence(digests, lossless=lossless)
        out.append(DivergenceFinding(context=context_text(context),
                                     cells=[c.cell_id for c in members], result=res))
    return out
