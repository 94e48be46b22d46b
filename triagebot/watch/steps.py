"""What a watch step runs, and what it read.

A step repeats the comparison that decided the thread's report (e.g. `spec/no_spec @
graph`) at the last release measured and at the new one, in one plan, so both run side
by side in one job on one runner with the existing group-sequential verdict; figures
stored from another day are never compared. The new release's ratio over the old one's
is the plan's interaction, and the A/A pair of the new release's plan is kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from triagebot.analyze.findings_models import ComparisonResult, Findings, Interaction
from triagebot.errors import PlanRejected
from triagebot.model import Cell, Comparison, Plan
from triagebot.watch.models import Ratio, Reading
from triagebot.watch.states import direction_of, holds

# A cell status that says the release could not run the configuration.
_FAILED = ("failed", "crashed", "oom", "timeout", "hang", "config_rejected")
# Plan refusals that name a configuration key (`engines.vllm._rejected`'s fields).
_CONFIG_SECTIONS = ("speculative_config.", "compilation_config.", "engine_argument.")
# The line a Python program dies on: `TypeError: ...`, `vllm.x.SomeError: ...`, after
# vLLM's log prefix where a worker process logged it (`(Worker pid=1) ERROR 11-28
# 19:38:04 [multiproc_executor.py:962] TypeError: ...`).
_LOG_PREFIX = re.compile(r"^\s*(?:\(\w+ pid=\d+\)\s*)?(?:[A-Z]+ \d\d-\d\d [\d:.]+ \[[^\]]*\]\s*)?")
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$")
# A wrapper that points at the real error above it.
_WRAPPER = "root cause"
LINE_CHARS = 300


def deciding_comparison(findings: Findings, symptom: str | None) -> str:
    """The comparison that decided a report: among its main comparisons, first those
    where the reporter's own figure shows the symptom (e.g. MTP at 0.56x under graphs,
    not the 1.53x they saw under eager), then the other ones they gave a figure for,
    then the rest; of these, the first our runs show the symptom in, else the first."""
    main = [c for c in findings.comparisons if c.main and c.kind == "ratio"]
    if not main:
        raise PlanRejected("the report has no main comparison to watch")
    reported = {r.comparison: r.reported for r in (findings.against_report.ratios
                                                    if findings.against_report else [])}

    def rank(name: str) -> int:
        if name not in reported:
            return 2
        figure = Ratio(value=reported[name], verdict="DIFFERENT")
        return 0 if holds(figure, direction_of(symptom, figure)) else 1

    ordered = sorted(main, key=lambda c: rank(c.name))  # stable: plan order within a rank
    for comp in ordered:
        ratio = ratio_of(comp.result)
        if holds(ratio, direction_of(symptom, ratio)):
            return comp.name
    return ordered[0].name


def step_names(deciding: str, new: str, old: str | None, *, tagged: bool = False
               ) -> tuple[str, str, str]:
    """The step plan's names: the ratio at the new release, at the old, and the change
    (`tagged`: named after the comparison too, for a step that holds several)."""
    change = f"{new} / {old}"
    return (f"{deciding} [{new}]", f"{deciding} [{old}]",
            f"{deciding} [{change}]" if tagged else change)


def step_plan(new: Plan, old: Plan | None, deciding: str | Sequence[str]) -> Plan:
    """The deciding comparison's cells at both releases and the new release's A/A pair,
    as one plan; with no old release (the first one measured), the new release alone.
    Several comparisons (a sentinel case's spec/no-spec in each mode) each get theirs,
    their changes named after them (`step_names(..., tagged=True)`)."""
    names = [deciding] if isinstance(deciding, str) else list(deciding)
    new_v = new.engine_version or ""
    old_v = old.engine_version if old is not None else None
    cells: list[Cell] = []
    comps: list[Comparison] = []
    for name in names:
        now_name, then_name, change_name = step_names(name, new_v, old_v,
                                                      tagged=len(names) > 1)
        now = _comparison(new, name)
        cells += _cells(new, now.numerator + now.denominator, new_v)
        comps.append(now.model_copy(update={"name": now_name}))
        if old is not None:
            then = _comparison(old, name)
            cells += _cells(old, then.numerator + then.denominator, old.engine_version or "")
            comps += [then.model_copy(update={"name": then_name}),
                      Comparison(name=change_name, kind="interaction", of=[now_name, then_name],
                                 question=f"Is {name} at {new_v} further from 1 than at "
                                          f"{old_v}?")]
    cells = list({(c.cell_id, c.version): c for c in cells}.values())
    aa = next((c for c in new.comparisons if c.kind == "noise"
               and set(c.denominator) <= {x.cell_id for x in cells}), None)
    if aa is not None:
        have = {c.cell_id for c in cells}
        cells += _cells(new, [x for x in aa.numerator if x not in have], new_v)
        comps.append(aa)
    versus = f" against {old_v}" if old is not None else ""
    digest = hashlib.sha256(":".join(c.cell_id for c in cells).encode()).hexdigest()[:12]
    per_cell = new.estimated_seconds / max(1, len(new.cells))
    return new.model_copy(update={
        "plan_hash": digest, "cells": cells, "comparisons": comps,
        "question": f"Watch: does {' and '.join(names)} still hold at {new_v}{versus}?",
        "estimated_seconds": round(per_cell * len(cells), 1)})


def _comparison(plan: Plan, name: str) -> Comparison:
    found = next((c for c in plan.comparisons if c.name == name and c.kind == "ratio"), None)
    if found is None:
        raise PlanRejected(f"{plan.engine} {plan.engine_version}'s plan has no comparison "
                           f"{name!r} to watch", field="comparison",
                           accepted=[c.name for c in plan.comparisons if c.kind == "ratio"])
    return found


def _cells(plan: Plan, ids: list[str], release: str) -> list[Cell]:
    """The cells, each labelled with its release (a step holds two releases' cells)."""
    out = []
    for cid in dict.fromkeys(ids):
        cell = plan.cell(cid)
        out.append(cell.model_copy(update={"label": f"{cell.label} {release}"[:80]}))
    return out


def read_step(plan: Plan, findings: Findings, deciding: str, logs: Mapping[str, str],
              against: str | None) -> Reading:
    """What the step's findings say: a crash of the new release (its line), the old
    release failing this time (inconclusive), or the ratios."""
    release = plan.engine_version or ""
    now_name, _, change_name = step_names(deciding, release, against)
    base = Reading(release=release, against=against, comparison=deciding,
                   margin=findings.margin)
    failed = [c for c in findings.cells if c.status in _FAILED]
    versions = {c.cell_id: c.version for c in plan.cells}
    mine = [c for c in failed if against is None or versions.get(c.cell_id) != against]
    if mine:
        cell = mine[0]
        text = logs.get(cell.cell_id, "") + "\n" + (cell.error or "")
        label = cell.label.removesuffix(f" {release}")
        return base.model_copy(update={"crash": f"{label}: {crash_line(text) or cell.status}"})
    if failed:
        why = f"{against}'s {failed[0].label} failed in this job ({failed[0].status})"
        return base.model_copy(update={"ratio": Ratio(reason=why)})
    comps = {c.name: c for c in findings.comparisons}
    # The first release measured runs the report's own plan, with its own names.
    now = comps.get(now_name) or comps.get(deciding)
    change = next((i for i in findings.interactions if i.name == change_name), None)
    return base.model_copy(update={
        "ratio": ratio_of(now.result) if now else Ratio(reason="not measured"),
        "change": change_of(change.result) if change else None})


def ratio_of(result: ComparisonResult) -> Ratio:
    return Ratio(value=result.ratio, ci_low=result.ci_low, ci_high=result.ci_high,
                 verdict=result.verdict, n_a=result.n_a, n_b=result.n_b,
                 reason=result.reason)


def change_of(result: Interaction) -> Ratio:
    return Ratio(value=result.ratio_of_ratios, ci_low=result.ci_low, ci_high=result.ci_high,
                 verdict=result.verdict, reason=result.reason)


def crash_line(text: str) -> str:
    """The exception line a log ends on (the last one; the error a wrapper such as
    vLLM's "Worker failed ... see the root cause above" points at, where the log has
    it), else its last line."""
    lines = [_LOG_PREFIX.sub("", ln).strip() for ln in text.splitlines() if ln.strip()]
    raised = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    wrappers = [i for i, ln in enumerate(raised) if _WRAPPER in ln]
    if wrappers:
        # What follows the first wrapper is the engine shutting down (and the run's own
        # error repeating the wrapper), not the failure.
        raised = raised[:wrappers[0]] or raised[:1]
    if raised:
        return raised[-1][:LINE_CHARS]
    return lines[-1][:LINE_CHARS] if lines else ""


def refused(exc: PlanRejected, release: str, previous: str | None) -> Reading:
    """A release whose plan cannot be built: a configuration key it does not take makes
    the configuration no longer valid (named); any other refusal is the release refusing
    the configuration (broken)."""
    reading = Reading(release=release, against=previous)
    if exc.field.startswith(_CONFIG_SECTIONS):
        head = str(exc).split(";")[0]  # names the key; the accepted list stays out
        dropped = f" ({previous} took it)" if previous else ""
        invalid = f"config no longer valid: {head}{dropped}"
        return reading.model_copy(update={"invalid": invalid[:LINE_CHARS]})
    crash = f"refuses the configuration: {exc}"
    return reading.model_copy(update={"crash": crash[:LINE_CHARS]})
