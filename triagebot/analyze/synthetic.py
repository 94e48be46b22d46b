"""Why speculation is slower: a weak drafter, or a step no acceptance repays.

Two decisions, both pure:

- `called_for`: whether a plan's first verdicts call for pinned-acceptance arms
  (`plan/synthetic.py`), and which. They are called for when a spec/no-spec comparison
  is DIFFERENT below 1, or when the acceptance measured here differs from the
  reporter's; each compared mode then gets an arm at full acceptance, and one at the
  reporter's acceptance where the report states it.
- `explain`: per mode, what the pinned arms measured. A spec step at acceptance length L
  emits L tokens where a plain step emits one, so with the throughput ratio R of spec
  over no spec the spec step costs c = L / R plain steps, and speculation pays from
  acceptance length c on: that is the break-even length. At full acceptance L = k + 1
  is known exactly, so c there is measured rather than inferred from a drafter's
  counters. Then:
  - if speculation is slower even at full acceptance, the cost is in the step;
  - if it would be faster at the reporter's acceptance, the drafter's acceptance on this
    runner explains the slowdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from triagebot.analyze.findings_models import (
    CellFinding,
    ComparisonFinding,
    ComparisonResult,
)
from triagebot.analyze.synthetic_models import Cause, PinnedMode
from triagebot.plan.synthetic import (
    PREFIX,
    ArmRequest,
    Pin,
    full_pin,
    is_pinned,
    reported_pin,
    why_not,
)
from triagebot.plan_model import Cell, Plan
from triagebot.request_model import ReproRequest


class PinnedCall(BaseModel):
    """Pinned arms a plan's first verdicts call for, and why."""

    model_config = ConfigDict(extra="forbid")

    reason: str
    requests: list[ArmRequest]
    pins: list[Pin]


# Where a break-even length came from, as the report explains it.
PINNED_SOURCE = ("the arm pinned at full acceptance: a step there emits k + 1 tokens, so "
                 "its cost in plain steps is (k + 1) / its speedup")
COUNTER_SOURCE = ("the acceptance counters: a step emits the measured acceptance length L, "
                  "so its cost in plain steps is L / speedup, taken to be the same at any "
                  "acceptance")


def called_for(plan: Plan, comparisons: Sequence[ComparisonFinding],
               cells: Mapping[str, CellFinding],
               request: ReproRequest | None) -> PinnedCall | str | None:
    """The arms to add, a sentence saying why none can be (the release has no synthetic
    mode), or None when the verdicts do not call for them (or the plan has them)."""
    if any(is_pinned(c) for c in plan.cells):
        return None
    spec_cells = [c for c in plan.cells if c.spec and not c.replica and not is_pinned(c)]
    if not spec_cells:
        return None
    pairs = spec_pairs(plan, comparisons)
    slower = [f.name for f, _, _ in pairs
              if f.result.verdict == "DIFFERENT" and (f.result.ratio or 1.0) < 1.0]
    differs = _acceptance_differs(spec_cells, cells, request)
    if not slower and differs is None:
        return None
    why = why_not(plan)
    if why is not None:
        return why
    k = max(c.spec.num_speculative_tokens for c in spec_cells if c.spec)
    pins = [full_pin(k)]
    reported = request.reported_metrics if request is not None else None
    if reported is not None:
        pin = reported_pin(k, length=reported.acceptance_length, rate=reported.acceptance_rate)
        if pin is not None:
            pins.append(pin)
    reason = (f"{', '.join(slower)} {'is' if len(slower) == 1 else 'are'} DIFFERENT below 1"
              if slower else differs or "")
    partner = {spec.cell_id: base.cell_id for _, spec, base in pairs}
    requests = [ArmRequest(spec_cell=c.cell_id, base_cell=partner.get(c.cell_id),
                           mode=_mode(c) or "the plan's mode") for c in spec_cells]
    return PinnedCall(reason=reason, requests=requests, pins=pins)


def spec_pairs(plan: Plan, comparisons: Sequence[ComparisonFinding]
               ) -> list[tuple[ComparisonFinding, Cell, Cell]]:
    """(finding, spec cell, no-spec cell) of every measured spec/no-spec comparison: one
    cell each side, differing only by speculation, neither an A/A replica nor pinned."""
    out = []
    for f in comparisons:
        if f.kind != "ratio" or len(f.numerator) != 1 or len(f.denominator) != 1:
            continue
        num, den = plan.cell(f.numerator[0]), plan.cell(f.denominator[0])
        if (num.spec is None or den.spec is not None or is_pinned(num) or num.replica
                or den.replica or _mode(num) != _mode(den)):
            continue
        out.append((f, num, den))
    return out


def _mode(cell: Cell) -> str:
    return " ".join(v for k, v in cell.varies.items() if k != "spec")


def _acceptance_differs(spec_cells: Sequence[Cell], cells: Mapping[str, CellFinding],
                        request: ReproRequest | None) -> str | None:
    """A sentence when a spec cell's acceptance length here is off the reporter's by more
    than the counters' own sampling spread allows."""
    if request is None or request.reported_metrics.acceptance_length is None:
        return None
    theirs = request.reported_metrics.acceptance_length
    for spec in spec_cells:
        acc = cells[spec.cell_id].acceptance
        if acc is None or acc.mean_acceptance_length is None or acc.num_drafts <= 0:
            continue
        ours = acc.mean_acceptance_length
        k = spec.spec.num_speculative_tokens if spec.spec else 1
        # Each draft adds 0..k accepted tokens: its sd is at most k / 2.
        spread = 2.576 * (k / 2) / math.sqrt(acc.num_drafts)
        if abs(ours - theirs) > spread:
            return (f"the acceptance length measured on {spec.label} ({ours:.2f}) differs "
                    f"from the reported {theirs:.2f}")
    return None


def explain(plan: Plan, comparisons: Sequence[ComparisonFinding],
            cells: Mapping[str, CellFinding]) -> list[PinnedMode]:
    """Per compared mode: the pinned arms' ratios, the break-even acceptance length and
    which explanation the measurements support. Modes without pinned arms get the
    break-even length from the spec cell's own acceptance, as the fit did before."""
    out = []
    for finding, spec, base in spec_pairs(plan, comparisons):
        mode = _mode(spec)
        pinned = {_pin_name(c.name): c for c in comparisons
                  if c.name.startswith(PREFIX) and c.denominator == [base.cell_id]
                  and _pins(plan.cell(c.numerator[0]), spec)}
        out.append(_mode_finding(plan, finding, spec, cells, mode, pinned))
    return out


def _pins(pinned: Cell, spec: Cell) -> bool:
    """Whether `pinned` is a pinned copy of `spec`'s drafter."""
    a, b = pinned.spec, spec.spec
    return (a is not None and b is not None and a.method == b.method
            and a.num_speculative_tokens == b.num_speculative_tokens
            and a.draft_model == b.draft_model)


def _pin_name(name: str) -> str:
    return name[len(PREFIX):].split("/", 1)[0]


def _mode_finding(plan: Plan, finding: ComparisonFinding, spec: Cell,
                  cells: Mapping[str, CellFinding], mode: str,
                  pinned: Mapping[str, ComparisonFinding]) -> PinnedMode:
    assert spec.spec is not None
    k = spec.spec.num_speculative_tokens
    method = spec.spec.method
    acc = cells[spec.cell_id].acceptance
    measured = acc.mean_acceptance_length if acc else None
    res = finding.result
    full = pinned.get("full")
    rep = pinned.get("reported")
    rep_cell = plan.cell(rep.numerator[0]) if rep else None
    rep_length = (1.0 + sum(rep_cell.spec.synthetic_acceptance_rates or [])
                  if rep_cell and rep_cell.spec else None)
    if full is not None and full.result.ratio:
        length = float(k + 1)
        even, even_ci = _cost(length, full.result)
        source = PINNED_SOURCE
    elif measured and res.ratio:
        even, even_ci = _cost(measured, res)
        source = COUNTER_SOURCE
    else:
        even, even_ci, source = None, None, ""
    where = f" under {mode}" if mode else ""
    cause, sentence = _verdict_sentence(method, k, where, measured,
                                        _Weighed(res, full, rep, rep_length), even, even_ci)
    return PinnedMode(
        mode=mode, method=method, k=k, measured_length=measured, measured_ratio=res.ratio,
        full_ratio=full.result.ratio if full else None,
        full_ci=_ci(full.result) if full else None,
        full_verdict=full.result.verdict if full else None,
        reported_length=rep_length,
        reported_source=rep.question if rep else None,
        reported_ratio=rep.result.ratio if rep else None,
        reported_ci=_ci(rep.result) if rep else None,
        reported_verdict=rep.result.verdict if rep else None,
        break_even=even, break_even_ci=even_ci, break_even_source=source,
        cause=cause, sentence=sentence)


def _ci(res: ComparisonResult) -> tuple[float, float] | None:
    if res.ci_low and res.ci_high:
        return (res.ci_low, res.ci_high)
    return None


def _cost(length: float, res: ComparisonResult) -> tuple[float | None,
                                                          tuple[float, float] | None]:
    """A spec step's cost in plain steps, length / ratio, and its interval (the ratio's
    interval carried through, ends swapped)."""
    if not res.ratio or res.ratio <= 0:
        return None, None
    ci = _ci(res)
    return length / res.ratio, (length / ci[1], length / ci[0]) if ci else None


def _x(ratio: float | None, ci: tuple[float, float] | None) -> str:
    if ratio is None:
        return "unmeasured"
    return f"{ratio:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


_NAMES = {"mtp": "MTP", "eagle": "EAGLE", "eagle3": "EAGLE-3", "ngram": "ngram",
          "draft_model": "draft-model", "suffix": "suffix", "dflash": "DFlash",
          "medusa": "Medusa"}


@dataclass(frozen=True)
class _Weighed:
    """What the sentence weighs: the spec cell's comparison, its pinned arms (full
    acceptance, the reporter's) and the acceptance length the reporter's arm pins."""

    res: ComparisonResult
    full: ComparisonFinding | None
    rep: ComparisonFinding | None
    rep_length: float | None


def _verdict_sentence(method: str, k: int, where: str, measured: float | None,
                      weighed: _Weighed, even: float | None,
                      even_ci: tuple[float, float] | None) -> tuple[Cause, str]:
    res, full, rep, rep_length = weighed.res, weighed.full, weighed.rep, weighed.rep_length
    name = _NAMES.get(method, method)
    pays = (f"it pays from acceptance length {even:.2f}"
            + (f" [{even_ci[0]:.2f}, {even_ci[1]:.2f}]" if even_ci else "")
            if even is not None else "")
    slower = res.verdict == "DIFFERENT" and (res.ratio or 1.0) < 1.0
    if full is not None and full.result.verdict == "DIFFERENT" and (full.result.ratio or 1) < 1:
        cost = (f"{even:.1f}x" + (f" [{even_ci[0]:.1f}, {even_ci[1]:.1f}]" if even_ci else "")
                if even is not None else "more than")
        return "step", (f"at full acceptance the {name} step still costs {cost} a plain "
                        f"step{where}, so no drafter can make k={k} pay on this runner: "
                        "the cost is in the step")
    if rep is not None and rep_length is not None:
        rr = rep.result
        if rr.verdict == "DIFFERENT" and (rr.ratio or 1) > 1 and slower:
            here = f" ({measured:.2f} here)" if measured is not None else ""
            return "drafter", (f"at the reporter's acceptance length {rep_length:.2f} "
                               f"speculation would run {_x(rr.ratio, _ci(rr))} as fast as "
                               f"no speculation{where}: the drafter's acceptance{here} "
                               "explains the slowdown")
        if rr.verdict == "DIFFERENT" and (rr.ratio or 1) < 1:
            fast = (full is not None and full.result.verdict == "DIFFERENT"
                    and (full.result.ratio or 1) > 1)
            tail = (f"; {pays}, above the reporter's {rep_length:.2f}" if pays else "")
            return ("both" if fast else "step"), (
                f"at the reporter's acceptance length {rep_length:.2f} speculation still "
                f"runs {_x(rr.ratio, _ci(rr))} of no speculation{where}{tail}: a drafter "
                "that accepts as the reporter's does would not be enough, the step costs "
                "too much for it")
    if full is not None and full.result.verdict == "DIFFERENT" and (full.result.ratio or 1) > 1:
        if slower and measured is not None and even is not None and measured < even:
            return "drafter", (f"at full acceptance speculation runs "
                               f"{_x(full.result.ratio, _ci(full.result))} as fast as no "
                               f"speculation{where}, and {pays}; the {measured:.2f} accepted "
                               "here is below that: the drafter's acceptance explains the "
                               "slowdown")
        return "undecided", (f"at full acceptance speculation runs "
                             f"{_x(full.result.ratio, _ci(full.result))} as fast as no "
                             f"speculation{where}" + (f"; {pays}" if pays else ""))
    if full is not None:
        return "undecided", (f"at full acceptance speculation{where} is "
                             f"{_x(full.result.ratio, _ci(full.result))} of no speculation, "
                             f"{full.result.verdict}: the runs could not tell the step's "
                             "cost from the drafter's acceptance"
                             + (f"; {pays}" if pays else ""))
    if even is not None:
        here = f"; {measured:.2f} is accepted here" if measured is not None else ""
        return "undecided", (f"{name} k={k}{where}: a spec step costs {even:.2f} plain steps, "
                             f"so {pays}{here} (from the acceptance counters; no arm "
                             "pinned acceptance)")
    return "undecided", f"{name} k={k}{where}: nothing measured tells the cause apart"
