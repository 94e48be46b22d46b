"""What the findings conclude: log signatures and hints, the outcome, the headline and the
signal that decided it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from triagebot.analyze.against_report_models import AgainstReport
from triagebot.analyze.findings_cells import FAILED_STATUSES
from triagebot.analyze.findings_compare import random_drafter
from triagebot.analyze.findings_models import (
    CellFinding,
    CollapseFlag,
    ComparisonFinding,
    ComparisonResult,
    DivergenceFinding,
    Hint,
    SignatureHit,
)
from triagebot.analyze.outcome_models import NeverEngaged, Outcome
from triagebot.analyze.signatures import Signature, match_log
from triagebot.plan_model import Cell, NotCompared, Plan
from triagebot.request_model import ReproRequest
from triagebot.run_result import RunResult

# --- logs and hints ---------------------------------------------------------------------


def failure_signatures(
    plan: Plan,
    results: Mapping[str, Sequence[RunResult]],
    logs: Mapping[str, str] | None,
    signatures: Sequence[Signature] | None,
) -> list[SignatureHit]:
    hits: list[SignatureHit] = []
    for cell in plan.cells:
        text = (logs or {}).get(cell.cell_id)
        if text is None:
            text = "\n".join(r.log_tail for r in results.get(cell.cell_id, ()) if r.log_tail)
        if text:
            hits.extend(match_log(text, signatures, cell_id=cell.cell_id, engine=cell.engine,
                                  runner=plan.gpu_kind))
    return hits


def outcome_hints(
    plan: Plan,
    cells: Sequence[CellFinding],
    hits: Sequence[SignatureHit],
    collapse: Sequence[CollapseFlag],
    divergence: Sequence[DivergenceFinding],
) -> list[Hint]:
    label = {c.cell_id: c.label for c in cells}
    out: list[Hint] = []
    for cell in cells:
        if cell.status != "ok":
            out.append(Hint(severity="error", source="run", cells=[cell.label],
                            text=f"{cell.label} has no usable runs ({cell.status})",
                            evidence=[cell.error] if cell.error else []))
    by_kind: dict[str, list[CollapseFlag]] = {}
    for flag in collapse:
        by_kind.setdefault(flag.kind, []).append(flag)
    for flags in by_kind.values():
        arms = list(dict.fromkeys(f.arm for f in flags))
        out.append(Hint(severity="error", source="collapse", cells=arms,
                        text=f"acceptance collapse on {', '.join(arms)}: {flags[0].reason}; "
                        "a drafter that stops being accepted is a functional bug, not a "
                        "slowdown", related=["vllm-project/vllm#54997"]))
    for div in divergence:
        if div.result.diverged:
            out.append(Hint(severity="error", source="divergence",
                            cells=[label[c] for c in div.cells],
                            text=f"greedy outputs differ under {div.context}: "
                            f"{div.result.reason}; lossless speculation must not change tokens"))
    merged: dict[str, Hint] = {}
    for hit in hits:
        cell_label = label.get(hit.cell_id, hit.cell_id)
        if hit.id in merged:
            h = merged[hit.id]
            h.cells.append(cell_label)
            h.evidence.extend(f"[{cell_label}] {e}" for e in hit.evidence)
            continue
        merged[hit.id] = Hint(severity=hit.severity, source=hit.id, text=hit.hint,
                              cells=[cell_label], related=list(hit.related),
                              evidence=[f"[{cell_label}] {e}" for e in hit.evidence])
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted([*out, *merged.values()], key=lambda h: order[h.severity])


# --- outcome and headline ---------------------------------------------------------------


def _failed_main_cells(
    plan: Plan, comparisons: Sequence[ComparisonFinding], cells: Mapping[str, CellFinding]
) -> list[CellFinding]:
    needed: list[str] = []
    for comp in comparisons:
        if comp.main:
            needed.extend(comp.numerator + comp.denominator)
    return [cells[cid] for cid in dict.fromkeys(needed) if cells[cid].status != "ok"]


def key_claims(
    request: ReproRequest | None, comparisons: Sequence[ComparisonFinding],
    against: AgainstReport | None,
) -> list[Any]:
    if against is None:
        return []
    main = {c.name for c in comparisons if c.main}
    claims = [r for r in against.ratios if r.comparison in main]
    if request and request.symptom in ("spec_slower_than_baseline", "graph_slower_than_eager"):
        slower = [r for r in claims if r.reported < 1]
        claims = slower or claims
    return claims


def decide_outcome(
    request: ReproRequest | None,
    comparisons: Sequence[ComparisonFinding],
    cells: Mapping[str, CellFinding],
    collapse: Sequence[CollapseFlag],
    against: AgainstReport | None,
    plan: Plan,
    engaged: Sequence[NeverEngaged] = (),
    lead: str = "",
) -> tuple[Outcome, str]:
    """What the runs say, by the outcome rule of `findings`' docstring, with the reason
    that decided it (`conclude` then applies what the plan and the A/A pair allow).
    `lead` is the comparison the headline leads with: where several decide it, the
    reason names that one, so the first screen speaks of one comparison."""
    symptom = request.symptom if request else None
    failed = _failed_main_cells(plan, comparisons, cells)
    crashed = [c for c in cells.values() if c.status in FAILED_STATUSES]
    if symptom == "crash" and crashed:
        return "reproduced", f"{crashed[0].label} fails as reported ({crashed[0].status})"
    if failed:
        names = ", ".join(f"{c.label} ({c.status})" for c in failed)
        return "error", f"cells the main question needs have no usable runs: {names}"
    # A stand-in model (the reference engine) answers the report's question, not its
    # numbers: its ratios are not held against the reporter's.
    claims = [] if plan.stands_in_for else key_claims(request, comparisons, against)
    if claims:
        if any(c.reproduced is False for c in claims):
            bad = next(c for c in claims if c.reproduced is False)
            return "not_reproduced", f"{bad.comparison}: {bad.reason}"
        if any(c.reproduced is None for c in claims):
            und = next(c for c in claims if c.reproduced is None)
            return "inconclusive", f"{und.comparison}: {und.reason}"
        return "reproduced", "; ".join(f"{c.comparison}: {c.reason}" for c in claims)
    spec_cells = [c for c in plan.cells if c.spec is not None]
    if symptom == "acceptance_drop" and spec_cells and all(map(random_drafter, spec_cells)):
        return "inconclusive", ("the drafter here is a stand-in head with random weights, "
                                "accepted ~0 % by construction, so acceptance cannot be "
                                "checked on this runner; the release did load and run it")
    stalled = _engagement_outcome(symptom, engaged)
    if stalled is not None:
        return stalled
    return _outcome_from_symptom(symptom, comparisons, cells, collapse, lead)


# Cases in which no draft token was accepted: an acceptance drop as far as it can go.
_NOTHING_ACCEPTED = ("zero_drafts", "length_one")


def _engagement_outcome(symptom: str | None,
                        engaged: Sequence[NeverEngaged]) -> tuple[Outcome, str] | None:
    """Speculation that never engaged is what a report without a checkable number asks
    about (and the extreme of an acceptance drop): the counters answer it."""
    if symptom in (None, "other") and engaged:
        return "reproduced", engaged_words(engaged)
    if symptom == "acceptance_drop" and any(e.case in _NOTHING_ACCEPTED for e in engaged):
        return "reproduced", engaged_words(engaged)
    return None


def engaged_words(engaged: Sequence[NeverEngaged]) -> str:
    """Every never-engaged case, each with its counter, in one clause."""
    return "speculation never engaged as asked: " + "; ".join(e.sentence for e in engaged)


def _outcome_from_symptom(
    symptom: str | None, comparisons: Sequence[ComparisonFinding],
    cells: Mapping[str, CellFinding], collapse: Sequence[CollapseFlag], lead: str = "",
) -> tuple[Outcome, str]:
    main = [c for c in comparisons if c.main]
    if symptom in ("spec_slower_than_baseline", "graph_slower_than_eager"):
        slower = sorted((c for c in main if c.result.verdict == "DIFFERENT"
                         and (c.result.ratio or 1) < 1), key=lambda c: c.name != lead)
        if slower:
            return "reproduced", f"{slower[0].name} is DIFFERENT below 1"
        if main and all(c.result.verdict != "UNKNOWN" for c in main):
            return "not_reproduced", "every main comparison is decided and none is slower"
        return "inconclusive", "no main comparison is decided slower yet"
    if symptom == "acceptance_drop":
        if collapse:
            return "reproduced", collapse[0].reason
        if any(c.acceptance is not None for c in cells.values()):
            return "not_reproduced", "spec cells accept drafts and none collapsed"
        return "inconclusive", "no acceptance counters were recorded"
    if symptom == "crash":
        return "not_reproduced", "every cell finished"
    return "inconclusive", "the report states no number or symptom these runs can check"


_SPEC_NAMES = {"mtp": "MTP", "eagle": "EAGLE", "eagle3": "EAGLE-3", "ngram": "ngram",
               "draft_model": "a draft model", "suffix": "suffix decoding",
               "dflash": "DFlash", "medusa": "Medusa"}
_LEVEL_WORDS = {"graph": "under CUDA graphs", "eager": "under eager", "vit_graph":
                "with encoder CUDA graphs", "vit_eager": "with an eager encoder",
                "v1": "on Model Runner V1", "v2": "on Model Runner V2"}


# On the cpu runner the graph level is torch.compile (a CPU has no CUDA graphs), and a
# headline must not claim what did not run.
_CPU_LEVEL_WORDS = {**_LEVEL_WORDS, "graph": "under torch.compile"}


def _level_words(axis: str, level: str, cpu: bool) -> str:
    words = _CPU_LEVEL_WORDS if cpu else _LEVEL_WORDS
    if level in words:
        return words[level]
    if axis == "cudagraph_mode":
        return f"with cudagraph_mode={level}"
    return f"with {level}"


def _cell_words(cell: Cell, axis: str, cpu: bool) -> str:
    """What the numerator of a comparison along `axis` does, in words."""
    if axis == "spec" and cell.spec:
        return f"with {_SPEC_NAMES[cell.spec.method]} k={cell.spec.num_speculative_tokens}"
    return _level_words(axis, cell.varies.get(axis, ""), cpu)


def _baseline_words(cell: Cell, axis: str, cpu: bool) -> str:
    if axis == "spec":
        return "no speculation"
    return _level_words(axis, cell.varies.get(axis, ""), cpu).split(" ", 1)[-1]


def _ratio_text(res: ComparisonResult) -> str:
    if res.ratio is None:
        return "no ratio"
    ci = f" [{res.ci_low:.2f}, {res.ci_high:.2f}]" if res.ci_low and res.ci_high else ""
    return f"{res.ratio:.2f}x{ci} ({res.n_a} v {res.n_b} runs)"


_WORDS: dict[Outcome, str] = {"reproduced": "Reproduced", "not_reproduced": "Not reproduced",
                               "inconclusive": "Inconclusive", "cannot_answer": "Could not answer",
                               "error": "Error"}


def outcome_word(outcome: Outcome) -> str:
    """The outcome as the report's first word(s)."""
    return _WORDS[outcome]


@dataclass(frozen=True)
class Conclusion:
    """The outcome after what the plan and the runner allow, beside what the runs said."""

    outcome: Outcome
    reason: str
    measured: Outcome  # what the runs alone say
    measured_reason: str
    not_asked: Sequence[NotCompared] = ()
    unsteady: ComparisonFinding | None = None
    never_engaged: Sequence[NeverEngaged] = ()


def unsteady_pair(comparisons: Sequence[ComparisonFinding]) -> ComparisonFinding | None:
    """The A/A pair when it came out DIFFERENT: the runner disagreed with itself."""
    return next((c for c in comparisons if c.kind == "noise"
                 and c.result.verdict == "DIFFERENT"), None)


def _aa_words(pair: ComparisonFinding) -> str:
    res = pair.result
    ratio = f"{res.ratio:.3f}x" if res.ratio is not None else "a ratio away from 1"
    return (f"the runner was unsteady: its A/A pair, two runs of one configuration, came out "
            f"DIFFERENT at {ratio} ({res.n_a} v {res.n_b} runs; {res.reason}) after the "
            "rounds the budget allowed, so no throughput verdict of this plan is trusted")


def conclude(plan: Plan, measured: Outcome, reason: str, signal: str,
             engaged: Sequence[NeverEngaged],
             comparisons: Sequence[ComparisonFinding]) -> Conclusion:
    """The report's outcome: "cannot_answer" when the report's own comparison cannot run
    on this runner (whatever was measured instead); "inconclusive" when a verdict rests
    on throughput and the A/A pair is DIFFERENT; else what the runs said."""
    not_asked = [n for n in plan.not_compared if n.question]
    aa = unsteady_pair(comparisons)
    conclusion = Conclusion(outcome=measured, reason=reason, measured=measured,
                            measured_reason=reason, not_asked=not_asked, unsteady=aa,
                            never_engaged=engaged)
    if not_asked:
        why = "; ".join(_not_asked_words(plan, n) for n in not_asked)
        return replace(conclusion, outcome="cannot_answer", reason=why)
    if aa is not None and signal.startswith("throughput") and measured in (
            "reproduced", "not_reproduced"):
        return replace(conclusion, outcome="inconclusive", reason=_aa_words(aa))
    return conclusion


def _not_asked_words(plan: Plan, left: NotCompared) -> str:
    return (f"the report's own comparison ({', '.join(left.levels)}) cannot run on the "
            f"{plan.gpu_kind} runner: {left.why} (the notes give the evidence)")


def _sentences(parts: Sequence[str]) -> str:
    """Parts joined as sentences, each after the first starting with a capital."""
    kept = [p.rstrip(". ") for p in parts if p]
    return ". ".join([kept[0], *(p[:1].upper() + p[1:] for p in kept[1:])]) if kept else ""


def headline(
    plan: Plan,
    conclusion: Conclusion,
    comparisons: Sequence[ComparisonFinding],
    against: AgainstReport | None,
    key: str | None,
) -> str:
    """Verdict first, then, in this order: why the report's own comparison could not run,
    speculation that never engaged, an unsteady runner, and what the main comparison
    measured (named as not the report's question where it is not)."""
    measured = _measured_words(plan, conclusion, comparisons, against, key)
    if conclusion.not_asked and measured:
        measured = f"measured instead, a comparison the report did not ask about: {measured}"
    parts = [
        "; ".join(_not_asked_words(plan, n) for n in conclusion.not_asked),
        engaged_words(conclusion.never_engaged) if conclusion.never_engaged else "",
        _aa_words(conclusion.unsteady) if conclusion.unsteady is not None else "",
        measured,
    ]
    return f"{outcome_word(conclusion.outcome)}: {_sentences(parts)}."


def _measured_words(
    plan: Plan,
    conclusion: Conclusion,
    comparisons: Sequence[ComparisonFinding],
    against: AgainstReport | None,
    key: str | None,
) -> str:
    """The main comparison's ratio (and the others'), or why the runs answer nothing."""
    main = [c for c in comparisons if c.main]
    if conclusion.measured == "error" or not main:
        said = conclusion.never_engaged and conclusion.measured_reason == engaged_words(
            conclusion.never_engaged)
        return "" if said else conclusion.measured_reason
    first = next((c for c in main if c.name == key), main[0])
    num, den = plan.cell(first.numerator[0]), plan.cell(first.denominator[0])
    axis = next((a for a in num.varies if num.varies[a] != den.varies.get(a)), "spec")
    cpu = plan.gpu_kind == "cpu"
    where = " ".join(_level_words(a, v, cpu) for a, v in num.varies.items() if a != axis)
    reported = {r.comparison: r.reported for r in (against.ratios if against else [])
                if not plan.stands_in_for}
    rep = f" (reported {reported[first.name]:.2f}x)" if first.name in reported else ""
    subject = " ".join(x for x in (_cell_words(num, axis, cpu), where) if x)
    model = num.model
    if plan.stands_in_for:
        model = f"{num.model} (the {plan.engine} stand-in for {plan.stands_in_for})"
    # Without the report's question, a verdict word is all a reader can take from it.
    verdict = f", {first.result.verdict}" if conclusion.not_asked else ""
    text = (f"{subject} {model} runs at {_ratio_text(first.result)} the speed "
            f"of {_baseline_words(den, axis, cpu)}{rep}{verdict}")
    others = []
    for comp in main:
        if comp is first or comp.result.ratio is None:
            continue
        c_num = plan.cell(comp.numerator[0])
        ctx = " ".join(_level_words(a, v, cpu) for a, v in c_num.varies.items() if a != axis)
        rep_o = f", reported {reported[comp.name]:.2f}x" if comp.name in reported else ""
        others.append(f"{ctx or comp.name} it is {comp.result.ratio:.2f}x "
                      f"({comp.result.n_a} v {comp.result.n_b} runs{rep_o})")
    return text + ("; " + "; ".join(others) if others else "")


def runner_hints(comparisons: Sequence[ComparisonFinding], margin: float) -> list[Hint]:
    """Drift seen within a comparison, and an A/A pair that differs: what the runner did."""
    out: list[Hint] = []
    for comp in comparisons:
        res = comp.result
        if res.drift is not None and res.drift.present:
            out.append(Hint(severity="info", source="drift", text=f"{comp.name}: "
                            f"{res.drift.note}"))
        if comp.kind == "noise" and res.verdict == "DIFFERENT" and res.ratio:
            out.append(Hint(
                severity="warning", source="aa-pair",
                text=f"the A/A pair, two runs of one configuration, differs by "
                     f"{res.ratio - 1:+.1%} ({res.reason}): this runner moves between script "
                     "starts by more than its run-to-run noise, so DIFFERENT verdicts near "
                     f"that size, and SAME verdicts near the ±{margin:.0%} margin, are less "
                     "certain than stated"))
    return out


def decision_signal(request: ReproRequest | None, outcome: Outcome,
                    comparisons: Sequence[ComparisonFinding], claims: Sequence[Any],
                    plan: Plan, engaged: Sequence[NeverEngaged] = ()) -> str:
    """The measurement the outcome (of the runs alone) rests on, in words, and what
    explains it."""
    symptom = request.symptom if request else None
    if outcome == "error" or (symptom == "crash" and outcome == "reproduced"):
        signal = "run status"
    elif claims and not plan.stands_in_for:
        signal = "throughput, against the reporter's ratios"
    elif engaged and outcome == "reproduced" and symptom in (None, "other"):
        return "; ".join(dict.fromkeys(e.counter for e in engaged))
    elif symptom == "acceptance_drop":
        signal = "acceptance counters"
    elif symptom == "crash":
        signal = "run status"
    elif symptom in ("spec_slower_than_baseline", "graph_slower_than_eager"):
        signal = "throughput"
    else:
        return ""
    if signal.startswith("throughput"):
        first = next((c for c in comparisons if c.main and c.explanation), None)
        if first and first.explanation and first.explanation.driver != "neither":
            signal += f"; explained by {first.explanation.driver} ({first.explanation.source})"
        cost = next((c for c in comparisons if c.main and c.step_cost), None)
        if first is None and cost and cost.step_cost:
            signal += "; explained by step cost against acceptance length"
    return signal
