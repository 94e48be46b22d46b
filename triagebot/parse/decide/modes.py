"""The execution modes of the arms a report describes (`ReproRequest.modes_compared`).

Modes come from what differs between the runs, from arms named in result tables, and from
the reporter's prose; never from pasted output. A capture-size flag or a decode log's
`cuda graph: True` field is not a graph mode compared, `enforce_eager=false` is not an
eager arm, and a title that enables graphs names the graph arm but not an eager one
unless before/after figures show the change.
"""

from __future__ import annotations

import re

from triagebot.parse.common import Fact, as_bool, canonical_mode
from triagebot.parse.decide.arms import kinds_of_arms, run_has_spec
from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.decide.words import EFFECT_RE, RAN_RE, baseline_words, hits
from triagebot.parse.runs import RunConfig
from triagebot.request_model import ReportedNumber

_ENCODER_RE = re.compile(r"\bvit\b|vision (?:encoder|tower)|mm[-_ ]encoder|encoder[-_ ]"
                         r"(?:cuda ?graph|cudagraph|graph)|cudagraph_mm_encoder|vit_cuda_graph",
                         re.I)
_EAGER_RE = re.compile(r"(?<![\w-])(?:--)?(?:eager(?:ly| mode| path| execution)?|enforce[-_]eager|"
                       r"no[-_ ]graphs?|without (?:cuda ?graphs?|cudagraphs?)|(?:cuda ?graphs?|"
                       r"cudagraphs?) (?:disabled|off))(?![\w-])", re.I)
# `enforce_eager=false`, `--no-enforce-eager`, "not eager": graphs on, not an eager arm.
_NOT_EAGER_RE = re.compile(r"\s*[=:]\s*[`'\"]?(?:false|0|no|off)\b", re.I)
# A graph named as a mode, not a flag or field about graphs (`--cuda-graph-max-bs`,
# `cudagraph_capture_sizes`) whose `-`/`_` neighbours this pattern refuses.
_GRAPH_RE = re.compile(r"(?<![\w-])(?:(?i:cuda[ ]?graphs?|cudagraphs?|graph mode|"
                       r"(?:acl|npu|hip)[ ]?graphs?|aclgraph|torchair)|CG)"
                       r"(?![\w-])")
_FULL_RE = re.compile(
    r"\bfull(?:_and_piecewise|_decode_only)?[ _-]*(?:decode[ _-]*)?(?:cuda[ _-]?graphs?|"
    r"cudagraphs?|graphs?)\b|cudagraph_?mode\W+full|CUDAGraphMode\.FULL|\bFULL_AND_PIECEWISE\b|"
    r"\bFULL_DECODE_ONLY\b", re.I)
_PIECEWISE_RE = re.compile(r"\bpiecewise\b", re.I)
_PIECEWISE_CONTEXT_RE = re.compile(r"cuda ?graph|cudagraph|graphs?\b|mode|vs", re.I)
_CONFIG_MODE_RE = re.compile(r"CUDAGRAPH_MODE['\"]?\s*[:=]\s*['\"]?(?:CUDAGRAPHMODE\.)?"
                             r"(FULL_AND_PIECEWISE|FULL_DECODE_ONLY|FULL|PIECEWISE|NONE)\b",
                             re.I)
_FUTURE_RE = re.compile(r"upcoming|follow[- ]up|future|next pr|another pr|will be supported|"
                        r"todo|later", re.I)
_ENABLE_GRAPHS_TITLE_RE = re.compile(r"\b(?:support|apply|enable|add|use)\b.*(?:cuda ?graph|"
                                     r"cudagraph)", re.I)
# Before/after figures of a change: "trace before (propose -> ~16ms)".
_BEFORE_AFTER_RE = re.compile(r"\b(before|after)\b[^\n]{0,40}?\d+(?:\.\d+)?\s?(?:ms|s|tok/s|"
                              r"tokens/s)\b", re.I)
_COMPARED_TO_RE = re.compile(
    r"\b(?:slower|worse|lower|less)\b[^.\n]{0,60}\b(?:than|vs\.?|versus|compared (?:to|with))\s"
    r"(?!(?:the\s+)?(?:eagle\w*|mtp|ngram|n-gram|medusa|dflash|suffix)\b)|"
    r"\bthan without\b|\bwithout (?:it|spec\w*|the draft)\b|"
    # figures before and after: "from 52 tok/s to 41 tok/s", "45ms->60ms"
    r"\bfrom\s+\d[\d.,]*\s?(?:tok\S*|tokens?/s|t/s|ms|s)?\s+to\s+\d|"
    r"\d\s?(?:ms|s|tok\S*|tokens?/s|t/s)?\s?(?:->|→)\s?\d", re.I)
_BETWEEN_PIECES_RE = re.compile(r"\s+between (?:the )?(?:cuda ?)?graph(?:ed)? (?:pieces|"
                                r"segments|partitions)", re.I)
_GRAPH_SWITCH_RE = re.compile(r"\s*(?:cuda_graph_config\s*:|use_cuda_graph\s*[:=]\s*true\b)",
                              re.I)
_ORDER = ["spec", "no_spec", "eager", "cudagraph", "piecewise", "full", "vit_eager",
          "vit_cudagraph"]


class _Modes:
    """The modes found so far, each with the fact that named it first."""

    def __init__(self, encoder: bool) -> None:
        self.encoder = encoder
        self.found: dict[str, Fact | None] = {}

    def add(self, mode: str, fact: Fact | None) -> None:
        if self.encoder and mode in ("eager", "cudagraph", "full", "piecewise"):
            mode = "vit_eager" if mode == "eager" else "vit_cudagraph"
        self.found.setdefault(mode, fact)

    def has(self, *modes: str) -> bool:
        return any(m in self.found for m in modes)


def decide_modes(a: Assembler, reported: list[ReportedNumber]) -> None:
    req = a.req
    w = a.wording
    text_lines = [(no, t) for no, t in ((0, w.title), *w.prose_lines)
                  if t and not _FUTURE_RE.search(t)]
    joined = "\n".join(t for _, t in text_lines)
    encoder = bool(_ENCODER_RE.search(w.title)) or bool(a.values("encoder_graph")) \
        or any(isinstance(f.value, dict) and any("encoder" in k for k in f.value)
               for f in a.values("compilation_config"))
    modes = _Modes(encoder)
    arms = _reported_arms(reported)
    _spec_modes(a, modes, joined, arms)
    _run_graph_modes(a, modes)
    configured = _config_modes(a)
    for pair in (("spec", "no_spec"), ("eager", "cudagraph")):
        if all(k in arms for k in pair):
            for k in pair:
                modes.add(k, arms[k])
    encoder_graphs = a.values("encoder_graph") + [
        f for f in a.values("compilation_config") if isinstance(f.value, dict) and any(
            "encoder" in str(k) and as_bool(v) for k, v in f.value.items())]
    if encoder_graphs:
        # Encoder graphs switched on, and measured: against the encoder run eagerly.
        modes.add("cudagraph", encoder_graphs[0])
        if req.reported or hits(EFFECT_RE, joined, 1):
            modes.add("eager", None)
    named = _prose_modes(a, modes, text_lines, configured, joined) if req.in_scope else set()
    # A graph mode set in a config is a mode compared when runs differ in it, when an
    # eager/graph axis is compared, or when the prose names another mode against it; one
    # value on every run is the setting, not a comparison.
    if len({m for m, _ in configured} | named) > 1 or modes.has("eager", "cudagraph"):
        for mode, f in configured:
            modes.add(mode, f)
    # The symptom is itself a comparison: "slower than without speculation" has two arms.
    if req.symptom == "spec_slower_than_baseline":
        modes.add("spec", _first(a.values("spec_config") + a.values("method")))
        # "Slower than the plain model" has two arms; "enabling MTP drops speed 30%" is a
        # verdict on one.
        if _COMPARED_TO_RE.search(joined):
            modes.add("no_spec", None)
    elif req.symptom == "graph_slower_than_eager" and not modes.has("full", "piecewise"):
        modes.add("eager", None)
        modes.add("cudagraph", None)
    if req.is_spec_decode_perf_report and req.spec_method and not modes.has("spec") and \
            modes.has("eager", "cudagraph", "piecewise", "full"):
        # Graph modes of a speculative setup name arms that speculate.
        modes.add("spec", _first(a.values("spec_config") + a.values("method")))
    if modes.has("no_spec") and not modes.has("spec") and req.spec_method:
        # A baseline without speculation is compared with the method the report names.
        modes.add("spec", _first(a.values("spec_config") + a.values("method")))
    req.modes_compared = [m for m in _ORDER if m in modes.found]  # type: ignore[misc]
    a.cite("modes_compared", [f for f in modes.found.values() if f])
    _cite_unsourced(a, modes, joined)


# Words that name each mode in a sentence, for a mode decided from wording.
_MODE_WORDS = {"spec": ["speculative", "spec decod", "mtp", "eagle", "ngram", "n-gram", "draft",
                        "dflash", "medusa"],
               "eager": ["eager"], "cudagraph": ["cuda graph", "cudagraph", "graph"],
               "piecewise": ["piecewise"], "full": ["full"]}


def _cite_unsourced(a: Assembler, modes: _Modes, joined: str) -> None:
    """Evidence for the modes no setting or result named: the words that name them, else
    the symptom's own evidence (a symptom such as "slower than without" implies its arms)."""
    for mode, fact in modes.found.items():
        if fact is not None:
            continue
        words = baseline_words(joined) if mode == "no_spec" else _MODE_WORDS.get(
            mode.removeprefix("vit_"), [])
        found = a.locate("modes_compared", words)
        if found:
            a.cite("modes_compared", found)
        else:
            a.req.evidence.setdefault("modes_compared", []).extend(
                e for e in a.req.evidence.get("symptom", [])[:1]
                if e not in a.req.evidence.get("modes_compared", []))


def _spec_modes(a: Assembler, modes: _Modes, joined: str, arms: dict[str, Fact]) -> None:
    """`spec` when any arm the report describes speculates; `no_spec` when a run without
    speculation is visible: its command, numbers, or words that name it."""
    req = a.req
    engine_runs = [r for r in a.runs if r.engine_side]
    spec_runs = [r for r in engine_runs if run_has_spec(r)]
    # A run is described: a command or config that speculates, numbers, a stated effect
    # ("1.76x", "a 30% drop") or a baseline. A PR that only renames a log line is not one.
    described = bool(spec_runs or req.reported or arms or hits(EFFECT_RE, joined, 1)
                     or hits(RAN_RE, joined, 1) or baseline_words(joined)
                     or req.symptom == "crash")
    if (req.is_spec_decode_perf_report and described) or spec_runs:
        modes.add("spec", _first(a.values("spec_config") + a.values("method")
                                 + a.values("mtp_flag")))
    # A command the text ends in the middle of (a paste cut short) shows no arm's flags.
    plain_runs = [r for r in engine_runs if not run_has_spec(r) and not _cut_short(a, r)]
    if spec_runs and plain_runs:
        baseline = plain_runs[0]
        modes.add("no_spec", Fact("mode", "no_spec", baseline.line, baseline.text, "cmdline"))
    if req.is_spec_decode_perf_report and baseline_words(joined):
        modes.add("no_spec", None)


def _cut_short(a: Assembler, run: RunConfig) -> bool:
    """Whether `run` is the document's last line and the document stops without ending it."""
    lines = a.doc.lines
    return bool(lines) and lines[-1].strip() != "" and \
        run.line + run.text.count("\n") >= len(lines)


def _run_graph_modes(a: Assembler, modes: _Modes) -> None:
    """Eager or graph arms from the runs' own flags."""
    engine_runs = [r for r in a.runs if r.engine_side]
    for no, line in enumerate(a.doc.body_lines, 1):
        if "cuda_graph" in line and _GRAPH_SWITCH_RE.match(line):
            # TensorRT-LLM runs without graphs unless its config switches them on.
            modes.add("cudagraph", Fact("mode", "cudagraph", no, line, "config"))
            break
    for f in a.values("enforce_eager"):
        modes.add("eager" if as_bool(f.value) else "cudagraph", f)
    # Two invocations of one program, one with --enforce-eager and one without: the
    # difference between them is the axis.
    eager_runs = [r for r in engine_runs if "enforce_eager" in r.settings
                  and as_bool(r.get("enforce_eager"))]
    graph_runs = [r for r in engine_runs if "enforce_eager" not in r.settings
                  and any(e.origin == r.origin for e in eager_runs)]
    if graph_runs:
        modes.add("cudagraph", Fact("mode", "cudagraph", graph_runs[0].line,
                                    graph_runs[0].text, "cmdline"))


def _config_modes(a: Assembler) -> list[tuple[str, Fact]]:
    """Graph modes the runs' configs set, with where."""
    found: list[tuple[str, Fact]] = []
    for f in a.values("compilation_config"):
        if isinstance(f.value, dict):
            raw = f.value.get("cudagraph_mode")
            if raw is None and as_bool(f.value.get("full_cuda_graph")):
                raw = "FULL"
            mode = canonical_mode(str(raw)) if raw is not None else None
            if mode:
                found.append((mode, f))
    for f in a.values("cudagraph_mode"):
        mode = canonical_mode(str(f.value))
        if mode:
            found.append((mode, f))
    return found


def _prose_modes(a: Assembler, modes: _Modes, text_lines: list[tuple[int, str]],
                 configured: list[tuple[str, Fact]], joined: str) -> set[str]:
    """Modes the reporter names in words: FULL and PIECEWISE, eager, CUDA graphs. Returns
    the qualified graph modes (full, piecewise) named."""
    qualified: set[str] = set()
    config_lines = {f.line for _, f in configured}
    text_lines = [(no, t) for no, t in text_lines if _names_a_mode(t)]
    config_values = {canonical_mode(m) for m in _CONFIG_MODE_RE.findall(joined)} \
        | {m for m, _ in configured}
    for no, t in text_lines:
        if no in config_lines:
            continue  # the config's own value, counted when runs differ
        in_line = {canonical_mode(m.group(1)) for m in _CONFIG_MODE_RE.finditer(t)}
        if in_line and not modes.has("eager", "cudagraph") and len(in_line) < 2 \
                and len(config_values) < 2:
            continue  # one `cudagraph_mode: FULL` wherever it is written: a setting
        if _FULL_RE.search(t):
            modes.add("full", Fact("mode", "full", no, t, "prose"))
            qualified.add("full")
        if _PIECEWISE_RE.search(t) and _PIECEWISE_CONTEXT_RE.search(t):
            modes.add("piecewise", Fact("mode", "piecewise", no, t, "prose"))
            qualified.add("piecewise")
    # A change that enables graphs says the old path "ran eagerly": that is the state it
    # replaces, an arm only when its figures are given (below).
    enabling = bool(_ENABLE_GRAPHS_TITLE_RE.search(a.wording.title))
    for no, t in text_lines:
        if _eager_named(t) and not enabling:
            modes.add("eager", Fact("mode", "eager", no, t, "prose"))
        plain = _FULL_RE.sub("", t)
        if _GRAPH_RE.search(plain) and not (qualified and not modes.encoder
                                            and "vs" not in plain.lower()):
            modes.add("cudagraph", Fact("mode", "cudagraph", no, t, "prose"))
    title = a.wording.title
    if _ENABLE_GRAPHS_TITLE_RE.search(title) and not modes.has("full", "piecewise"):
        modes.add("cudagraph", Fact("mode", "cudagraph", 0, title, "title", "title"))
        # The change's own figures before and after it: the "before" arm ran eager.
        sides = {m.group(1).lower() for m in _BEFORE_AFTER_RE.finditer(joined)}
        if sides == {"before", "after"}:
            modes.add("eager", Fact("mode", "eager", 0, title, "title", "title"))
    return qualified


def _names_a_mode(text: str) -> bool:
    """Whether a line can name a graph mode at all: the cheap test before the patterns."""
    low = text.lower()
    return "graph" in low or "eager" in low or "piecewise" in low or "full" in low \
        or "cg" in low


def _eager_named(text: str) -> bool:
    for m in _EAGER_RE.finditer(text):
        before = text[max(0, m.start() - 5):m.start()].lower()
        if _NOT_EAGER_RE.match(text, m.end()) or before.endswith(("no-", "no_", "not ")):
            continue
        if _BETWEEN_PIECES_RE.match(text, m.end()):
            continue  # "attention runs eagerly between graph pieces" is piecewise itself
        return True
    return False


def _reported_arms(reported: list[ReportedNumber]) -> dict[str, Fact]:
    """The modes that arms of results tables, labelled blocks and result lines name."""
    arms: dict[str, Fact] = {}
    kinds = kinds_of_arms(list(dict.fromkeys(n.arm for n in reported if n.arm)))
    for num in reported:
        if not num.arm:
            continue
        for kind in kinds[num.arm]:
            arms.setdefault(kind, Fact("mode", kind, num.evidence.line if num.evidence else 0,
                                       num.evidence.text if num.evidence else num.arm,
                                       "results"))
    return arms


def _first(facts: list[Fact]) -> Fact | None:
    return facts[0] if facts else None
