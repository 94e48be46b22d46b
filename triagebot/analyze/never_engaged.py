"""Speculation asked for but never engaged: a spec cell that ran, and did not speculate.

A report of this kind (a drafter that proposes nothing after a commit, an MTP flag that
silently does nothing on one code path, an acceptance length of exactly 1.00 under one
graph mode, a server that drafts fewer tokens than it was asked to) is answered by a
counter, not by a throughput ratio. Each case is named with the counter that shows it:

- `zero_drafts`: the engine's counters show no draft at all over the timed runs (vLLM's
  `num_drafts`, vllm-mlx's attempted verify steps), or the server said MTP was off;
- `length_one`: drafts were proposed and none was accepted (mean acceptance length
  exactly 1.00), on a drafter that is not random by construction;
- `effective_below_requested`: the server drafts fewer tokens per step than requested
  (vllm-mlx's `/v1/status`);
- `matches_no_spec`: the spec arm's throughput is SAME as the no-spec arm's (the
  verdict's own equivalence test) and so is its count of tokens per target step; not
  claimed while the A/A pair says the runner was unsteady.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from triagebot.analyze.findings_compare import random_drafter, spec_pair
from triagebot.analyze.findings_models import CellFinding, ComparisonFinding
from triagebot.analyze.mtp_status import mtp_switched_off, mtp_totals
from triagebot.analyze.outcome_models import NeverEngaged, NeverEngagedCase
from triagebot.analyze.spec import SAME_TOKENS_PER_STEP
from triagebot.plan.synthetic import is_pinned
from triagebot.plan_model import Cell, Plan
from triagebot.run_result import RunResult

_CASE_WORDS: dict[NeverEngagedCase, str] = {
    "zero_drafts": "zero drafts", "length_one": "acceptance length exactly 1.00",
    "effective_below_requested": "fewer draft tokens than requested",
    "matches_no_spec": "runs like no speculation"}


def _found(cell: Cell, case: NeverEngagedCase, counter: str, shows: str,
           runs: int) -> NeverEngaged:
    return NeverEngaged(cell_id=cell.cell_id, label=cell.label, case=case, counter=counter,
                        sentence=f"{_CASE_WORDS[case]} on {cell.label}, {shows} ({counter}; "
                                 f"{runs} runs)")


_STATUS = "vllm-mlx /v1/status mtp."


def _mtp_cases(cell: Cell, rounds: Sequence[RunResult]) -> list[NeverEngaged]:
    """The cases vllm-mlx's /v1/status shows (its template records them per round)."""
    totals = mtp_totals(rounds)
    if totals is None:
        if mtp_switched_off(rounds):
            runs = sum(len(r.runs) for r in rounds if r.status == "ok")
            return [_found(cell, "zero_drafts", f"{_STATUS}enabled",
                           "MTP was asked for and the server says it is not enabled", runs)]
        return []
    out = []
    runs, attempted, accepted = totals["runs"], totals["attempted"], totals["accepted"]
    if attempted == 0:
        out.append(_found(cell, "zero_drafts", f"{_STATUS}attempted",
                          "0 verify steps attempted", runs))
    elif accepted == 0:
        out.append(_found(cell, "length_one", f"{_STATUS}accepted",
                          f"0 of {attempted} verify steps accepted", runs))
    requested, effective = totals["requested_draft_tokens"], totals["effective_draft_tokens"]
    if isinstance(requested, int) and isinstance(effective, int) and effective < requested:
        out.append(_found(cell, "effective_below_requested", f"{_STATUS}effective_draft_tokens",
                          f"requested {requested} and effective {effective} per verify step",
                          runs))
    return out


def _counter_cases(cell: Cell, found: CellFinding) -> list[NeverEngaged]:
    """The cases the engine's spec-decode counters show (vLLM's, the reference engine's)."""
    acc = found.acceptance
    if acc is None:
        return []
    runs = found.throughput.n
    if acc.num_drafts == 0:
        return [_found(cell, "zero_drafts", "spec-decode counter num_drafts", "0 drafts",
                       runs)]
    if acc.num_accepted_tokens == 0 and not random_drafter(cell):
        return [_found(cell, "length_one", "spec-decode counter num_accepted_tokens",
                       f"0 of {acc.num_draft_tokens} drafted tokens accepted over "
                       f"{acc.num_drafts} drafts", runs)]
    return []


def _like_no_spec(plan: Plan, comp: ComparisonFinding,
                  cells: Mapping[str, CellFinding]) -> NeverEngaged | None:
    """A spec arm SAME as its no-spec arm in throughput and in tokens per target step."""
    pair = spec_pair(plan, comp.numerator, comp.denominator)
    res = comp.result
    if pair is None or is_pinned(pair[0]) or res.verdict != "SAME" or res.ratio is None:
        return None
    spec, base = cells[pair[0].cell_id], cells[pair[1].cell_id]
    a, b = spec.tokens_per_step, base.tokens_per_step
    if a is None or b is None or abs(math.log(a / b)) >= math.log1p(SAME_TOKENS_PER_STEP):
        return None
    return _found(pair[0], "matches_no_spec",
                  f"throughput verdict and tokens per target step from "
                  f"{spec.tokens_per_step_source}",
                  f"throughput SAME as {base.label} at {res.ratio:.2f}x and {a:.2f} tokens "
                  f"per target step against {b:.2f}", min(res.n_a, res.n_b))


def never_engaged(
    plan: Plan,
    results: Mapping[str, Sequence[RunResult]],
    cells: Mapping[str, CellFinding],
    comparisons: Sequence[ComparisonFinding],
    *,
    steady: bool,
) -> list[NeverEngaged]:
    """Every case that holds, per first-replica spec cell with usable runs; `steady` is
    False when the A/A pair came out DIFFERENT (then no throughput match is claimed). A
    pinned-acceptance arm is left out: its acceptance is set by the plan, not engaged by
    the configuration the report asked about."""
    out: list[NeverEngaged] = []
    for cell in plan.cells:
        found = cells[cell.cell_id]
        if cell.spec is None or cell.replica or found.status != "ok" or is_pinned(cell):
            continue
        out.extend(_mtp_cases(cell, results.get(cell.cell_id, ())))
        out.extend(_counter_cases(cell, found))
    if steady:
        shown = {(e.cell_id, e.case) for e in out}
        for comp in comparisons:
            like = _like_no_spec(plan, comp, cells) if comp.kind == "ratio" else None
            if like is not None and (like.cell_id, like.case) not in shown:
                shown.add((like.cell_id, like.case))
                out.append(like)
    return out
