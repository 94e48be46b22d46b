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
repeated looks keep the error budget of `verdict`.

**Rounds.** A cell's i-th RunResult is its i-th round. Both arms of a comparison are
escalated together, so their rounds line up and serve as the blocks of the verdict model.

**Signals.** Throughput decides a ratio verdict. Where both arms have tokens per target
step (acceptance length, or counted forward passes), the ratio is split into that nearly
deterministic part and the cost of a step (`spec.explain_ratio`), so the report can say
whether the drafter or the step changed. `decided_by` names the signal behind the outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from triagebot.analyze import stats, verdict
from triagebot.analyze.against_report import against_report
from triagebot.analyze.findings_models import (
    AcceptanceStats,
    AgainstReport,
    CellFinding,
    CollapseFlag,
    ComparisonFinding,
    ComparisonResult,
    DivergenceFinding,
    Findings,
    Hint,
    InteractionFinding,
    NoiseBand,
    Outcome,
    RatioExplanation,
    SignatureHit,
    StepFitFinding,
)
from triagebot.analyze.signatures import Signature, match_log
from triagebot.analyze.spec import (
    acceptance,
    detect_collapse,
    detect_divergence,
    explain_ratio,
    fit_step_cost,
    step_cost,
    step_seconds,
    tokens_per_step,
)
from triagebot.engines import standins
from triagebot.model import Cell, Comparison, Plan, ReproRequest, RunEnv, RunResult, SpecCounters

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
        acceptance=acc,
        tokens_per_step=per_step[0] if per_step else None,
        tokens_per_step_source=per_step[1] if per_step else None,
        outputs_digest=next(iter(digests)) if len(digests) == 1 else None,
    )


# --- comparisons ------------------------------------------------------------------------


def _samples(ids: Sequence[str], results: Mapping[str, Sequence[RunResult]]) -> list[float]:
    return [x for cid in ids for x in stats.samples_from(results.get(cid, ()))]


def _rounds(ids: Sequence[str], results: Mapping[str, Sequence[RunResult]]) -> list[list[float]]:
    """tok/s per round of an arm (cells of the arm pooled round by round)."""
    width = max((len(results.get(cid, ())) for cid in ids), default=0)
    out: list[list[float]] = [[] for _ in range(width)]
    for cid in ids:
        for i, result in enumerate(results.get(cid, ())):
            out[i].extend(stats.samples_from([result]))
    return out


def _band(plan: Plan, results: Mapping[str, Sequence[RunResult]]) -> NoiseBand:
    noise = next((c for c in plan.comparisons if c.kind == "noise"), None)
    if noise is None:
        return stats.default_band("the plan has no A/A pair")
    return stats.noise_band(_samples(noise.numerator, results),
                            _samples(noise.denominator, results))


def _main_names(plan: Plan) -> set[str]:
    ratios = [c for c in plan.comparisons if c.kind == "ratio"]
    if not ratios:
        return set()
    prefix = ratios[0].name.split(" @ ")[0]
    return {c.name for c in ratios if c.name.split(" @ ")[0] == prefix}


def _context(cell: Cell) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in cell.varies.items() if k != "spec"))


def _spec_pair(plan: Plan, comp: Comparison) -> tuple[Cell, Cell] | None:
    """(spec cell, no-spec cell) when the comparison differs only by speculation."""
    if len(comp.numerator) != 1 or len(comp.denominator) != 1:
        return None
    num, den = plan.cell(comp.numerator[0]), plan.cell(comp.denominator[0])
    if num.spec is None or den.spec is not None or _context(num) != _context(den):
        return None
    return num, den


def _ratio_finding(
    plan: Plan,
    comp: Comparison,
    results: Mapping[str, Sequence[RunResult]],
    cells: Mapping[str, CellFinding],
    main: set[str],
    margin: float,
) -> tuple[ComparisonFinding, int]:
    a, b = _rounds(comp.numerator, results), _rounds(comp.denominator, results)
    runs = min(sum(map(len, a)), sum(map(len, b)))
    max_runs = max(plan.budget.max_runs, runs, 1)
    decision = verdict.next_step(a, b, runs, max_runs, margin=margin, name=comp.name)
    res = decision.comparison
    more = decision.more_runs_per_arm if decision.action == "run_more" else 0
    pair = _spec_pair(plan, comp)
    ci = (res.ci_low, res.ci_high) if res.ci_low and res.ci_high else None
    cost = None
    explanation = None
    if pair and res.median_a and res.median_b:
        acc = cells[pair[0].cell_id].acceptance
        length = acc.mean_acceptance_length if acc else None
        if length:
            cost = step_cost(length, res.median_a, res.median_b, ratio_ci=ci)
    elif res.ratio:
        explanation = _explain(comp, cells, res.ratio, ci)
    finding = ComparisonFinding(
        name=comp.name,
        kind="ratio",
        question=comp.question,
        numerator=list(comp.numerator),
        denominator=list(comp.denominator),
        main=comp.name in main,
        result=res,
        step_cost=cost,
        explanation=explanation,
        next_action=decision.reason,
    )
    return finding, more


def _explain(comp: Comparison, cells: Mapping[str, CellFinding], ratio: float,
             ci: tuple[float, float] | None) -> RatioExplanation | None:
    """The tokens-per-step / step-cost split, for single-cell arms that both have it."""
    if len(comp.numerator) != 1 or len(comp.denominator) != 1:
        return None
    num, den = cells[comp.numerator[0]], cells[comp.denominator[0]]
    if num.tokens_per_step is None or den.tokens_per_step is None:
        return None
    source = num.tokens_per_step_source if num.tokens_per_step_source == \
        den.tokens_per_step_source else f"{num.tokens_per_step_source} / " \
        f"{den.tokens_per_step_source}"
    return explain_ratio(ratio, ci, num.tokens_per_step, den.tokens_per_step,
                         source=source or "")


def _noise_finding(
    comp: Comparison, results: Mapping[str, Sequence[RunResult]], margin: float
) -> ComparisonFinding:
    a, b = _rounds(comp.numerator, results), _rounds(comp.denominator, results)
    res = verdict.compare(a, b, margin=margin, name=comp.name)
    return ComparisonFinding(
        name=comp.name,
        kind="noise",
        question=comp.question,
        numerator=list(comp.numerator),
        denominator=list(comp.denominator),
        result=res,
        next_action="measures the runner's noise and drift between two runs of one cell",
    )


def _interaction(
    comp: Comparison, by_name: Mapping[str, Comparison],
    results: Mapping[str, Sequence[RunResult]], band: NoiseBand,
) -> InteractionFinding | None:
    if len(comp.of) != 2 or any(name not in by_name for name in comp.of):
        return None
    top, bottom = by_name[comp.of[0]], by_name[comp.of[1]]
    res = stats.interaction(
        _samples(top.numerator, results), _samples(top.denominator, results),
        _samples(bottom.numerator, results), _samples(bottom.denominator, results),
        band, name=comp.name,
    )
    return InteractionFinding(name=comp.name, question=comp.question, of=list(comp.of),
                              result=res)


# --- spec diagnostics -------------------------------------------------------------------


def _collapse(plan: Plan, cells: Mapping[str, CellFinding]) -> list[CollapseFlag]:
    """Collapse flags among spec cells that should accept alike (same model, drafter, k,
    rejection method and temperature); a lone spec cell is judged on its length only."""
    groups: dict[tuple[Any, ...], dict[str, AcceptanceStats]] = {}
    for cell in plan.cells:
        found = cells[cell.cell_id]
        if cell.spec is None or found.acceptance is None or _random_drafter(cell):
            continue
        key = (cell.model, cell.spec.method, cell.spec.num_speculative_tokens,
               cell.spec.draft_model, cell.spec.rejection_sample_method,
               cell.sampling.temperature)
        groups.setdefault(key, {})[cell.label] = found.acceptance
    return [flag for arms in groups.values() for flag in detect_collapse(arms)]


def _random_drafter(cell: Cell) -> bool:
    return cell.spec is not None and standins.is_untrained_head(cell.spec.draft_model)


def _step_fits(plan: Plan, cells: Mapping[str, CellFinding]) -> list[StepFitFinding]:
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for cell in plan.cells:
        if cell.spec is not None and cell.replica == 0:
            groups.setdefault((_context(cell), cell.spec.method), []).append(cell)
    out: list[StepFitFinding] = []
    for (context, method), members in groups.items():
        if len({c.spec.num_speculative_tokens for c in members if c.spec}) < 2:
            continue
        points = []
        for c in members:
            found = cells[c.cell_id]
            length = found.acceptance.mean_acceptance_length if found.acceptance else None
            if length and found.throughput.median and c.spec:
                points.append((c.spec.num_speculative_tokens,
                               step_seconds(length, found.throughput.median)))
        base = next((cells[c.cell_id].throughput.median for c in plan.cells
                     if c.spec is None and c.replica == 0 and _context(c) == context), None)
        fit = fit_step_cost(points, 1.0 / base if base else None)
        out.append(StepFitFinding(context=_context_text(context), method=method,
                                  cells=[c.cell_id for c in members], fit=fit))
    return out


def _context_text(context: Sequence[tuple[str, str]]) -> str:
    return " ".join(v for _, v in context) or "all cells"


def _divergence(plan: Plan, cells: Mapping[str, CellFinding]) -> list[DivergenceFinding]:
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for cell in plan.cells:
        groups.setdefault(_context(cell), []).append(cell)
    out: list[DivergenceFinding] = []
    for context, members in groups.items():
        if not any(c.spec for c in members) or not any(c.spec is None for c in members):
            continue
        lossless = all(c.sampling.temperature == 0 for c in members) and not any(
            c.spec and c.spec.rejection_sample_method in LOSSY_REJECTION for c in members)
        digests = {c.label: cells[c.cell_id].outputs_digest for c in members
                   if cells[c.cell_id].status == "ok"}
        res = detect_divergence(digests, lossless=lossless)
        out.append(DivergenceFinding(context=_context_text(context),
                                     cells=[c.cell_id for c in members], result=res))
    return out


# --- logs and hints ---------------------------------------------------------------------


def _signatures(
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


def _hints(
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


def _key_claims(
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
) -> tuple[Outcome, str]:
    """The outcome rule of the module docstring, with the reason that decided it."""
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
    claims = [] if plan.stands_in_for else _key_claims(request, comparisons, against)
    if claims:
        if any(c.reproduced is False for c in claims):
            bad = next(c for c in claims if c.reproduced is False)
            return "not_reproduced", f"{bad.comparison}: {bad.reason}"
        if any(c.reproduced is None for c in claims):
            und = next(c for c in claims if c.reproduced is None)
            return "inconclusive", f"{und.comparison}: {und.reason}"
        return "reproduced", "; ".join(f"{c.comparison}: {c.reason}" for c in claims)
    spec_cells = [c for c in plan.cells if c.spec is not None]
    if symptom == "acceptance_drop" and spec_cells and all(map(_random_drafter, spec_cells)):
        return "inconclusive", ("the drafter here is a stand-in head with random weights, "
                                "accepted ~0 % by construction, so acceptance cannot be "
                                "checked on this runner; the release did load and run it")
    return _outcome_from_symptom(symptom, comparisons, cells, collapse)


def _outcome_from_symptom(
    symptom: str | None, comparisons: Sequence[ComparisonFinding],
    cells: Mapping[str, CellFinding], collapse: Sequence[CollapseFlag],
) -> tuple[Outcome, str]:
    main = [c for c in comparisons if c.main]
    if symptom in ("spec_slower_than_baseline", "graph_slower_than_eager"):
        slower = [c for c in main if c.result.verdict == "DIFFERENT" and (c.result.ratio or 1) < 1]
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


def headline(
    plan: Plan,
    outcome: Outcome,
    reason: str,
    comparisons: Sequence[ComparisonFinding],
    against: AgainstReport | None,
    key: str | None,
) -> str:
    """One sentence, verdict first."""
    word = {"reproduced": "Reproduced", "not_reproduced": "Not reproduced",
            "inconclusive": "Inconclusive", "error": "Error"}[outcome]
    main = [c for c in comparisons if c.main]
    if outcome == "error" or not main:
        return f"{word}: {reason}."
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
    text = (f"{word}: {subject} {model} runs at {_ratio_text(first.result)} the speed "
            f"of {_baseline_words(den, axis, cpu)}{rep}")
    others = []
    for comp in main:
        if comp is first or comp.result.ratio is None:
            continue
        c_num = plan.cell(comp.numerator[0])
        ctx = " ".join(_level_words(a, v, cpu) for a, v in c_num.varies.items() if a != axis)
        rep_o = f", reported {reported[comp.name]:.2f}x" if comp.name in reported else ""
        others.append(f"{ctx or comp.name} it is {comp.result.ratio:.2f}x "
                      f"({comp.result.n_a} v {comp.result.n_b} runs{rep_o})")
    return text + ("; " + "; ".join(others) if others else "") + "."


def _runner_hints(comparisons: Sequence[ComparisonFinding], margin: float) -> list[Hint]:
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


def _decided_by(request: ReproRequest | None, outcome: Outcome,
                comparisons: Sequence[ComparisonFinding], claims: Sequence[Any],
                plan: Plan) -> str:
    """The measurement the outcome rests on, in words, and what explains it."""
    symptom = request.symptom if request else None
    if outcome == "error" or (symptom == "crash" and outcome == "reproduced"):
        signal = "run status"
    elif claims and not plan.stands_in_for:
        signal = "throughput, against the reporter's ratios"
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
) -> Findings:
    """Findings for `plan` from `results` (cell_id -> rounds of RunResults); SAME means
    within ±`margin` (the repo's `[verdict] margin_pct`)."""
    cells = {c.cell_id: summarize(c, results.get(c.cell_id, ())) for c in plan.cells}
    band = _band(plan, results)
    same_region = verdict.margin_band(margin)
    main = _main_names(plan)
    comparisons: list[ComparisonFinding] = []
    more: dict[str, int] = {}
    for comp in plan.comparisons:
        if comp.kind == "noise":
            comparisons.append(_noise_finding(comp, results, margin))
        elif comp.kind == "ratio":
            finding, runs = _ratio_finding(plan, comp, results, cells, main, margin)
            comparisons.append(finding)
            stuck = any(cells[c].status != "ok" for c in comp.numerator + comp.denominator)
            if runs and not stuck:
                more[comp.name] = runs
    by_name = {c.name: c for c in plan.comparisons if c.kind == "ratio"}
    interactions = [i for c in plan.comparisons if c.kind == "interaction"
                    if (i := _interaction(c, by_name, results, same_region)) is not None]
    collapse = _collapse(plan, cells)
    divergence = _divergence(plan, cells)
    hits = _signatures(plan, results, logs, signatures)
    runner = _runner_env(results)
    cell_list = list(cells.values())
    gpus = max(c.tensor_parallel_size * c.data_parallel_size for c in plan.cells)
    against = (against_report(request, plan, cell_list, comparisons, same_region, runner,
                              gpus_needed=gpus) if request is not None else None)
    outcome, reason = decide_outcome(request, comparisons, cells, collapse, against, plan)
    claims = _key_claims(request, comparisons, against)
    notes = list(plan.notes) + _run_notes(plan, results)
    if band.source == "default":
        notes.append(f"A/A pair: {band.note}")
    return Findings(
        plan_hash=plan.plan_hash,
        engine=plan.engine,
        engine_version=_engine_version(plan, results),
        question=plan.question,
        outcome=outcome,
        outcome_reason=reason,
        headline=headline(plan, outcome, reason, comparisons, against,
                          claims[0].comparison if claims else None),
        cells=cell_list,
        noise=band,
        comparisons=comparisons,
        interactions=interactions,
        step_fits=_step_fits(plan, cells),
        collapse=collapse,
        divergence=divergence,
        signatures=hits,
        hints=[*_hints(plan, cell_list, hits, collapse, divergence),
               *_runner_hints(comparisons, margin)],
        against_report=against,
        runner_env=runner.model_dump() if runner else {},
        margin=margin,
        decided_by=_decided_by(request, outcome, comparisons, claims, plan),
        needs_more_runs=more,
        notes=notes,
    )
