"""vllm-mlx's own MTP counters, as its `/v1/status` reported them, one sentence a cell.

The vllm-mlx template records, per result, the draft count the plan requested, the
effective draft count the server reports, and the before/after difference of the status
counters over the timed runs (`mtp_counters`: attempted, accepted, rejected, errors and
the bypass counts). This module adds those up over a cell's rounds and says them in the
engine's words, so a report shows requested against effective draft tokens, acceptance
and why steps were not speculated, beside the throughput.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from triagebot.plan_model import Plan
from triagebot.run_result import RunResult

_COUNTERS = ("attempted", "accepted", "rejected", "errors")


def _extra(result: RunResult, name: str) -> Any:
    return (result.model_extra or {}).get(name)


def mtp_totals(rounds: Sequence[RunResult]) -> dict[str, Any] | None:
    """The counters of a cell's usable rounds added up, with the requested and effective
    draft counts; None where no round reported MTP counters."""
    totals: dict[str, Any] = dict.fromkeys(_COUNTERS, 0)
    bypass: dict[str, int] = {}
    requested = effective = None
    runs = 0
    for result in rounds:
        counters = _extra(result, "mtp_counters")
        if result.status != "ok" or not isinstance(counters, dict):
            continue
        requested = _extra(result, "requested_draft_tokens")
        effective = _extra(result, "effective_draft_tokens")
        runs += len(result.runs)
        for name in _COUNTERS:
            totals[name] += int(counters.get(name, 0))
        for name, count in (counters.get("bypass_counts") or {}).items():
            bypass[name] = bypass.get(name, 0) + int(count)
    if runs == 0:
        return None
    return {**totals, "bypass_counts": bypass, "requested_draft_tokens": requested,
            "effective_draft_tokens": effective, "runs": runs}


def mtp_switched_off(rounds: Sequence[RunResult]) -> bool:
    """Whether a usable round's server said MTP was not enabled."""
    return any(r.status == "ok" and _extra(r, "mtp_enabled") is False for r in rounds)


def mtp_notes(plan: Plan, results: Mapping[str, Sequence[RunResult]]) -> list[str]:
    """One sentence per speculating cell whose runs carry vllm-mlx MTP counters, and one
    per speculating cell whose server said MTP was off."""
    notes = []
    for cell in plan.cells:
        if cell.spec is None or cell.replica:
            continue
        rounds = results.get(cell.cell_id, ())
        totals = mtp_totals(rounds)
        if totals is None:
            if mtp_switched_off(rounds):
                notes.append(f"{cell.label}: MTP was asked for, but vllm-mlx's /v1/status "
                             "said it was not enabled; see the cell's log for why")
            continue
        verified = totals["accepted"] + totals["rejected"]
        rate = f"{totals['accepted'] / verified:.1%}" if verified else "n/a"
        bypass = ", ".join(f"{k} {v}" for k, v in sorted(totals["bypass_counts"].items()))
        requested, effective = totals["requested_draft_tokens"], totals["effective_draft_tokens"]
        sentence = (f"{cell.label}: vllm-mlx /v1/status over {totals['runs']} runs: requested "
                    f"{requested} draft tokens, effective {effective} per verify step; "
                    f"{totals['attempted']} verify steps attempted, {totals['accepted']} "
                    f"accepted, {totals['rejected']} rejected ({rate} accepted), "
                    f"{totals['errors']} errors; bypassed steps by condition (a step may "
                    f"count under several): {bypass or 'none'}")
        if requested is not None and effective is not None and effective != requested:
            sentence += (f". The server drafts {effective} token(s) per step whatever "
                         f"--mtp-num-draft-tokens asks ({requested})")
        notes.append(sentence)
    return notes
