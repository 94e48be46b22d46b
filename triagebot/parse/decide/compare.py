"""Deciding what the report compares and why: the reported metrics, scope and symptom, the
modes compared, and the modality."""

from __future__ import annotations

import re

from triagebot.model import (
    Classification,
    ReportedMetrics,
    ReportedNumber,
    ReproRequest,
)
from triagebot.parse.common import (
    Fact,
    as_bool,
    canonical_mode,
)
from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.decide.scope import NO_SPEC_RE, Signals, classify
from triagebot.parse.prose import iter_lines
from triagebot.parse.results import summarise
from triagebot.parse.runs import RunConfig


def decide_metrics(numbers: list[ReportedNumber]) -> ReportedMetrics:
    return summarise(numbers)


def decide_scope(a: Assembler, numbers: list[ReportedNumber]) -> None:
    body = "\n".join(a.doc.body_lines)
    signals = Signals(
        spec_configured=bool(a.req.speculative_config or a.values("method")
                             or a.values("mtp_flag") or a.req.draft_models
                             or a.values("prompt_lookup")),
        graph_configured=bool(a.values("enforce_eager") or a.req.cudagraph_mode
                              or a.values("encoder_graph")),
        has_numbers=any(n.metric.endswith(("tok_s", "_ms_mean", "acceptance_rate",
                                           "acceptance_length", "e2e_latency_s"))
                        for n in numbers),
        traceback="Traceback (most recent call last)" in body,
    )
    v = classify(a.doc.title or "", body, signals)
    if v.in_scope and v.symptom is None:
        v.symptom, v.symptom_reasons = _symptom_from_numbers(a.req, v.is_spec)
    a.req.in_scope = v.in_scope
    a.req.is_spec_decode_perf_report = v.is_spec
    a.req.symptom = v.symptom  # type: ignore[assignment]
    a.req.classification = Classification(
        in_scope_reasons=v.in_scope_reasons, spec_reasons=v.spec_reasons,
        out_of_scope_reasons=v.out_of_scope_reasons, symptom_reasons=v.symptom_reasons)
    a.req.scope_reasons = list(v.in_scope_reasons if v.in_scope else v.out_of_scope_reasons)


def _symptom_from_numbers(req: ReproRequest, spec: bool) -> tuple[str | None, list[str]]:
    """A problem stated only by the numbers: the spec arm's tok/s below the baseline's,
    or the graph arm's below eager's. Only arms whose names say which is which count."""
    speeds: dict[str, list[tuple[float, str]]] = {}
    for num in req.reported:
        if num.metric == "output_tok_s" and num.arm:
            for kind in arm_kinds(num.arm):
                speeds.setdefault(kind, []).append((num.value, num.arm))
    for on, off, symptom in (("spec", "no_spec", "spec_slower_than_baseline"),
                             ("cudagraph", "eager", "graph_slower_than_eager")):
        if (on == "spec" and not spec) or not speeds.get(on) or not speeds.get(off):
            continue
        slow, fast = max(speeds[on]), max(speeds[off])
        if slow[0] < fast[0]:
            return symptom, [f"the numbers: {slow[1]!r} {slow[0]:g} tok/s < {fast[1]!r} "
                             f"{fast[0]:g} tok/s"]
    return None, []


_ENCODER_RE = re.compile(r"\bvit\b|vision (?:encoder|tower)|mm[-_ ]encoder|encoder[-_ ]"
                         r"(?:cuda ?graph|cudagraph|graph)|cudagraph_mm_encoder|vit_cuda_graph",
                         re.I)
_EAGER_RE = re.compile(r"(?<![\w-])(?:--)?(?:eager(?: mode)?|enforce[-_]eager|no[-_ ]graph|"
                       r"without (?:cuda ?graphs?|cudagraphs?))(?![\w-])", re.I)
_GRAPH_RE = re.compile(r"(?<![\w-])(?:cuda[-_ ]?graphs?|cudagraphs?|graph mode|_graph\b)", re.I)
_FULL_RE = re.compile(r"\bFULL(?:_AND_PIECEWISE|_DECODE_ONLY)?\b[ _-]*(?:cuda ?graphs?|"
                      r"cudagraphs?)|cudagraph_mode\W+FULL|\bFULL_AND_PIECEWISE\b|"
                      r"\bFULL_DECODE_ONLY\b|full cuda ?graph capture")
_PIECEWISE_RE = re.compile(r"\bpiecewise\b", re.I)
_CONFIG_MODE_RE = re.compile(r"CUDAGRAPH_MODE['\"]?\s*[:=]\s*['\"]?(?:CUDAGRAPHMODE\.)?"
                             r"(FULL_AND_PIECEWISE|FULL_DECODE_ONLY|FULL|PIECEWISE|NONE)\b",
                             re.I)
_FUTURE_RE = re.compile(r"upcoming|follow[- ]up|future|next pr|another pr|will be supported|"
                        r"todo|later", re.I)
_NO_SPEC_ARM_RE = re.compile(r"\bno[-_ ]?(?:spec|mtp|eagle|draft|sd)\b|baseline|without|w/o|"
                             r"vanilla|^main$|disabled?", re.I)
# How a results row, a labelled block or a table names its arm. An arm name that says
# "no MTP" or "baseline" is a run without speculation; one naming a method is a run with.
_ARM_NO_SPEC_RE = re.compile(
    r"\bno[-_ ]?(?:spec\w*|mtp|eagle\d?|draft|sd|ngram)\b|\bbaseline\b|\bwithout\b|"
    r"\bw/o\b|\bvanilla\b|\bplain\b|^\s*(?:off|none|disabled?|target(?: only)?|ar|"
    r"autoregressive|no)\s*$|\bdisabled?\b|\bnon[-_ ]spec", re.I)
_ARM_SPEC_RE = re.compile(
    r"spec(?:ulat\w*|[-_ ]?dec\w*)?\b|\bmtp\d?\b|\beagle[-_]?\d?\b|\bn-?gram\b|\bdraft\b|"
    r"\bmedusa\b|\bdflash\b|\bsuffix\b|\bnextn\b|prompt[-_ ]lookup|\bk\s?=\s?\d", re.I)
_ARM_EAGER_RE = re.compile(r"\beager\b|no[-_ ]?(?:cuda[-_ ]?)?graphs?\b|"
                           r"(?:cuda[-_ ]?graphs?|cudagraphs?)[-_ :=]*(?:off|none|disabled?)\b",
                           re.I)
_ARM_GRAPH_RE = re.compile(r"(?<!no )(?<!no-)(?<!no_)\b(?:cuda[-_ ]?graphs?|cudagraphs?|"
                           r"graph mode|graphs? on)\b", re.I)


def arm_kinds(name: str) -> set[str]:
    """The execution modes an arm's own name states: `spec`/`no_spec`, `eager`/`cudagraph`."""
    kinds: set[str] = set()
    if _ARM_NO_SPEC_RE.search(name):
        kinds.add("no_spec")
    elif _ARM_SPEC_RE.search(name):
        kinds.add("spec")
    if _ARM_EAGER_RE.search(name):
        kinds.add("eager")
    elif _ARM_GRAPH_RE.search(name):
        kinds.add("cudagraph")
    return kinds


def _reported_arms(req: ReproRequest) -> dict[str, tuple[set[str], ReportedNumber]]:
    """Arm names from results tables, labelled blocks and result lines, with their kinds."""
    arms: dict[str, tuple[set[str], ReportedNumber]] = {}
    for num in req.reported:
        if num.arm and num.arm not in arms:
            arms[num.arm] = (arm_kinds(num.arm), num)
    return arms


def decide_modes(a: Assembler) -> None:
    req = a.req
    text_lines = [(no, t) for no, t, _ in iter_lines(a.doc.title, a.doc.body_lines)
                  if not _FUTURE_RE.search(t)]
    joined = "\n".join(t for _, t in text_lines)
    encoder = bool(_ENCODER_RE.search(a.doc.title or "")) or bool(a.values("encoder_graph")) \
        or any(isinstance(f.value, dict) and any("encoder" in k or "mm_encoder" in k
                                                 for k in f.value)
               for f in a.values("compilation_config"))
    modes: dict[str, Fact | None] = {}
    arm_modes: dict[str, Fact] = {}

    def add(mode: str, fact: Fact | None) -> None:
        if encoder and mode in ("eager", "cudagraph", "full", "piecewise"):
            mode = "vit_eager" if mode == "eager" else "vit_cudagraph"
        modes.setdefault(mode, fact)

    engine_runs = [r for r in a.runs if r.engine_side]
    spec_runs = [r for r in engine_runs if run_has_spec(r)]
    if (req.is_spec_decode_perf_report or spec_runs) and (
            spec_runs or a.values("method") or req.speculative_config
            or _NO_SPEC_ARM_RE.search(joined) or req.reported_metrics.acceptance_length):
        add("spec", _first(a.values("spec_config") + a.values("method")
                           + a.values("mtp_flag")))
    if spec_runs and len(spec_runs) < len(engine_runs):
        baseline = next(r for r in engine_runs if not run_has_spec(r))
        add("no_spec", Fact("mode", "no_spec", baseline.line, baseline.text, "cmdline"))
    if req.in_scope and req.spec_method and NO_SPEC_RE.search(joined):
        add("no_spec", None)
    for f in a.values("enforce_eager"):
        add("eager" if as_bool(f.value) else "cudagraph", f)
    # Two invocations of one program, one with --enforce-eager and one without: the
    # difference between them is the axis.
    eager_runs = [r for r in engine_runs if "enforce_eager" in r.settings
                  and as_bool(r.get("enforce_eager"))]
    graph_runs = [r for r in engine_runs if "enforce_eager" not in r.settings
                  and any(e.origin == r.origin for e in eager_runs)]
    if graph_runs:
        add("cudagraph", Fact("mode", "cudagraph", graph_runs[0].line, graph_runs[0].text,
                              "cmdline"))
    # A graph mode set in a config is a mode compared only when runs differ in it; one
    # value on every run is the setting, not a comparison.
    config_modes: list[tuple[str, Fact]] = []
    for f in a.values("compilation_config"):
        if isinstance(f.value, dict) and "cudagraph_mode" in f.value:
            mode = canonical_mode(str(f.value["cudagraph_mode"]))
            if mode:
                config_modes.append((mode, f))
    for f in a.values("cudagraph_mode"):
        mode = canonical_mode(str(f.value))
        if mode:
            config_modes.append((mode, f))
    if len({m for m, _ in config_modes}) > 1 or modes.keys() & {"eager", "cudagraph"}:
        for mode, f in config_modes:
            add(mode, f)
    config_lines = {f.line for _, f in config_modes}
    for name, (kinds, num) in _reported_arms(req).items():
        for kind in kinds:
            arm_fact = Fact("mode", kind, num.evidence.line if num.evidence else 0,
                            num.evidence.text if num.evidence else name, "results")
            arm_modes.setdefault(kind, arm_fact)
    for pair in (("spec", "no_spec"), ("eager", "cudagraph")):
        if all(k in arm_modes for k in pair):
            for k in pair:
                add(k, arm_modes[k])
    if a.values("encoder_graph"):
        add("cudagraph", _first(a.values("encoder_graph")))
    if req.in_scope:
        qualified = False
        for no, t in text_lines:
            if no in config_lines:
                continue  # the config's own value, counted above only when runs differ
            if _CONFIG_MODE_RE.search(t) and not (modes.keys() & {"eager", "cudagraph"}) \
                    and len({m.group(1).upper() for m in _CONFIG_MODE_RE.finditer(t)}) < 2 \
                    and len(set(_CONFIG_MODE_RE.findall(joined.upper()))) < 2:
                continue  # one `cudagraph_mode: FULL` wherever it is written: a setting
            if _FULL_RE.search(t):
                add("full", Fact("mode", "full", no, t, "prose"))
                qualified = True
            if _PIECEWISE_RE.search(t) and re.search(r"cuda ?graph|cudagraph|mode|vs", t, re.I):
                add("piecewise", Fact("mode", "piecewise", no, t, "prose"))
                qualified = True
        for no, t in text_lines:
            if _EAGER_RE.search(t) and not re.search(r"enforce_eager\s*=\s*False", t):
                add("eager", Fact("mode", "eager", no, t, "prose"))
            plain = _FULL_RE.sub("", t)
            if _GRAPH_RE.search(plain) and not (qualified and not encoder and
                                                "vs" not in plain.lower()):
                add("cudagraph", Fact("mode", "cudagraph", no, t, "prose"))
        title = a.doc.title or ""
        if re.search(r"\b(?:support|apply|enable|add|use)\b.*(?:cuda ?graph|cudagraph)", title,
                     re.I) and "full" not in modes and "piecewise" not in modes:
            add("eager", Fact("mode", "eager", 0, title, "title", "title"))
            add("cudagraph", Fact("mode", "cudagraph", 0, title, "title", "title"))
    # The symptom is itself a comparison: "slower than without speculation" has two arms.
    if req.symptom == "spec_slower_than_baseline":
        add("spec", _first(a.values("spec_config") + a.values("method")))
        add("no_spec", None)
    elif req.symptom == "graph_slower_than_eager" and not modes.keys() & {"full",
                                                                          "piecewise"}:
        add("eager", None)
        add("cudagraph", None)
    if "no_spec" in modes and "spec" not in modes and req.spec_method:
        # A baseline without speculation is compared with the method the report names.
        add("spec", _first(a.values("spec_config") + a.values("method")))
    order = ["spec", "no_spec", "eager", "cudagraph", "piecewise", "full", "vit_eager",
             "vit_cudagraph"]
    req.modes_compared = [m for m in order if m in modes]  # type: ignore[misc]
    a.cite("modes_compared", [f for f in modes.values() if f])


def run_has_spec(run: RunConfig) -> bool:
    return any(run.get(k) not in (None, "", {}) for k in ("spec_config", "method", "mtp_flag",
                                                         "draft", "prompt_lookup"))


def _first(facts: list[Fact]) -> Fact | None:
    return facts[0] if facts else None


_IMAGE_RE = re.compile(r"image_url|\"image\"\s*:\s*[1-9]|image=[1-9]|multi_modal_data=\{\s*"
                       r"['\"]image|['\"]multi_modal_data['\"]\s*:\s*\{\s*['\"]image|"
                       r"\bimages?=[A-Za-z_\[]|PIL\.Image|Image\.open\(|--modality image|"
                       r"<image>|visionarena|mmmu|\bimages?\b.*(?:input|prompt)", re.I)
_VIDEO_RE = re.compile(r"video_url|\"video\"\s*:\s*[1-9]|video=[1-9]|--modality video|"
                       r"['\"]video['\"]\s*:\s*(?:\[|[A-Za-z_])|\bvideos?=[A-Za-z_\[]", re.I)
_VLM_RE = re.compile(r"\bVLM\b|-VL\b|-VL-|\bOCR\b|vision|multimodal|multi-modal|--mllm|"
                     r"\bmllm\b|\d+V\b|\d+V-", re.I)


_IMAGE_NOUN_RE = re.compile(r"\b(?:images?|pictures?|photos?|screenshots?|charts?|diagrams?|"
                            r"scanned (?:pages?|documents?))\b", re.I)
_VIDEO_NOUN_RE = re.compile(r"\bvideos?\b|\bvideo frames\b|\bclips?\b", re.I)


def decide_modality(a: Assembler) -> None:
    body = "\n".join(a.doc.body_lines)
    image = _IMAGE_RE.search(body)
    video = _VIDEO_RE.search(body)
    vision_model = any(_VLM_RE.search(m) for m in a.req.models)
    if vision_model and not (image or video):
        # A vision model fed "screenshots" or "videos": the inputs are named in words.
        image = _IMAGE_NOUN_RE.search(body)
        video = _VIDEO_NOUN_RE.search(body)
    if image and not video:
        a.req.modality = "image"
    elif video and not image:
        a.req.modality = "video"
    elif image and video:
        return
    elif a.req.in_scope and (a.req.models or a.req.draft_models or a.runs
                             or a.req.spec_method) and not (
            _VLM_RE.search(a.doc.title or "") or _VLM_RE.search(body)
            or any(_VLM_RE.search(m) for m in a.req.models)):
        a.req.modality = "text"
