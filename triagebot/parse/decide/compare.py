"""Whether the thread is ours and what went wrong: the signals the structured extractors
give `scope`, and the symptom `symptom` reads with what the numbers say."""

from __future__ import annotations

from triagebot.parse.common import as_bool
from triagebot.parse.decide.arms import kinds_of_arms, measured_symptom
from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.decide.scope import Signals, classify
from triagebot.parse.decide.symptom import decide_symptom
from triagebot.parse.results import summarise
from triagebot.request_model import Classification, ReportedMetrics, ReportedNumber

_SPEED_METRICS = ("tok_s", "_ms_mean", "acceptance_rate", "acceptance_length", "e2e_latency_s")


def decide_metrics(numbers: list[ReportedNumber]) -> ReportedMetrics:
    return summarise(numbers)


def decide_scope(a: Assembler, numbers: list[ReportedNumber]) -> None:
    signals = Signals(
        spec_configured=bool(a.req.speculative_config or a.values("method")
                             or a.values("mtp_flag") or a.req.draft_models
                             or a.values("prompt_lookup")),
        graph_axis=_graph_axis(a, numbers),
        graph_shared=_graph_shared(a),
        has_numbers=any(n.metric.endswith(_SPEED_METRICS) for n in numbers),
        traceback="Traceback (most recent call last)" in a.wording.body,
    )
    v = classify(a.wording, signals)
    measured = measured_symptom(numbers, v.is_spec, a.runs) if v.in_scope else None
    symptom, why = decide_symptom(a.wording, v.is_spec, v.in_scope and v.graph, v.crash,
                                  v.graph_crash, measured)
    a.req.in_scope = v.in_scope
    a.req.is_spec_decode_perf_report = v.is_spec
    a.req.symptom = symptom  # type: ignore[assignment]
    if symptom:
        a.cite_reasons("symptom", why)
    a.req.classification = Classification(
        in_scope_reasons=v.in_scope_reasons, spec_reasons=v.spec_reasons,
        out_of_scope_reasons=v.out_of_scope_reasons, symptom_reasons=why)
    a.req.scope_reasons = list(v.in_scope_reasons if v.in_scope else v.out_of_scope_reasons)


def _graph_settings(a: Assembler) -> set[tuple[bool, str]]:
    return {(bool(as_bool(r.get("enforce_eager"))) if r.get("enforce_eager") is not None
             else False, str(r.get("cudagraph_mode") or ""))
            for r in a.runs if r.engine_side}


def _graph_shared(a: Assembler) -> bool:
    engine_runs = [r for r in a.runs if r.engine_side]
    return len(engine_runs) > 1 and len(_graph_settings(a)) == 1 and any(
        r.get("enforce_eager") is not None or r.get("cudagraph_mode") for r in engine_runs)


def _graph_axis(a: Assembler, numbers: list[ReportedNumber]) -> bool:
    """Graphs are what the runs compare: engine runs differ in their graph setting, the
    encoder's graphs are switched on, or result arms are named eager and graph. A setting
    every run shares (`--enforce-eager` on both arms of a LoRA comparison) is not."""
    if a.values("encoder_graph"):
        return True
    if len(_graph_settings(a)) > 1:
        return True
    named = kinds_of_arms(list(dict.fromkeys(n.arm for n in numbers if n.arm)))
    return {"eager", "cudagraph"} <= {k for kinds in named.values() for k in kinds}
