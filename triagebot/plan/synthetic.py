"""Synthetic-acceptance arms: copies of a plan's spec cells whose acceptance the engine pins
(vLLM's `rejection_sample_method="synthetic"`: each draft position is accepted at a set
rate, whatever the drafter proposed), each compared with the no-spec cell of its mode.

A spec cell slower than no spec has two possible causes that need different fixes: a
drafter that accepts less here than for the reporter, or a step that costs more than any
acceptance repays. Pinned at full acceptance, the arm measures what the step costs when
every draft is kept; pinned at the reporter's acceptance, it measures what speculation
would be worth with the reporter's drafter. The arms are added to a plan only after its
first verdicts call for them (`analyze/synthetic.py` decides which); this module only
builds the cells. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.engines import vllm as vllm_engine
from triagebot.engines import vllm_catalog
from triagebot.errors import PlanRejected
from triagebot.plan import cpu
from triagebot.plan.cells import cell_id
from triagebot.plan_model import Cell, Comparison, Plan, SpecParams

PinName = Literal["full", "reported"]
# The comparison names start with these, so the analysis and the report find the arms.
PREFIX = "pinned "
ADDED = "added "
# How the run's notes about pinned arms begin, so the report shows them with the arms.
NOTE = "Pinned-acceptance arms"
# How the label of a cell's offline copy ends (`offline_copy`).
OFFLINE = " (offline)"


class Pin(BaseModel):
    """One acceptance to pin: unconditional per-position rates, and where they came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: PinName
    rates: list[float] = Field(min_length=1, max_length=16)
    source: str

    @property
    def length(self) -> float:
        """The mean acceptance length these rates give: 1 + the sum of the rates."""
        return 1.0 + sum(self.rates)


class ArmRequest(BaseModel):
    """A measured spec cell to pin, and the no-spec cell of the same mode it is set against
    (None: the plan has none, and one is added beside the arms)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec_cell: str
    base_cell: str | None = None
    mode: str = Field(description="what the two cells share, e.g. 'eager'")


def full_pin(k: int) -> Pin:
    return Pin(name="full", rates=[1.0] * k, source="every draft accepted")


def reported_pin(k: int, *, length: float | None = None, rate: float | None = None,
                 per_position: Sequence[float] | None = None) -> Pin | None:
    """The reporter's acceptance as per-position rates for k drafts, or None when the
    report states none that k drafts can reach.

    Per-position rates are taken as stated (vLLM's synthetic mode wants them
    non-increasing). A mean length L or an overall rate r names no per-position shape:
    the rates are those of one conditional rate c kept at every position
    (unconditional c, c^2, ...), with c solved from L or r; for k = 1 both are exact."""
    if per_position:
        rates = [min(max(float(r), 0.0), 1.0) for r in per_position[:k]]
        if len(rates) == k and all(a >= b for a, b in itertools.pairwise(rates)):
            return Pin(name="reported", rates=rates,
                       source="the report's per-position acceptance")
    if length is not None and 1.0 < length <= k + 1:
        c = _solve(lambda c: sum(c ** (i + 1) for i in range(k)), length - 1.0)
        return Pin(name="reported", rates=_geometric(c, k),
                   source=f"the report's acceptance length {length:.2f}"
                   + ("" if k == 1 else ", one conditional rate at every position"))
    if rate is not None and 0.0 < rate <= 1.0:
        c = _solve(lambda c: sum(c ** (i + 1) for i in range(k)) / k, rate)
        return Pin(name="reported", rates=_geometric(c, k),
                   source=f"the report's acceptance rate {rate:.0%}"
                   + ("" if k == 1 else ", one conditional rate at every position"))
    return None


def _geometric(c: float, k: int) -> list[float]:
    return [round(c ** (i + 1), 6) for i in range(k)]


def _solve(f: Callable[[float], float], target: float) -> float:
    """c in [0, 1] with f(c) = target, for f increasing (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def is_pinned(cell: Cell) -> bool:
    """Whether the cell's acceptance is pinned: its drafts are kept at a set rate, so its
    tokens follow the drafter and its acceptance is not the drafter's."""
    return cell.spec is not None and cell.spec.rejection_sample_method == "synthetic"


def why_not(plan: Plan) -> str | None:
    """Why this plan's engine release cannot pin acceptance, or None when it can."""
    if plan.engine != "vllm":
        return f"{plan.engine} has no synthetic acceptance mode"
    return vllm_catalog.synthetic_support(plan.engine_version or "")


def add_arms(plan: Plan, requests: Sequence[ArmRequest], pins: Sequence[Pin], *,
             offline: bool = False) -> Plan:
    """`plan` with one pinned copy of each requested spec cell per pin, and a comparison
    of each against its no-spec cell. A request without a no-spec cell gets one (the spec
    cell without speculation) and a comparison of the spec cell against it, so that the
    measured arm is set against the same baseline. With `offline`, every arm, the spec
    cell it copies and its no-spec partner are driven through vLLM's offline API
    (`offline_copy`). Raises PlanRejected when the release cannot pin acceptance."""
    why = why_not(plan)
    if why is not None:
        raise PlanRejected(why, field="spec.rejection_sample_method")
    version = plan.engine_version or ""
    cells = list(plan.cells)
    comparisons = list(plan.comparisons)
    have = {c.cell_id for c in cells}
    names = {c.name for c in comparisons}

    def add(cell: Cell, comparison: Comparison | None = None) -> None:
        if cell.cell_id not in have:
            have.add(cell.cell_id)
            cells.append(cell)
        if comparison is not None and comparison.name not in names:
            names.add(comparison.name)
            comparisons.append(comparison)

    crowded = _modes_with_several(plan, requests)
    for req in requests:
        spec_cell = plan.cell(req.spec_cell)
        assert spec_cell.spec is not None
        tag = f" ({spec_cell.varies.get('spec', spec_cell.spec.method)})" \
            if req.mode in crowded else ""
        base_id = req.base_cell
        if offline:
            spec_cell, base_id = offline_copy(spec_cell), None
            add(spec_cell)
        if base_id is None:
            base = baseline_cell(spec_cell)
            base_id = base.cell_id
            add(base, Comparison(
                name=f"{ADDED}spec/no_spec @ {req.mode}{tag}", numerator=[spec_cell.cell_id],
                denominator=[base_id],
                question=f"speculation vs no speculation under {req.mode}, the no-spec arm "
                         "added to measure what speculation costs"))
        for pin in pins:
            cell = pinned_cell(spec_cell, pin, version)
            add(cell, Comparison(
                name=f"{PREFIX}{pin.name}/no_spec @ {req.mode}{tag}",
                numerator=[cell.cell_id], denominator=[base_id],
                question=f"speculation at {pin.source} (acceptance length "
                         f"{pin.length:.2f}) vs no speculation under {req.mode}"))
    return plan.model_copy(update={"cells": cells, "comparisons": comparisons})


def offline_copy(cell: Cell) -> Cell:
    """`cell` driven through vLLM's offline API (`LLM.generate`) on its prompts and
    lengths, for the cpu runner: there such an engine starts once and serves every round,
    where a served cell starts a server each round."""
    workload = cell.workload.model_copy(update={
        "kind": "offline", "api": "generate", "concurrency": None,
        "num_prompts": min(cell.workload.num_prompts, cpu.CAPS["num_prompts"])})
    draft = Cell.model_validate({
        **cell.model_dump(), "workload": workload.model_dump(),
        "template": vllm_engine.TEMPLATES["offline"], "engine_args": {},
        "label": f"{cell.label[:80 - len(OFFLINE)]}{OFFLINE}"})
    draft = draft.model_copy(update={"engine_args": vllm_engine.engine_args(draft),
                                     "env": vllm_engine.engine_env(draft)})
    done = Cell.model_validate(cpu.finish_cell(draft).model_dump())
    return done.model_copy(update={"cell_id": cell_id(done)})


def _modes_with_several(plan: Plan, requests: Sequence[ArmRequest]) -> set[str]:
    seen: dict[str, int] = {}
    for req in requests:
        seen[req.mode] = seen.get(req.mode, 0) + 1
    return {mode for mode, n in seen.items() if n > 1}


def _mode_label(cell: Cell) -> str:
    """What a cell's label says besides its speculation, e.g. "graph"."""
    return " + ".join(v for k, v in cell.varies.items() if k != "spec")


def baseline_cell(cell: Cell) -> Cell:
    """`cell` without speculation: the no-spec partner a plan of spec cells lacks."""
    args = {k: v for k, v in cell.engine_args.items() if k != "speculative_config"}
    mode = _mode_label(cell)
    base = Cell.model_validate({
        **cell.model_dump(), "spec": None, "extra_speculative_config": {},
        "engine_args": args, "label": "no_spec" + (f" + {mode}" if mode else "")
        + (OFFLINE if cell.label.endswith(OFFLINE) else ""),
        "varies": {**cell.varies, "spec": "no_spec"}, "replica": 0})
    return base.model_copy(update={"cell_id": cell_id(base)})


def pinned_cell(cell: Cell, pin: Pin, version: str) -> Cell:
    """`cell` with its acceptance pinned: the same engine arguments, the speculative
    config in synthetic mode at `pin`'s rates, a label and id of its own."""
    if cell.spec is None:
        raise PlanRejected(f"cell {cell.label!r} does not speculate", field="spec")
    k = cell.spec.num_speculative_tokens
    rates = (pin.rates + [pin.rates[-1]] * k)[:k]
    spec = SpecParams.model_validate({**cell.spec.model_dump(),
                                      "rejection_sample_method": "synthetic",
                                      "synthetic_acceptance_rates": rates})
    pinned = cell.model_copy(update={"spec": spec})
    args = dict(cell.engine_args)
    args["speculative_config"] = vllm_engine.speculative_config(pinned, version)
    mode = _mode_label(cell)
    label = f"pinned {pin.name} {1.0 + sum(rates):.2f}" + (f" + {mode}" if mode else "")
    varies = {**cell.varies, "spec": f"pinned {pin.name}"}
    pinned = Cell.model_validate({**pinned.model_dump(), "engine_args": args,
                                  "label": label, "varies": varies, "replica": 0})
    return pinned.model_copy(update={"cell_id": cell_id(pinned)})
