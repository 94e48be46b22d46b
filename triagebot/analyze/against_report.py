"""The reporter's numbers next to ours, and how their machine differs from the runner.

Labels are mapped to plan cells by the words in them (spec/mtp/eagle/no_spec/baseline,
eager/graph, piecewise/full, v1/v2, strict/probabilistic, vit). A label maps to a cell
only when exactly one first-replica cell satisfies every word it uses; anything else is
listed as unmatched with the reason, never guessed.

A reported figure is set beside a cell's only when both count the same thing (tokens per
second); a cell that times requests (the mm-processor benchmark) is named with both units
and "not comparable", and no ratio is formed from it.

A reporter's ratio counts as reproduced when our CI contains it, or when our verdict and
the reporter's ratio fall on the same side of the practical margin (both DIFFERENT in the
same direction, or both inside it: SAME). Our UNKNOWN leaves it undecided (None).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from triagebot.analyze.against_report_models import (
    AcceptanceCheck,
    AgainstReport,
    EnvDiff,
    EnvField,
    LabelMatch,
    ReportedRatio,
)
from triagebot.analyze.findings_models import (
    CellFinding,
    ComparisonFinding,
    NoiseBand,
)
from triagebot.plan.synthetic import is_pinned
from triagebot.plan_model import Cell, Plan
from triagebot.request_model import ReproRequest
from triagebot.run_result import RunEnv

RATE_TOLERANCE = 0.05
LENGTH_TOLERANCE = 0.10

_NO_SPEC = re.compile(r"(?:^|_)(?:no|non|without|wo|disable[ds]?)_?(?:spec|mtp|eagle3?|sd|"
                      r"ngram|draft|speculative|speculation)(?:_|$)|(?:^|_)(?:baseline|"
                      r"nospec|nomtp|vanilla)(?:_|$)")
_METHODS = {"mtp": "mtp", "eagle": "eagle", "eagle3": "eagle3", "ngram": "ngram",
            "dflash": "dflash", "medusa": "medusa", "suffix": "suffix",
            "draft": "draft_model"}
_SPEC_WORDS = {"spec", "sd", "speculative", "speculation", *_METHODS}
_K = re.compile(r"(?:^|_)k_?(\d{1,2})(?:_|$)")
_MODES = (("full_and_piecewise", "FULL_AND_PIECEWISE"), ("full_decode_only",
          "FULL_DECODE_ONLY"), ("piecewise", "PIECEWISE"), ("full", "FULL"))
_GRAPH_WORDS = {"graph", "graphs", "cudagraph", "cudagraphs", "cuda_graph", "cg", "compile",
                "compiled"}


@dataclass
class LabelWants:
    """What a label's words require of a cell; empty means the label says nothing."""

    spec: bool | None = None
    method: str | None = None
    num_speculative_tokens: int | None = None
    eager: bool | None = None
    cudagraph_mode: str | None = None
    runner: str | None = None
    rejection: str | None = None
    encoder_graph: bool | None = None
    words: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not self.words


def _norm(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def read_label(label: str) -> LabelWants:
    """The configuration words of a reporter's label (module docstring)."""
    text = _norm(label)
    tokens = text.split("_")
    want = LabelWants()
    if _NO_SPEC.search(text):
        want.spec = False
        want.words.append("no spec")
    elif _SPEC_WORDS & set(tokens):
        want.spec = True
        named = next((t for t in tokens if t in _METHODS), None)
        want.method = _METHODS[named] if named else None
        want.words.append(named or "spec")
        k = _K.search(text)
        if k:
            want.num_speculative_tokens = int(k.group(1))
            want.words.append(f"k={want.num_speculative_tokens}")
    _read_graph_words(text, tokens, want)
    for token, runner in (("v1", "v1"), ("mrv1", "v1"), ("v2", "v2"), ("mrv2", "v2")):
        if token in tokens:
            want.runner = runner
            want.words.append(runner)
    for word in ("strict", "probabilistic", "synthetic", "standard"):
        if word in tokens:
            want.rejection = word
            want.words.append(word)
    return want


def _read_graph_words(text: str, tokens: list[str], want: LabelWants) -> None:
    encoder = bool({"vit", "encoder"} & set(tokens))
    eager = "eager" in tokens or bool(re.search(r"(?:^|_)no_?(?:graph|cudagraph|cg)", text))
    graph = not eager and bool(_GRAPH_WORDS & set(tokens) or "cuda_graph" in text)
    mode = next((m for word, m in _MODES if re.search(rf"(?:^|_){word}(?:_|$)", text)), None)
    if encoder and (eager or graph):
        want.encoder_graph = graph
        want.words.append("vit graph" if graph else "vit eager")
        return
    if eager or graph:
        want.eager = eager
        want.words.append("eager" if eager else "graph")
    if mode:
        want.cudagraph_mode = mode
        want.words.append(mode)


def _fits(want: LabelWants, cell: Cell) -> bool:
    spec = cell.spec
    checks = [
        want.spec is None or want.spec == (spec is not None),
        want.method is None or (spec is not None and spec.method == want.method),
        want.num_speculative_tokens is None
        or (spec is not None and spec.num_speculative_tokens == want.num_speculative_tokens),
        want.eager is None or want.eager == cell.enforce_eager,
        want.cudagraph_mode is None or want.cudagraph_mode == cell.cudagraph_mode,
        want.runner is None or want.runner == cell.model_runner,
        want.rejection is None
        or (spec is not None and spec.rejection_sample_method == want.rejection),
        want.encoder_graph is None or want.encoder_graph == bool(cell.encoder_cudagraph),
        # A pinned arm answers our own question, never a label of the reporter's.
        want.rejection == "synthetic" or not is_pinned(cell),
    ]
    return all(checks)


def match_label(label: str, plan: Plan) -> tuple[Cell | None, str]:
    """The one first-replica cell `label` names, or None and why not."""
    want = read_label(label)
    if want.empty():
        return None, "no configuration words in the label"
    cells = [c for c in plan.cells if c.replica == 0 and _fits(want, c)]
    words = ", ".join(want.words)
    if len(cells) == 1:
        return cells[0], f"label says {words}"
    if not cells:
        return None, f"label says {words}; no cell of the plan runs that"
    names = ", ".join(c.label for c in cells)
    return None, f"label says {words}; that fits {len(cells)} cells ({names})"


# --- throughput ---------------------------------------------------------------------------


# The reporter's figures are token rates (parse keeps only tok/s in `throughput_tok_s`);
# the metric name of the number they came from says which one, where parse kept it.
_REPORTED_UNITS = {"output_tok_s": "output tok/s", "total_tok_s": "total tok/s"}


def _reported_unit(request: ReproRequest, label: str, value: float) -> str:
    for num in request.reported:
        if num.arm == label and num.unit == "tok/s" \
                and math.isclose(num.value, value, rel_tol=1e-6):
            return _REPORTED_UNITS.get(num.metric, "tok/s")
    return "tok/s"


def _label_matches(
    request: ReproRequest, plan: Plan, cells: Mapping[str, CellFinding]
) -> tuple[list[LabelMatch], list[str]]:
    """Each reported figure beside the cell its label names. A cell that measures another
    kind of figure (requests, not tokens, per second) is named but not compared: the row
    says both units, and no ratio is formed from it."""
    out: list[LabelMatch] = []
    unmatched: list[str] = []
    for label, value in (request.reported_metrics.throughput_tok_s or {}).items():
        cell, reason = match_label(label, plan)
        found = cells.get(cell.cell_id) if cell else None
        unit = _reported_unit(request, label, value)
        metric = found.throughput_metric if found else None
        comparable = metric is None or metric.kind == "tok/s"
        if not comparable and found is not None and metric is not None:
            ours = (f"{found.throughput.median:.2f} {metric.unit}"
                    if found.throughput.median is not None else metric.unit)
            reason = (f"not comparable: we measured {ours}, the report gives {value:.2f} "
                      f"{unit}; {reason}")
        out.append(
            LabelMatch(
                label=label,
                reported_tok_s=value,
                reported_unit=unit,
                cell_id=cell.cell_id if cell else None,
                cell_label=cell.label if cell else None,
                ours_median=found.throughput.median if found and comparable else None,
                ours_unit=metric.unit if metric else None,
                ours_n=found.throughput.n if found and comparable else 0,
                comparable=comparable,
                reason=reason,
            )
        )
        if cell is None:
            unmatched.append(label)
    return out, unmatched


def judge_ratio(
    reported: float, ours: ComparisonFinding, band: NoiseBand
) -> tuple[bool | None, str, str]:
    """(reproduced?, reported class, reason) for one reporter ratio (module docstring)."""
    res = ours.result
    rep_class = "SAME" if band.low <= reported <= band.high else "DIFFERENT"
    if res.ratio is None or res.ci_low is None or res.ci_high is None:
        return None, rep_class, f"we have no ratio: {res.reason}"
    if res.verdict == "UNKNOWN":
        # A CI wide enough to be UNKNOWN contains almost any ratio; that proves nothing.
        return None, rep_class, f"our verdict is UNKNOWN ({res.reason})"
    if res.ci_low <= reported <= res.ci_high:
        return True, rep_class, "our CI contains the reported ratio"
    same_way = (res.ratio > 1) == (reported > 1)
    if res.verdict == "DIFFERENT" and rep_class == "DIFFERENT" and same_way:
        return True, rep_class, "both differ from 1 beyond the margin, in the same direction"
    if res.verdict == "SAME" and rep_class == "SAME":
        return True, rep_class, "both lie inside the margin"
    if res.verdict == "SAME":
        return False, rep_class, "we measure no difference beyond the margin"
    if rep_class == "SAME":
        return False, rep_class, "we measure a difference the reporter did not see"
    return False, rep_class, "we measure the opposite direction"


def _ratios(
    labels: Sequence[LabelMatch], comparisons: Sequence[ComparisonFinding], band: NoiseBand
) -> list[ReportedRatio]:
    # A label whose cell measures another kind of figure gives no ratio of ours.
    by_cell = {m.cell_id: m for m in labels if m.cell_id and m.comparable}
    out: list[ReportedRatio] = []
    for comp in comparisons:
        if comp.kind != "ratio" or len(comp.numerator) != 1 or len(comp.denominator) != 1:
            continue
        num, den = by_cell.get(comp.numerator[0]), by_cell.get(comp.denominator[0])
        if num is None or den is None or den.reported_tok_s <= 0:
            continue
        reported = num.reported_tok_s / den.reported_tok_s
        ok, rep_class, reason = judge_ratio(reported, comp, band)
        res = comp.result
        ours = f"{res.ratio:.2f}x" if res.ratio is not None else "no ratio"
        word = {True: "reproduced", False: "not reproduced", None: "undecided"}[ok]
        out.append(
            ReportedRatio(
                comparison=comp.name,
                numerator_label=num.label,
                denominator_label=den.label,
                reported=reported,
                ours=res.ratio,
                ci_low=res.ci_low,
                ci_high=res.ci_high,
                n_a=res.n_a,
                n_b=res.n_b,
                verdict=res.verdict,
                reported_class=rep_class,
                reproduced=ok,
                sentence=f"{word}: {ours} vs {reported:.2f}x reported "
                f"({res.n_a} v {res.n_b} runs)",
                reason=reason,
            )
        )
    return out


# --- acceptance ---------------------------------------------------------------------------


def _reported_arm(request: ReproRequest, metric: str, value: float) -> str | None:
    for num in request.reported:
        if num.metric == metric and num.arm and math.isclose(num.value, value, rel_tol=1e-6):
            return num.arm
    return None


def _acceptance(
    request: ReproRequest, plan: Plan, cells: Mapping[str, CellFinding]
) -> list[AcceptanceCheck]:
    rm = request.reported_metrics
    out: list[AcceptanceCheck] = []
    for metric, value in (("acceptance_rate", rm.acceptance_rate),
                          ("acceptance_length", rm.acceptance_length)):
        if value is None:
            continue
        arm = _reported_arm(request, metric, value)
        cell = match_label(arm, plan)[0] if arm else None
        targets = [cell] if cell else [c for c in plan.cells
                                            if c.spec and c.replica == 0 and not is_pinned(c)]
        for target in targets:
            found = cells.get(target.cell_id)
            if found is None:
                continue
            out.append(_acceptance_check(metric, value, arm, found))
    return out


def _acceptance_check(
    metric: str, value: float, arm: str | None, cell: CellFinding
) -> AcceptanceCheck:
    acc = cell.acceptance
    ours = None
    if acc is not None:
        ours = acc.acceptance_rate if metric == "acceptance_rate" else acc.mean_acceptance_length
    tol = RATE_TOLERANCE if metric == "acceptance_rate" else LENGTH_TOLERANCE
    agrees = None if ours is None else abs(ours - value) <= tol
    words = metric.replace("_", " ")
    runs = cell.throughput.n
    drafts = acc.num_drafts if acc else 0
    if ours is None:
        sentence = f"{words} {value:.2f} reported; {cell.label} has no acceptance counters"
    else:
        verdict = "agrees" if agrees else "differs"
        sentence = (f"{words} {value:.2f} reported vs {ours:.2f} measured on {cell.label} "
                    f"({runs} runs, {drafts} drafts): {verdict} (tolerance ±{tol:.2f})")
    return AcceptanceCheck(
        metric=metric,
        reported=value,
        reported_arm=arm,
        cell_id=cell.cell_id,
        cell_label=cell.label,
        ours=ours,
        runs=runs,
        drafts=drafts,
        agrees=agrees,
        sentence=sentence,
    )


# --- environment --------------------------------------------------------------------------

_GPU_MODEL = re.compile(r"\b([A-Z]{1,3}\d{2,4}[A-Z]?)\b")
_WHY = {
    "gpu": "a different GPU shifts the balance between launch overhead and compute, "
    "which decides what CUDA graphs and speculation are worth",
    "engine_version": "the engine's behaviour may have changed between the versions "
    "(a bisect between them would tell)",
    "torch": "torch.compile and CUDA-graph code paths change with torch releases",
    "cuda": "kernel choices can differ between CUDA versions",
    "driver": "drivers rarely change throughput ratios, but can",
    "gpu_count": "the reporter's machine has a different number of GPUs (matters only "
    "if the cells use more than one)",
}


# What a runner that says cuda "none" (it ran without a usable GPU) did not measure.
_NO_CUDA = ("the runner ran without a GPU, so no CUDA kernel or CUDA graph ran: what "
            "depends on them is not what was measured")


def _gpu_key(name: str) -> str:
    m = _GPU_MODEL.search(name.upper())
    return m.group(1) if m else name.strip().lower()


def _public(version: str) -> str:
    return version.split("+", 1)[0].strip()


def _differs(name: str, reported: str | None, ours: str | None) -> bool | None:
    if not reported or not ours:
        return None
    if name == "gpu":
        return _gpu_key(reported) != _gpu_key(ours)
    if name == "cuda":
        return reported.split(".")[:2] != ours.split(".")[:2]
    return _public(reported) != _public(ours)


def env_diff(request: ReproRequest, runner: RunEnv | None, *, gpus_needed: int = 1) -> EnvDiff:
    """Field-by-field difference between the reporter's and the runner's environment.

    A different GPU count is listed but only offered as an explanation when the runner
    has fewer GPUs than the cells use (`gpus_needed`)."""
    env = request.environment
    runner = runner or RunEnv()
    gpus = env.gpus or ([request.gpu] if request.gpu else [])
    reported: dict[str, str | None] = {
        "gpu": gpus[0] if gpus else None,
        "gpu_count": str(len(gpus) if env.gpus else request.gpu_count or "") or None,
        "driver": env.driver,
        "cuda": env.cuda_runtime or env.cuda_build,
        "torch": env.torch,
        "engine_version": env.engine_version or request.engine_version,
    }
    ours: dict[str, str | None] = {
        "gpu": runner.gpu,
        "gpu_count": str(runner.gpu_count) if runner.gpu_count is not None else None,
        "driver": runner.driver,
        "cuda": runner.cuda,
        "torch": runner.torch,
        "engine_version": runner.engine_version,
    }
    fields = []
    for name, rep in reported.items():
        diff = _differs(name, rep, ours[name])
        note = _WHY[name] if diff else ""
        if name == "cuda" and ours[name] == "none":
            note = _NO_CUDA
        fields.append(EnvField(field=name, reported=rep, ours=ours[name], differs=diff,
                               note=note))
    return EnvDiff(fields=fields, sentence=_env_sentence(fields, runner, gpus_needed))


def _env_sentence(fields: Sequence[EnvField], runner: RunEnv, gpus_needed: int) -> str:
    # An unknown count is taken as enough; a runner without a GPU has none.
    enough = runner.gpu_count is None or runner.gpu_count >= gpus_needed
    differing = [f for f in fields if f.differs and not (f.field == "gpu_count" and enough)]
    ignored = [f for f in fields if f.differs and f.field == "gpu_count" and enough]
    tail = "".join(f"; {f.field} differs ({f.reported} vs {f.ours}) but every cell runs on "
                   f"{gpus_needed} GPU(s), so it does not matter here" for f in ignored)
    unknown = [f.field for f in fields if f.differs is None]
    if not differing:
        known = "same GPU model, driver, CUDA, torch and engine version as far as both sides say"
        return known + (f" (unknown: {', '.join(unknown)})" if unknown else "") + tail
    ranked = sorted(differing, key=lambda f: list(_WHY).index(f.field))
    parts = [f"{f.field} ({f.reported} vs {f.ours})" for f in ranked]
    lead = ranked[0]
    return (f"the runner differs in {', '.join(parts)}; most likely to explain a mismatch: "
            f"{lead.field}, because {lead.note}{tail}")


# --- entry point --------------------------------------------------------------------------


def against_report(
    request: ReproRequest,
    plan: Plan,
    cells: Sequence[CellFinding],
    comparisons: Sequence[ComparisonFinding],
    band: NoiseBand,
    runner: RunEnv | None,
    *,
    gpus_needed: int = 1,
) -> AgainstReport:
    """Everything the report puts beside the reporter's own numbers."""
    by_id = {c.cell_id: c for c in cells}
    labels, unmatched = _label_matches(request, plan, by_id)
    return AgainstReport(
        labels=labels,
        unmatched=unmatched,
        ratios=_ratios(labels, comparisons, band),
        acceptance=_acceptance(request, plan, by_id),
        env=env_diff(request, runner, gpus_needed=gpus_needed),
    )
