"""Is this thread ours, is speculative decoding involved, and what went wrong?

Each decision is a handful of named signals; the signals that fired are returned as
reasons so the report can show why a thread was (or was not) taken up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Signals:
    """What the structured extractors already know, so prose need not guess it."""

    spec_configured: bool = False  # a spec config, method flag or draft model was found
    graph_configured: bool = False  # enforce_eager, cudagraph_mode, encoder graph flags
    has_numbers: bool = False  # throughput/latency/acceptance numbers were reported
    traceback: bool = False


@dataclass
class Verdict:
    in_scope: bool
    is_spec: bool
    symptom: str | None
    in_scope_reasons: list[str] = field(default_factory=list)
    spec_reasons: list[str] = field(default_factory=list)
    out_of_scope_reasons: list[str] = field(default_factory=list)
    symptom_reasons: list[str] = field(default_factory=list)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


SPEC_RE = _rx(
    r"speculative|spec[-_ ]?decod|\bspec[-_ ]?dec\b|\bMTP\d?\b|\beagle[-_]?\d?\b|\bngram\b|"
    r"\bn-gram\b|prompt[-_ ]lookup|draft[-_ ]model|draft tokens?|\bmedusa\b|\bdflash\b|"
    r"suffix decoding|acceptance (?:rate|length)|accept(?:ance)? len|\bnextn\b|"
    r"num_speculative_tokens|speculative_config|assistant_model"
)
GRAPH_RE = _rx(
    r"cuda[-_ ]?graphs?|cudagraph|\bCG\b|enforce[-_]eager|piecewise|graph capture|"
    r"capture[ds]? (?:the )?graphs?|graph replay|replay(?:ing)? (?:the )?graph|vit[-_ ]graph|"
    r"encoder[-_ ]graph|torch\.compile.*graph|disable[-_]cuda[-_]graph"
)
PERF_RE = _rx(
    r"\bperf(?:ormance)?\b|throughput|latency|\btok(?:ens)?/s\b|tokens?/s(?:ec)?\b|\bt/s\b|"
    r"\bslow(?:er|s|down|ed)?\b|\bfaster\b|\bspeed(?:up|s)?\b|\bTPOT\b|\bTTFT\b|\bITL\b|"
    r"acceptance|\bbenchmark|\bregress|\boverhead\b|\bms\b|\d\s?ms\b|\bx faster|\bbottleneck|"
    r"\bno[- ]op\b|\bstep time|\bdecode time"
)
CRASH_RE = _rx(
    r"traceback \(most recent call last\)|\bsegfault|segmentation fault|illegal memory access|"
    r"\bcrash(?:es|ed|ing)?\b|\bCUDA error\b|RuntimeError|AssertionError|\bhangs?\b|"
    r"\bdeadlock|core dumped|\bNaN\b|out of memory|\bOOM\b"
)
CRASH_OUTPUT_RE = _rx(
    r"traceback \(most recent call last\)|segmentation fault|illegal memory access|"
    r"\bCUDA error:|\w+Error: |core dumped|\bhangs?\b|\bhung\b|\bdeadlock|stuck|"
    r"out of memory|\bcrash(?:es|ed)\b"
)
GRAPH_CRASH_RE = _rx(r"captur\w*|replay\w*|cuda ?graph|cudagraph")
USAGE_RE = _rx(r"^\s*\[usage\]|\bhow (?:to|do i|can i|should i)\b|\[question\]|^\s*\[doc")
FEATURE_RE = _rx(
    r"\[feature\]|feature request|\[rfc\]|feature, motivation and pitch|any plans? to (?:add|"
    r"support)|would (?:it )?be (?:nice|great)|is there (?:any )?plan"
)
INSTALL_RE = _rx(r"\[installation\]|\binstall(?:ation|ing)? (?:error|fail)|not installed|"
                 r"pip install .*fail|build (?:error|fail)|no matching distribution")
VERSION_REGRESSION_RE = _rx(
    r"after upgrad|since upgrad|upgrad\w* (?:\w+ ){0,3}from|regress\w* (?:from|between|after|"
    r"since)|from v?\d+\.\d+(?:\.\d+)? to v?\d+\.\d+|performance (?:decrease|drop|regression) "
    r"after|(?:slower|worse|faster|better) (?:in|on|with) (?:vllm |sglang )?v?\d+\.\d+[\w.+]* "
    r"than (?:in |on |with )?(?:vllm |sglang )?v?\d+\.\d+"
)
SLOWER_RE = _rx(
    r"\bslow(?:er|s down|ed down|down)?\b|\bworse\b|\bdecreas\w*|\bdrop\w*|\bregress\w*|"
    r"\blower (?:throughput|performance|speed)|\b(?:is|was|are|were|gets?|got) lower\b|"
    r"\bno (?:speed ?up|improvement|gain)|"
    r"\bnot (?:improved|faster)|\bhave not improved|\bless than\b|\bdegrad\w*|\b0\.\d+x\b|"
    r"< ?no_|\bdespite\b|\b(?:latency|overhead) (?:regression|increase)|\+\d+(?:\.\d+)?% "
)
# Words that name a run without speculation. The symptom check also accepts looser
# comparisons ("than the target", "spec is slower") that do not name such a run.
_NO_SPEC_WORDS = (
    r"baseline|without (?:spec|mtp|eagle|ngram|draft|speculat)|no[-_ ]?(?:spec|mtp|eagle)|"
    r"w/o (?:spec|mtp)|vanilla|main model only|with or without|non-spec|disabl\w* (?:spec|mtp)|"
    r"(?:than|vs\.?|versus) without\b"
)
NO_SPEC_RE = _rx(_NO_SPEC_WORDS)
BASELINE_RE = _rx(
    _NO_SPEC_WORDS + r"|w/o|than (?:the )?(?:target|base|no)|"
    r"spec(?:ulative)? (?:decoding )?(?:is|was) slower"
)
ACCEPT_DROP_RE = _rx(
    r"accept\w*(?: rate| length| len)?\b[^.\n]{0,60}\b(?:lower|drop\w*|decreas\w*|regress\w*|"
    r"worse|degrad\w*|collaps\w*|reduced|low|fell|incorrect)|"
    r"(?:lower|drop in|decreas\w* in|regression in|low|poor|reduced|lowering)\s+(?:the\s+)?"
    r"(?:mean\s+)?accept\w*|"
    r"incorrect rejection|rejection sampling behavio|draft logits"
)
GRAPH_SLOWER_RE = _rx(
    r"(?:cuda[-_ ]?graphs?|cudagraphs?|graph mode|\bgraphs?\b)[^.\n]{0,60}\b(?:slower|worse) "
    r"than (?:the )?(?:eager|enforce|--enforce)|eager[^.\n]{0,40}faster than[^.\n]{0,20}"
    r"(?:cuda ?graph|cudagraph|graph)|faster (?:with|in|using|under) [^.\n]{0,20}eager"
    r"[^.\n]{0,20} than [^.\n]{0,20}(?:cuda ?graph|cudagraph|graph)"
)
GRAPH_MODE_SLOWER_RE = _rx(
    r"(?:slower|worse|faster|better) (?:than|vs\.?) (?:the )?(?:--)?(?:piecewise|full\w*|"
    r"eager|enforce[-_]eager|cuda ?graphs?|cudagraphs?)\b"
)
BUG_RE = _rx(
    r"\bbug(?:fix)?\b|\bfix(?:es|ed)?\b|misleading|\bno-?op\b|silently|\bbypass\w*|\bbroken\b|"
    r"\bincorrect\b|\bwrong\b|\bnever\b|\bunexpected\w*|\bnot (?:work|captured|applied|used)|"
    r"\bunchanged\b|\bidentical\b"
)
# Output quality rather than speed: eval scores, outputs that differ between arms.
ACCURACY_RE = _rx(
    r"\baccuracy\b|\bexact[ _]match\b|\bgsm8k\b|\bmmlu\b|\bhumaneval\b|lm[-_]eval|"
    r"\beval(?:uation)? scores?\b|outputs? (?:differ|diverge|mismatch|change)\w*|"
    r"(?:not|aren't|isn't|are not|is not) (?:the same|identical)|\bcorrectness\b|"
    r"\bgibberish\b|\bgarbage (?:output|text)|wrong (?:answers?|outputs?|tokens?)|"
    r"\bdifferent (?:outputs?|results|text|answers?)\b"
)
FEATURE_TITLE_RE = _rx(r"^\W*(?:\[[^\]]*\]\s*)*(?:support|add|apply|implement|enable|"
                       r"introduce|use|optimi[sz]e|speed ?up|accelerate|refactor|expose)\b")


def _hits(pattern: re.Pattern[str], text: str, limit: int = 3) -> list[str]:
    out: list[str] = []
    for m in pattern.finditer(text):
        word = m.group(0).strip()
        if word and word.lower() not in (w.lower() for w in out):
            out.append(word)
        if len(out) >= limit:
            break
    return out


# Scope and symptom are stated early; past this many characters a thread is logs and
# pasted output, which would only slow the word scan down.
CLASSIFY_CHARS = 40_000
# What a thread asks (speed or output quality) is said near its top, not in pasted output.
QUESTION_CHARS = 6_000


def _condensed(body: str) -> str:
    """The body within CLASSIFY_CHARS, with long pasted blocks cut to their ends.

    A 60 KB server log pasted above the question, fenced or not, must not push the
    question out of reach; a block's first and last lines (a command, a traceback's
    error) are kept.
    """
    if len(body) <= CLASSIFY_CHARS:
        return body
    out: list[str] = []
    run: list[str] = []
    fenced = False

    def flush() -> None:
        out.extend(run if len(run) <= 2 * _BLOCK_ENDS else
                   [*run[:_BLOCK_ENDS], "...", *run[-_BLOCK_ENDS:]])
        run.clear()

    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            flush()
            out.append(line)
            fenced = not fenced
        elif fenced or _LOG_LINE_RE.match(line):
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)[:CLASSIFY_CHARS]


_BLOCK_ENDS = 20
_LOG_LINE_RE = re.compile(r"\s*(?:\(\w+ pid=\d+\)\s*)?(?:INFO|DEBUG|WARNING|WARN|ERROR|TRACE)\b|"
                          r"\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:|\s*\d{2}-\d{2} \d{2}:\d{2}:")


def classify(title: str, body: str, signals: Signals) -> Verdict:
    body = _condensed(body)
    text = f"{title}\n{body}"
    spec_words = _hits(SPEC_RE, text)
    graph_words = _hits(GRAPH_RE, text)
    perf_words = _hits(PERF_RE, text)
    v = Verdict(False, False, None)

    spec = bool(spec_words) or signals.spec_configured
    graph = bool(graph_words) or signals.graph_configured
    if spec_words:
        v.spec_reasons.append("speculative decoding named: " + ", ".join(spec_words))
    if signals.spec_configured:
        v.spec_reasons.append("a speculative config, method flag or draft model is set")

    negatives = []
    for label, pattern in (("a usage question", USAGE_RE), ("a feature request", FEATURE_RE),
                           ("an installation problem", INSTALL_RE)):
        where = _hits(pattern, title) or _hits(pattern, body[:3000], 1)
        if where:
            negatives.append(f"{label} ({where[0]!r})")
    crash = bool(_hits(CRASH_RE, text, 1)) or signals.traceback
    graph_crash = crash and bool(_hits(GRAPH_CRASH_RE, _prose_only(body) + "\n" + title, 1))
    perf = bool(perf_words) or signals.has_numbers or graph_crash

    prose = _prose_only(body)
    speed_asked = bool(_hits(PERF_RE, title, 1)) or signals.has_numbers
    if not (spec or graph):
        v.out_of_scope_reasons.append("neither speculative decoding nor CUDA graphs are involved")
    elif not speed_asked and not graph_crash and (
            accuracy := _hits(ACCURACY_RE, f"{title}\n{prose[:QUESTION_CHARS]}", 1)):
        v.out_of_scope_reasons.append(f"a question about output quality ({accuracy[0]!r}), "
                                      "not speed")
    elif perf and not graph_crash and not (signals.has_numbers or signals.spec_configured
                                           or signals.graph_configured) \
            and not _together(title, body):
        v.out_of_scope_reasons.append("speculative decoding or CUDA graphs are only "
                                      "mentioned: no sentence ties them to speed, no "
                                      "numbers, no configuration")
    elif not perf and not (graph and not crash):
        v.out_of_scope_reasons.append("no performance, acceptance or graph-capture problem is "
                                      "described")
    elif crash and not graph_crash and not _hits(PERF_RE, title, 1) and (
            not spec_words or (_hits(CRASH_OUTPUT_RE, body, 1)
                               and not _hits(PERF_RE, _without_code(prose), 1))):
        # Speed words in the engine's own log lines are not a question about speed.
        v.out_of_scope_reasons.append("a crash outside graph capture or replay, with no "
                                      "question about speed")
    feature_title = _hits(FEATURE_RE, title, 1)
    if feature_title and not _hits(SLOWER_RE, title, 1):
        # "[Feature]"/"[RFC]" asks for something new, whatever numbers argue for it.
        v.out_of_scope_reasons.append(f"a feature request ({feature_title[0]!r})")
    elif negatives and not (signals.has_numbers and perf):
        v.out_of_scope_reasons.extend(negatives)

    v.in_scope = not v.out_of_scope_reasons
    if v.in_scope:
        if spec:
            v.in_scope_reasons.append("speculative decoding: " + ", ".join(spec_words or
                                                                           ["configured"]))
        if graph:
            v.in_scope_reasons.append("CUDA graphs: " + ", ".join(graph_words or ["configured"]))
        if perf_words:
            v.in_scope_reasons.append("performance words: " + ", ".join(perf_words))
        if signals.has_numbers:
            v.in_scope_reasons.append("reported throughput/latency/acceptance numbers")
        if graph_crash:
            v.in_scope_reasons.append("a crash while capturing or replaying graphs")
    v.is_spec = v.in_scope and spec
    v.symptom, v.symptom_reasons = _symptom(title, body, prose, v.is_spec, graph, crash,
                                            graph_crash)
    return v


def _together(title: str, body: str) -> bool:
    """Whether the title, or a line with its neighbours, names speculation or graphs and
    speed together: a roadmap listing "speculative decoding" two items away from "faster
    adapter swaps" does not."""
    if PERF_RE.search(title):
        return True
    for rx in (SPEC_RE, GRAPH_RE):
        for n, m in enumerate(rx.finditer(body)):
            if n >= 50:
                break
            # The match's line with the line above and the line below it.
            start = body.rfind("\n", 0, m.start()) + 1
            if start > 0:
                start = body.rfind("\n", 0, start - 1) + 1
            end = body.find("\n", m.end())
            if end >= 0:
                below = body.find("\n", end + 1)
                end = below if below >= 0 else len(body)
            if PERF_RE.search(body, start, end if end >= 0 else len(body)):
                return True
    return False


def _without_code(text: str) -> str:
    """Text outside fenced blocks: what the reporter wrote rather than pasted."""
    return "\n".join(part for i, part in enumerate(re.split(r"^\s*(?:```|~~~).*$", text,
                                                            flags=re.M)) if i % 2 == 0)


def _prose_only(body: str) -> str:
    """Body without traceback frames and log prefixes, where file paths name everything."""
    return "\n".join(ln for ln in body.splitlines()
                     if not re.match(r"\s*(File \"|ERROR|INFO|WARNING|DEBUG|\(\w+ pid=)", ln))


def _symptom(title: str, body: str, prose: str, spec: bool, graph: bool, crash: bool,
             graph_crash: bool) -> tuple[str | None, list[str]]:
    text = f"{title}\n{body}"
    if spec and (hit := _hits(ACCEPT_DROP_RE, f"{title}\n{prose}", 1)):
        return "acceptance_drop", [f"acceptance described as dropping: {hit[0]!r}"]
    if graph and (hit := _hits(GRAPH_SLOWER_RE, text, 1)):
        return "graph_slower_than_eager", [f"graphs slower than eager: {hit[0]!r}"]
    slower = _hits(SLOWER_RE, f"{title}\n{prose}", 2)
    # "FULL graphs slower than PIECEWISE with MTP": speculation is on in both arms.
    graph_arms = _hits(GRAPH_MODE_SLOWER_RE, title, 1)
    # Two releases compared, and no run without speculation named: the release is blamed.
    versions_compared = _hits(VERSION_REGRESSION_RE, f"{title}\n{prose[:QUESTION_CHARS]}", 1) \
        and not _hits(NO_SPEC_RE, text, 1)
    if spec and slower and not graph_arms and not versions_compared and (
            _hits(BASELINE_RE, text, 1) or _hits(SLOWER_RE, title, 1)):
        base = _hits(BASELINE_RE, text, 1)
        return "spec_slower_than_baseline", [
            f"slower with speculation: {slower[0]!r}" + (f" vs {base[0]!r}" if base else "")]
    if (hit := _hits(ACCURACY_RE, f"{title}\n{prose[:QUESTION_CHARS]}", 1)) and not slower:
        return "accuracy", [f"output quality, not speed: {hit[0]!r}"]
    if (hit := _hits(VERSION_REGRESSION_RE, text, 1)):
        return "regression_between_versions", [f"a version upgrade is blamed: {hit[0]!r}"]
    # A crash needs error output or a title that says so; "rather than let it crash" in a
    # PR description is not one.
    crash_output = _hits(CRASH_OUTPUT_RE, body, 1)
    crash_title = _hits(CRASH_RE, title, 1)
    if crash and (crash_output or crash_title) and (graph_crash or not (spec or graph)
                                                     or crash_title):
        return "crash", [f"a crash: {(crash_title or crash_output)[0]!r}"]
    bug = _hits(BUG_RE, f"{title}\n{prose}", 2)
    if FEATURE_TITLE_RE.search(title) and not _hits(BUG_RE, title, 1) and not any(
            b.lower() in ("misleading", "no-op", "noop", "silently", "broken", "wrong")
            for b in bug):
        return None, ["a feature or optimisation with no problem reported"]
    if bug or slower:
        return "other", ["a problem is reported: " + ", ".join(bug or slower)]
    if crash_output:
        return "crash", [f"error output: {crash_output[0]!r}"]
    return None, []
