"""One cell's runs summarised: throughput, acceptance, counters, forward passes, errors."""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.analyze import stats
from triagebot.analyze.findings_models import (
    CellFinding,
    EncoderTimes,
)
from triagebot.analyze.spec import (
    acceptance,
    tokens_per_step,
)
from triagebot.analyze.throughput_metric import throughput_metric
from triagebot.plan_model import Cell
from triagebot.run_result import RunResult, SpecCounters

FAILED_STATUSES = ("failed", "crashed", "oom")
LOSSY_REJECTION = ("synthetic", "fly")
ERROR_CHARS = 300


# --- cells ------------------------------------------------------------------------------


def merge_counters(counters: Sequence[SpecCounters]) -> SpecCounters | None:
    """Sum of several rounds' spec counters (per-position lists padded to one length)."""
    if not counters:
        return None
    width = max(len(c.per_position_accepted) for c in counters)
    per_pos = [sum(c.per_position_accepted[i] if i < len(c.per_position_accepted) else 0
                   for c in counters) for i in range(width)]
    return SpecCounters(
        num_drafts=sum(c.num_drafts for c in counters),
        num_draft_tokens=sum(c.num_draft_tokens for c in counters),
        num_accepted_tokens=sum(c.num_accepted_tokens for c in counters),
        per_position_accepted=per_pos,
    )


def _short(text: str | None) -> str | None:
    if not text:
        return None
    first = text.strip().splitlines()
    line = first[-1] if first else ""
    return line[:ERROR_CHARS] or None


def _forward_counts(ok: Sequence[RunResult]) -> tuple[int | None, int | None]:
    """(target forward passes, output tokens) over the rounds that counted passes.

    The count is an extra field of the result (`forward_passes.target`), written by the
    transformers reference engine; a value that is not a positive integer is ignored.
    """
    steps = tokens = 0
    for r in ok:
        passes = (r.model_extra or {}).get("forward_passes")
        target = passes.get("target") if isinstance(passes, dict) else None
        if isinstance(target, int) and not isinstance(target, bool) and target > 0:
            steps += target
            tokens += sum(m.output_tokens for m in r.runs)
    return (steps, tokens) if steps and tokens else (None, None)


def _stage_mean(stage_stats: object, stage: str) -> float | None:
    entry = stage_stats.get(stage) if isinstance(stage_stats, dict) else None
    mean = entry.get("mean") if isinstance(entry, dict) else None
    if isinstance(mean, int | float) and not isinstance(mean, bool) and 0 < mean < 1e9:
        return float(mean)
    return None


def encoder_times(ok: Sequence[RunResult]) -> EncoderTimes | None:
    """The encoder's forward time (and the processor's) per request of each measured run,
    from the `mm_processor` extra field the mm-processor template writes; runs without a
    positive encoder time are left out."""
    forward: list[float] = []
    processor: list[float] = []
    calls = 0
    for r in ok:
        extra = (r.model_extra or {}).get("mm_processor")
        runs = extra.get("runs") if isinstance(extra, dict) else None
        for run in runs if isinstance(runs, list) else []:
            if not isinstance(run, dict):
                continue
            ms = _stage_mean(run.get("mm_processor_stats"), "encoder_forward_ms")
            if ms is None:
                continue
            forward.append(ms)
            pre = _stage_mean(run.get("mm_processor_stats"), "preprocessor_total_ms")
            if pre is not None:
                processor.append(pre)
            summary = run.get("encoder_summary")
            n = summary.get("total_encoder_calls") if isinstance(summary, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                calls += n
    if not forward:
        return None
    return EncoderTimes(encoder_forward_ms=forward, preprocessor_ms=processor,
                        encoder_calls=calls)


def summarize(cell: Cell, rounds: Sequence[RunResult]) -> CellFinding:
    """One cell's rounds merged: runs concatenated, counters summed, failures explained."""
    ok = [r for r in rounds if r.status == "ok"]
    samples = stats.samples_from(ok)
    notes: list[str] = []
    bad = [r for r in rounds if r.status != "ok"]
    if ok and bad:
        notes.append(f"{len(bad)} of {len(rounds)} rounds did not finish ok "
                     f"({', '.join(sorted({r.status for r in bad}))}); their runs are left out")
    digests = {r.outputs_digest for r in ok if r.outputs_digest}
    if len(digests) > 1:
        notes.append("rounds of this cell produced different outputs: the engine is not "
                     "deterministic here, so output comparisons are not checked")
    counters = merge_counters([r.spec for r in ok if r.spec is not None])
    acc = acceptance(counters) if counters is not None else None
    per_step = tokens_per_step(acc, *_forward_counts(ok))
    status: str
    error = None
    if not rounds:
        status, error = "missing", "no result was recorded for this cell"
    elif not ok:
        last = bad[-1]
        status, error = last.status, _short(last.error) or f"status {last.status}"
    elif not samples:
        status, error = "no_runs", "finished ok but recorded no measured runs"
    else:
        status = "ok"
    return CellFinding(
        cell_id=cell.cell_id,
        label=cell.label,
        varies=dict(cell.varies),
        replica=cell.replica,
        status=status,
        error=error,
        rounds=len(rounds),
        notes=notes,
        throughput=stats.summarize_cell(samples),
        cpu_throughput=(stats.summarize_cell(cpu) if (cpu := stats.cpu_samples_from(ok))
                        else None),
        acceptance=acc,
        tokens_per_step=per_step[0] if per_step else None,
        tokens_per_step_source=per_step[1] if per_step else None,
        outputs_digest=next(iter(digests)) if len(digests) == 1 else None,
        encoder=encoder_times(ok),
        throughput_metric=throughput_metric(cell),
    )
