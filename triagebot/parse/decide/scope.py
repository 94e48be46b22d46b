"""Is this thread ours, and is speculative decoding involved?

A thread is in scope when it asks about performance (speed, latency, acceptance, the cost
of capturing graphs, or a crash while capturing or replaying them) of speculative decoding
or of graph execution. The words are not enough: graph words in a logging PR, a refactor
or an `--enforce-eager` both arms share do not make a question about graphs, and a
template's heading is not the reporter's question. Each decision is a handful of named
signals; the signals that fired are returned as reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triagebot.parse.decide.wording import Wording
from triagebot.parse.decide.words import (
    ACCURACY_RE,
    CAPTURE_COST_RE,
    CRASH_RE,
    GRAPH_RE,
    GRAPHS_OFF_RE,
    PERF_RE,
    SPEC_RE,
    SPEED_RE,
    crash_output,
    hits,
)


@dataclass
class Signals:
    """What the structured extractors already know, so prose need not guess it."""

    spec_configured: bool = False  # a spec config, method flag or draft model was found
    graph_axis: bool = False  # runs differ in their graph setting, or encoder graphs are set
    graph_shared: bool = False  # several runs, one graph setting (`--enforce-eager` on all)
    has_numbers: bool = False  # throughput/latency/acceptance numbers were reported
    traceback: bool = False


@dataclass
class Verdict:
    in_scope: bool
    is_spec: bool
    graph: bool
    crash: bool
    graph_crash: bool
    in_scope_reasons: list[str] = field(default_factory=list)
    spec_reasons: list[str] = field(default_factory=list)
    out_of_scope_reasons: list[str] = field(default_factory=list)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


USAGE_RE = _rx(r"^\s*\[usage\]|\bhow (?:to|do i|can i|should i)\b|\[question\]|^\s*\[doc")
FEATURE_RE = _rx(
    r"\[feature\]|feature request|\[rfc\]|any plans? to (?:add|support)|would (?:it )?be "
    r"(?:nice|great)|is there (?:any )?plan")
INSTALL_RE = _rx(r"\[installation\]|\binstall(?:ation|ing)? (?:error|fail)|not installed|"
                 r"pip install .*fail|build (?:error|fail)|no matching distribution")
# A change to the test suite or CI: tests that will guard speed measure nothing yet.
TESTS_TITLE_RE = _rx(r"^\W*(?:\[[^\]]*\]\s*)*(?:\[(?:ci|tests?|ci/build|testing)\]|"
                     r"(?:add|adds|added|new|introduce)\b[^\n]{0,60}\b(?:tests?|ci|benchmarks? "
                     r"(?:suite|job)s?)\b)")
_ACCEPTANCE_RE = _rx(r"\baccept(?:ance|ed)\b|\bacc\.? len|\bAL\b")
_MEASURED_TITLE_RE = _rx(r"\bmeasured\b|\d+(?:\.\d+)?\s?%|\d\s?ms\b")
DOCS_TITLE_RE = _rx(r"^\W*(?:\[[^\]]*\]\s*)*(?:docs?(?:\([^)]*\))?\s*:|\[docs?\])|^\s*\[doc\]")
# A graph crash is one the thread places at capture or replay, not any crash near graphs.
CAPTURE_RE = _rx(r"\bcaptur\w*|\breplay\w*|cuda_?graph_runner|graph\.replay")
_GRAPH_FLAG_RE = _rx(r"`?--?(?:enforce[-_]eager|disable[-_]cuda[-_]graph|no[-_]cuda[-_]graph)"
                     r"(?:\s*=\s*\w+)?`?|`?enforce_eager\s*=\s*\w+`?")
# "A vs B", "compared to B", "X is 3x slower than B", "45ms->60ms": the thread states a
# comparison.
_COMPARISON_RE = _rx(r"\b(?:slower|faster|worse|better|lower|higher)\b[^.\n]{0,60}\bthan\b|"
                     r"\bvs\.?\b|\bversus\b|\bcompared (?:to|with)\b|"
                     # a figure that moved: "45ms->60ms", "26 → 21 tok/s"
                     r"\d\s?(?:ms|s|tok\w*/s)?\s?(?:->|→|=>)\s?\d")


def classify(w: Wording, signals: Signals) -> Verdict:
    text = f"{w.title}\n{w.prose}"
    spec_words = hits(SPEC_RE, text, affirmed=True)
    # A graph flag every run carries is a setting of the comparison, not its subject.
    graph_words = hits(GRAPH_RE, _GRAPH_FLAG_RE.sub(" ", text) if signals.graph_shared else text)
    perf_words = hits(PERF_RE, text)
    spec = bool(spec_words) or signals.spec_configured
    graph = bool(graph_words) or signals.graph_axis
    crash = bool(hits(CRASH_RE, text, 1) or crash_output(w.body)) \
        or signals.traceback
    # The reporter places the crash at capture or replay, or the pasted output does and
    # no sentence says graphs were off in the run that failed.
    graph_crash = crash and bool(hits(CAPTURE_RE, text, 1) or (
        hits(CAPTURE_RE, w.body, 1) and not hits(GRAPHS_OFF_RE, text, 1)) or (
        # "MTP + FULL_AND_PIECEWISE cudagraph deadlocks": the title puts it in graph runs.
        hits(CRASH_RE, w.title, 1) and hits(GRAPH_RE, w.title, 1)))
    capture_cost = bool(hits(CAPTURE_COST_RE, text, 1))
    perf = bool(perf_words) or signals.has_numbers or graph_crash or capture_cost
    v = Verdict(False, False, graph, crash, graph_crash)
    if spec_words:
        v.spec_reasons.append("speculative decoding named: " + ", ".join(spec_words))
    if signals.spec_configured:
        v.spec_reasons.append("a speculative config, method flag or draft model is set")

    reasons = v.out_of_scope_reasons
    # Acceptance is a speed question too: "acceptance on GSM8K prompts is low" uses an eval
    # set as the prompts, it does not ask about answers.
    speed_stated = signals.has_numbers or bool(hits(SPEED_RE, text, 1)) or (
        spec and bool(_ACCEPTANCE_RE.search(text)))
    if not (spec or graph):
        reasons.append("neither speculative decoding nor CUDA graphs are involved")
    elif not speed_stated and not graph_crash and (accuracy := hits(ACCURACY_RE, w.question, 1)):
        reasons.append(f"a question about output quality ({accuracy[0]!r}), not speed")
    elif not perf:
        reasons.append("no performance, acceptance or graph-capture problem is described")
    elif not graph_crash and not capture_cost and not (
            signals.has_numbers or signals.spec_configured or signals.graph_axis) \
            and not _together(w):
        reasons.append("speculative decoding or CUDA graphs are only mentioned: no sentence "
                       "ties them to speed, no numbers, no configuration")
    elif crash and not graph_crash and not hits(PERF_RE, w.title, 1) and (
            not spec_words or (crash_output(w.body) and not hits(PERF_RE, w.prose, 1))):
        # Speed words in the engine's own log lines are not a question about speed.
        reasons.append("a crash outside graph capture or replay, with no question about speed")
    if not reasons:
        reasons.extend(_request_kind(w, signals, perf, capture_cost))

    v.in_scope = not reasons
    if v.in_scope:
        if spec:
            v.in_scope_reasons.append("speculative decoding: "
                                      + ", ".join(spec_words or ["configured"]))
        if graph:
            v.in_scope_reasons.append("CUDA graphs: " + ", ".join(graph_words or ["configured"]))
        if perf_words:
            v.in_scope_reasons.append("performance words: " + ", ".join(perf_words))
        if signals.has_numbers:
            v.in_scope_reasons.append("reported throughput/latency/acceptance numbers")
        if graph_crash:
            v.in_scope_reasons.append("a crash while capturing or replaying graphs")
        if capture_cost:
            v.in_scope_reasons.append("the cost of capturing graphs")
    v.is_spec = v.in_scope and spec
    return v


def _request_kind(w: Wording, signals: Signals, perf: bool,
                  capture_cost: bool = False) -> list[str]:
    """A feature request, a usage question, an installation problem or a documentation
    change, by the title's tag or the reporter's own words (not a template's headings).
    A request that measures what it asks about (the time capturing graphs takes, a share
    of the step time) reports performance."""
    feature = hits(FEATURE_RE, w.title, 1)
    asks_perf = capture_cost or bool(_MEASURED_TITLE_RE.search(w.title))
    if feature and not hits(SPEED_RE, w.title, 1) and not asks_perf:
        # "[Feature]"/"[RFC]" asks for something new, whatever numbers argue for it.
        return [f"a feature request ({feature[0]!r})"]
    measured = signals.has_numbers and perf
    compared = bool(hits(_COMPARISON_RE, w.question, 1)) and bool(hits(SPEED_RE, w.question, 1))
    if DOCS_TITLE_RE.search(w.title) and not signals.has_numbers:
        return ["a documentation change with no measurement"]
    if TESTS_TITLE_RE.search(w.title) and not signals.has_numbers:
        return ["a change to tests or CI with no measurement"]
    out = []
    for label, pattern in (("a usage question", USAGE_RE), ("a feature request", FEATURE_RE),
                           ("an installation problem", INSTALL_RE)):
        where = hits(pattern, w.title, 1) or hits(pattern, w.prose[:3000], 1)
        if where and not (measured or compared or asks_perf):
            out.append(f"{label} ({where[0]!r})")
    return out


def _together(w: Wording) -> bool:
    """Whether the title, or a prose line with its neighbours, names speculation or graphs
    and speed together: a roadmap listing "speculative decoding" two items away from
    "faster adapter swaps" does not."""
    if PERF_RE.search(w.title):
        return True
    lines = [text for _, text in w.prose_lines]
    named = 0
    for i, line in enumerate(lines):
        if not (SPEC_RE.search(line) or GRAPH_RE.search(line)):
            continue
        named += 1
        if named > 50:
            break
        if any(PERF_RE.search(near) for near in lines[max(0, i - 1):i + 2]):
            return True
    return False
