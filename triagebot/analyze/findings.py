"""RunResults -> Findings: every number and sentence the report shows, computed once.

`analyze` is pure: it reads the plan, the results (several rounds per cell when the
runner escalated), optionally the parsed report and the cells' logs, and returns
`Findings`.

**Main comparisons.** The planner emits the comparisons along the plan's primary axis
first (`triagebot/plan/comparisons.py`); they share the name prefix of the first ratio
comparison (e.g. `spec/no_spec`), and they are the "main question".

**Outcome**, decided in this order:

1. `error` — a cell that a main comparison needs has no usable runs (it failed, was
   rejected, or never reported), unless the report is about a crash and the cell crashed
   (then the crash is what was asked about, see 3).
2. `reproduced` / `not_reproduced` / `inconclusive` from the reporter's own ratios, when
   their labelled throughputs map onto both cells of a main comparison ("key claims";
   for a slowdown symptom only the claims that report a slowdown). Each claim is judged
   by `against_report.judge_ratio`: any claim not reproduced -> `not_reproduced`; else
   any undecided (our UNKNOWN) -> `inconclusive`; else `reproduced`.
3. Without such ratios, from the symptom: a slowdown (`spec_slower_than_baseline`,
   `graph_slower_than_eager`) is reproduced when a main comparison is DIFFERENT with a
   ratio below 1, not reproduced when every main comparison is decided (SAME, or
   DIFFERENT above 1), inconclusive otherwise; `acceptance_drop` is reproduced by a
   collapse flag, not reproduced when spec cells have counters and none collapsed;
   `crash` is reproduced when a cell failed, crashed or ran out of memory.
4. Otherwise (no claim to check) `inconclusive`.

`needs_more_runs` maps each UNKNOWN ratio comparison to the runs per arm that the next
look of the escalation schedule asks for (`verdict.next_step`), so the runner can run
them. Ratio verdicts are taken at the boundaries of the look the run count reached, so
repeated looks keep the error budget of `verdict`. An A/A pair that came out DIFFERENT
asks for more rounds too, within the budget's most runs per cell, until it agrees;
while it stays DIFFERENT no verdict resting on throughput is headlined (5 below).

**What the headline may claim** (`findings_outcome.conclude`), after the outcome above:

5. `cannot_answer` when the report's own comparison cannot run on this runner (the plan
   records it in `not_compared`, with why): the headline says so first, then what was
   measured instead, which is not a verdict on the report's question.
6. `inconclusive` when the outcome rests on throughput and the A/A pair is DIFFERENT:
   the runner disagreed with itself, so its verdicts are not trusted.

Speculation that never engaged (`never_engaged.py`) is stated at the top of the headline
whenever it holds; it decides the outcome only where the report states no number to
check (its symptom is none or "other") or reports an acceptance drop.

**Rounds.** A cell's i-th RunResult is its i-th round. Both arms of a comparison are
escalated together, so their rounds line up and serve as the blocks of the verdict model.

**Signals.** Throughput decides a ratio verdict. Where both arms have tokens per target
step (acceptance length, or counted forward passes), the ratio is split into that nearly
deterministic part and the cost of a step (`spec.explain_ratio`), so the report can say
whether the drafter or the step changed. `decided_by` names the signal behind the outcome.

**Modules.** `findings_cells` summarises each cell, `findings_compare` judges the
comparisons and the spec diagnostics, `findings_outcome` draws the conclusion; `analyze`
below puts them together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from triagebot.analyze import verdict
from triagebot.analyze.against_report import against_report
from triagebot.analyze.findings_cells import merge_counters, summarize
from triagebot.analyze.findings_compare import (
    aa_runs_wanted,
    collapse_flags,
    divergence_findings,
    interaction_finding,
    main_names,
    noise_finding,
    plan_noise_band,
    ratio_finding,
    step_fit_findings,
)
from triagebot.analyze.findings_models import (
    ComparisonFinding,
    Findings,
)
from triagebot.analyze.findings_outcome import (
    conclude,
    decide_outcome,
    decision_signal,
    failure_signatures,
    headline,
    key_claims,
    outcome_hints,
    runner_hints,
    unsteady_pair,
)
from triagebot.analyze.graphs import graph_checks, graph_hints
from triagebot.analyze.mtp_status import mtp_notes
from triagebot.analyze.never_engaged import never_engaged
from triagebot.analyze.signatures import Signature
from triagebot.analyze.step_split import step_splits
from triagebot.analyze.synthetic import explain
from triagebot.plan_model import Plan
from triagebot.request_model import ReproRequest
from triagebot.run_result import RunEnv, RunResult

__all__ = ["analyze", "decide_outcome", "headline", "merge_counters", "summarize"]


# --- entry point ------------------------------------------------------------------------


def _runner_env(results: Mapping[str, Sequence[RunResult]]) -> RunEnv | None:
    for rounds in results.values():
        for r in rounds:
            if r.status == "ok" and r.env.gpu:
                return r.env
    for rounds in results.values():
        for r in rounds:
            if r.env != RunEnv():
                return r.env
    return None


def _engine_version(plan: Plan, results: Mapping[str, Sequence[RunResult]]) -> str | None:
    """The release the plan pinned, else the one(s) the runs say they ran."""
    if plan.engine_version:
        return plan.engine_version
    ran = sorted({r.engine_version for rounds in results.values() for r in rounds
                  if r.engine_version})
    return ", ".join(ran) or None


def _run_notes(plan: Plan, results: Mapping[str, Sequence[RunResult]]) -> list[str]:
    """What scripts could not measure, once per note, with the cells that said it."""
    labels = {c.cell_id: c.label for c in plan.cells}
    cells_by_note: dict[str, list[str]] = {}
    for cell_id, rounds in results.items():
        for result in rounds:
            for note in result.notes:
                said = cells_by_note.setdefault(note, [])
                if labels.get(cell_id, cell_id) not in said:
                    said.append(labels.get(cell_id, cell_id))
    return [f"{note} ({', '.join(cells)})" for note, cells in cells_by_note.items()]


def analyze(
    plan: Plan,
    results: Mapping[str, Sequence[RunResult]],
    *,
    request: ReproRequest | None = None,
    logs: Mapping[str, str] | None = None,
    signatures: Sequence[Signature] | None = None,
    margin: float = verdict.DEFAULT_MARGIN,
    negligible: float = verdict.DEFAULT_NEGLIGIBLE,
) -> Findings:
    """Findings for `plan` from `results` (cell_id -> rounds of RunResults); SAME means
    within ±`margin` (the repo's `[verdict] margin_pct`), DIFFERENT beyond ±`negligible`
    (`[verdict] negligible_pct`, 0 by default)."""
    cells = {c.cell_id: summarize(c, results.get(c.cell_id, ())) for c in plan.cells}
    band = plan_noise_band(plan, results)
    same_region = verdict.margin_band(margin)
    main = main_names(plan)
    comparisons: list[ComparisonFinding] = []
    more: dict[str, int] = {}
    for comp in plan.comparisons:
        if comp.kind == "noise":
            pair = noise_finding(comp, results, margin, negligible)
            comparisons.append(pair)
            if runs := aa_runs_wanted(plan, pair):
                more[comp.name] = runs
        elif comp.kind == "ratio":
            finding, runs = ratio_finding(plan, comp, results, cells, main, margin,
                                          negligible)
            comparisons.append(finding)
            stuck = any(cells[c].status != "ok" for c in comp.numerator + comp.denominator)
            if runs and not stuck:
                more[comp.name] = runs
    by_name = {c.name: c for c in plan.comparisons if c.kind == "ratio"}
    interactions = [i for c in plan.comparisons if c.kind == "interaction"
                    if (i := interaction_finding(c, by_name, results, same_region)) is not None]
    collapse = collapse_flags(plan, cells)
    divergence = divergence_findings(plan, cells)
    hits = failure_signatures(plan, results, logs, signatures)
    graphs = graph_checks(plan, results, logs)
    runner = _runner_env(results)
    cell_list = list(cells.values())
    gpus = max(c.tensor_parallel_size * c.data_parallel_size for c in plan.cells)
    against = (against_report(request, plan, cell_list, comparisons, same_region, runner,
                              gpus_needed=gpus) if request is not None else None)
    engaged = never_engaged(plan, results, cells, comparisons,
                            steady=unsteady_pair(comparisons) is None)
    claims = key_claims(request, comparisons, against)
    # The comparison the headline leads with: the reporter's key claim, else the first main.
    asked = [c.name for c in comparisons if c.main]
    key = next((c.comparison for c in claims if c.comparison in asked),
               asked[0] if asked else "")
    measured, why = decide_outcome(request, comparisons, cells, collapse, against, plan,
                                   engaged, key)
    signal = decision_signal(request, measured, comparisons, claims, plan, engaged)
    conclusion = conclude(plan, measured, why, signal, engaged, comparisons)
    notes = list(plan.notes) + _run_notes(plan, results) + mtp_notes(plan, results)
    if band.source == "default":
        notes.append(f"A/A pair: {band.note}")
    return Findings(
        plan_hash=plan.plan_hash,
        engine=plan.engine,
        engine_version=_engine_version(plan, results),
        question=plan.question,
        outcome=conclusion.outcome,
        outcome_reason=conclusion.reason,
        headline=headline(plan, conclusion, comparisons, against, key or None),
        cells=cell_list,
        noise=band,
        comparisons=comparisons,
        interactions=interactions,
        step_fits=step_fit_findings(plan, cells),
        collapse=collapse,
        never_engaged=engaged,
        divergence=divergence,
        signatures=hits,
        hints=[*graph_hints(graphs), *outcome_hints(plan, cell_list, hits, collapse, divergence),
               *runner_hints(comparisons, margin)],
        against_report=against,
        pinned=explain(plan, comparisons, cells),
        runner_env=runner.model_dump() if runner else {},
        graphs=graphs,
        step_splits=step_splits(plan, results, logs),
        margin=margin,
        negligible=negligible,
        decided_by=signal,
        key_comparison=key,
        needs_more_runs=more,
        notes=notes,
    )
