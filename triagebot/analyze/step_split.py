"""Where a decoding step's time goes: the cells' profiled steps, per mode.

A script of a cell on the spec axis profiles one batch after its warm-ups and splits the
model runner's step into the drafter's forward, the target's forward (the verify pass
under speculation), rejection sampling, and the host time between them
(`repro_templates/vllm/step_profile.py.j2`, `triagebot/step_profile.py`). Here each spec
cell's split is set beside the no-spec step of the same mode (the cell's context apart
from speculation), profiled the same way, so the profiler's own cost falls on both
sides. On a GPU the engine's log also says which cudagraph mode the target and the
drafter ran (`graph_modes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from triagebot.analyze.findings_compare import cell_context, context_text
from triagebot.analyze.graph_modes import cudagraph_modes
from triagebot.analyze.graphs import on_gpu
from triagebot.analyze.step_split_models import CellSplit, StepPart, StepSplitFinding
from triagebot.plan_model import Cell, Plan
from triagebot.run_result import RunResult
from triagebot.step_profile import PART_WORDS, PARTS, StepProfile


def step_splits(plan: Plan, results: Mapping[str, Sequence[RunResult]],
                logs: Mapping[str, str] | None = None) -> list[StepSplitFinding]:
    """One finding per mode that has a profiled spec cell, in plan order."""
    groups: dict[tuple[tuple[str, str], ...], list[Cell]] = {}
    for cell in plan.cells:
        if cell.replica == 0:
            groups.setdefault(cell_context(cell), []).append(cell)
    out = []
    for context, members in groups.items():
        splits = [s for c in members if c.spec is not None
                  if (s := cell_split(c, results.get(c.cell_id, ()), logs)) is not None]
        if not splits:
            continue
        base_cell = next((c for c in members if c.spec is None), None)
        baseline = (cell_split(base_cell, results.get(base_cell.cell_id, ()), logs)
                    if base_cell is not None else None)
        out.append(StepSplitFinding(
            context=context_text(context), cells=splits, baseline=baseline,
            sentences=[split_sentence(s, baseline) for s in splits]))
    return out


def cell_split(cell: Cell, rounds: Sequence[RunResult],
               logs: Mapping[str, str] | None = None) -> CellSplit | None:
    """The cell's profiled steps merged over its engine starts; None where no round
    carries a profile."""
    ok = [r for r in rounds if r.status == "ok" and r.step_profile is not None]
    distinct: dict[str, StepProfile] = {}
    for r in ok:
        assert r.step_profile is not None
        distinct.setdefault(r.step_profile.model_dump_json(), r.step_profile)
    profiles = list(distinct.values())
    if not profiles:
        return None
    measured = [p for p in profiles if p.steps > 0 and p.step_s is not None]
    steps = sum(p.steps for p in measured)
    parts = [StepPart(name=name, words=PART_WORDS[name], seconds=_mean(measured, name))
             for name in PARTS]
    timed = [p for p in parts if p.seconds is not None]
    log = (logs or {}).get(cell.cell_id)
    gpu = any(on_gpu(r.env) for r in ok)
    return CellSplit(
        cell_id=cell.cell_id, cell_label=cell.label, speculates=cell.spec is not None,
        profiles=len(profiles), steps=steps, profiler=profiles[0].profiler,
        device=profiles[0].device,
        step_s=(sum(p.step_s * p.steps for p in measured if p.step_s is not None) / steps
                if steps else None),
        parts=parts,
        largest=max(timed, key=lambda p: p.seconds or 0.0).name if timed and steps else None,
        notes=list(dict.fromkeys(n for p in profiles for n in p.notes)),
        cudagraphs=cudagraph_modes(cell, log) if gpu and log is not None else None)


def _mean(profiles: Sequence[StepProfile], name: str) -> float | None:
    """Per-step mean of one part, weighted by steps; None where any start lacked it."""
    values = [(p.part(name), p.steps) for p in profiles]
    if not values or any(v is None for v, _ in values):
        return None
    steps = sum(n for _, n in values)
    return sum((v or 0.0) * n for v, n in values) / steps if steps else None


def split_sentence(split: CellSplit, baseline: CellSplit | None) -> str:
    """The largest part of a spec step, and the step against the no-spec step."""
    if split.step_s is None or split.largest is None:
        why = "; ".join(split.notes) or "no engine step was profiled"
        return f"{split.cell_label}: the step was not split ({why})"
    largest = next(p for p in split.parts if p.name == split.largest)
    share = (largest.seconds or 0.0) / split.step_s if split.step_s else 0.0
    head = (f"{split.cell_label}: a step takes {_ms(split.step_s)}, most of it "
            f"{largest.words} ({_ms(largest.seconds)}, {share:.0%})")
    if baseline is None or baseline.step_s is None or not baseline.step_s:
        return head + "; the no-spec step of this mode was not profiled"
    ratio = split.step_s / baseline.step_s
    return (f"{head}; {ratio:.2f}x the no-spec step ({_ms(baseline.step_s)}, "
            f"{baseline.cell_label}, profiled the same way; {split.steps} v "
            f"{baseline.steps} steps)")


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.2f} ms"
