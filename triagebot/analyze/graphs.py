"""Did the graph axis run as labelled? CUDA graphs per cell, read from what ran.

On a runner with a GPU, a cell on the graph side of the graph axis must show that CUDA
graphs replayed, and a cell on the eager side that none did; otherwise the comparison
between them is not the one its labels name. The evidence is the script's own reading
where it takes one (the transformers engine on CUDA: the CUDA graphs and kernels a
profiled generate launched, from torch.profiler, and inductor's cudagraph skips) and
otherwise the engine's log (vLLM's graph capture lines). A graph cell with neither is
flagged: no evidence is never taken for graphs. Results read without their logs are
not judged. A CPU has no CUDA graphs to check; the plan's notes say what "graph" means
there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from triagebot.analyze.findings_models import GraphCheck, Hint
from triagebot.plan_model import Cell, Plan
from triagebot.run_result import CudaGraphEvidence, RunEnv, RunResult

# vLLM's model runner logs these around its CUDA graph capture.
_CAPTURE = re.compile(r"Graph capturing finished[^\n]*|Capturing CUDA graphs?[^\n]{0,80}")
# Worst first: the state a cell gets when its rounds disagree.
_SEVERITY = ("none", "partial", "unknown", "replayed", "eager")


def on_gpu(env: RunEnv) -> bool:
    """The run had a usable GPU (a CPU run says cuda 'none')."""
    return env.cuda not in (None, "none") and (env.gpu_count or 0) > 0


def graph_checks(plan: Plan, results: Mapping[str, Sequence[RunResult]],
                 logs: Mapping[str, str] | None = None) -> list[GraphCheck]:
    """One check per cell of the graph axis that ran on a GPU."""
    out = []
    for cell in plan.cells:
        if "graph" not in cell.varies:
            continue
        ok = [r for r in results.get(cell.cell_id, ()) if r.status == "ok"]
        if not any(on_gpu(r.env) for r in ok):
            continue
        readings = [r.cuda_graphs for r in ok if r.cuda_graphs is not None]
        log = (logs or {}).get(cell.cell_id)
        if readings or log is not None:
            # Results alone, without the runs' logs, are not enough to judge either way.
            out.append(_check(cell, readings, log or ""))
    return out


def graph_hints(checks: Sequence[GraphCheck]) -> list[Hint]:
    return [Hint(severity="warning" if c.state == "unknown" else "error", source="graphs",
                 text=c.sentence, cells=[c.cell_label]) for c in checks if c.flagged]


def _check(cell: Cell, readings: Sequence[CudaGraphEvidence], log: str) -> GraphCheck:
    arm = "eager" if cell.enforce_eager else "graph"
    if readings:
        judged = [_judge(arm, r) for r in readings]
        state, sentence = min(judged, key=lambda j: _SEVERITY.index(j[0]))
        worst = sum(1 for s, _ in judged if s == state)
        if len(judged) > 1 and worst < len(judged):
            sentence += f" (in {worst} of {len(judged)} starts)"
        source = readings[0].source
    else:
        captured = _CAPTURE.search(log) if arm == "graph" else None
        if captured:
            state, source = "replayed", "engine log"
            sentence = f"the engine's log shows CUDA graph capture: \"{captured.group(0)[:120]}\""
        else:
            state, source = "unknown", None
            sentence = ("no evidence that CUDA graphs ran: the script took no reading and "
                        "the log shows no capture" if arm == "graph" else
                        "no reading of CUDA graph launches")
    flagged = state in ("none", "partial") or (state == "unknown" and arm == "graph")
    return GraphCheck(cell_id=cell.cell_id, cell_label=cell.label, arm=arm, state=state,
                      flagged=flagged, source=source, sentence=f"{cell.label}: {sentence}")


def _judge(arm: str, r: CudaGraphEvidence) -> tuple[str, str]:
    if r.error is not None or r.graph_launches is None or r.target_forwards is None:
        return "unknown", f"the CUDA graph reading failed ({r.error or 'no figures'})"
    decode = max(r.target_forwards - r.prefills, 0)
    skips = r.cudagraph_skips or 0
    counts = (f"{r.graph_launches} CUDA graph launches and {r.kernel_launches} single "
              f"kernel launches over {decode} decode steps of a profiled generate "
              f"({r.source})")
    if arm == "eager":
        if r.graph_launches == 0:
            return "eager", f"eager as labelled: {counts}"
        return "partial", f"labelled eager but launched CUDA graphs: {counts}"
    if r.graph_launches == 0:
        return "none", (f"ran without CUDA graphs: {counts}; its graph/eager ratios compare "
                        "eager with eager")
    if r.graph_launches < decode or skips:
        return "partial", (f"only partly ran as CUDA graphs: {counts}, and inductor skipped "
                           f"CUDA graphs {skips} time(s); its graph/eager ratios mix graph "
                           "and eager steps")
    return "replayed", f"CUDA graphs replayed: {counts}; inductor skipped none"
