"""What went wrong, read from the headline first: the title says what the thread is about,
and the prose only decides what the title leaves open.

A drop word counts for the metric of its own clause ("throughput drops" is not an
acceptance drop); "no gain" and "worse than expected" are a speed-up below expectation
(`other`), not a run slower than its baseline; a crash is named by its error, a CUDA
error code or a failed assert included.
"""

from __future__ import annotations

import re

from triagebot.parse.common import fast
from triagebot.parse.decide.wording import Wording
from triagebot.parse.decide.words import (
    CRASH_RE,
    SPEC_RE,
    baseline_words,
    crash_output,
    hits,
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


_SPEED_NOUN = (r"(?:throughput|performance|speed|tok(?:en)?s?/s(?:ec)?|tps|qps|metrics|"
               r"generation rate)")
# Slower, in a clause about speed.
SLOWER_RE = fast(
    r"\bslow(?:er|s down|ed down|down|ing(?: things)? down)\b|\b(?:poor|worse|bad|lower|"
    r"degraded|reduced) (?:e2e |end-to-end )?" + _SPEED_NOUN + r"|\bperform\w* (?:worse|"
    r"slower|poorly)|\bunderperform\w*|" + _SPEED_NOUN + r"\b[^.,;\n]{0,30}?\b(?:drops?|"
    r"dropped|decreas\w*|degrad\w*|regress\w*|fell|falls|goes down|went down|is lower|was "
    r"lower|reduced)\b|\b(?:drop|decrease|degradation|regression|loss|reduction) (?:in|of) "
    r"(?:the )?" + _SPEED_NOUN + r"|\b(?:decreas|regress)\w* (?:the )?" + _SPEED_NOUN
    + r"|\bdegrad\w* "
    r"(?:the )?" + _SPEED_NOUN + r"|\b(?:higher|increased?) (?:e2e )?latency|latency "
    r"(?:regression|increase)|\bnet (?:loss|negative)\b|\bslows\b[^.\n]{0,40}\bby \d|"
    # "62% of the throughput without it", "disabling MTP restores 1.4x"
    r"(?<![\d.])\d{1,2}(?:\.\d+)?\s?% of the (?:throughput|speed|performance|tok/s)\b|"
    r"\bdisabl\w* (?:the )?(?:spec\w*|mtp|eagle\w*|draft\w*|ngram)[^.\n]{0,30}\brestor\w*|"
    r"\bkills? (?:the |my |our )?" + _SPEED_NOUN
    + r"|\b0\.\d+\s?[x×](?![\w])|< ?no_|\bhave decreased\b|"
    # Chinese: performance/throughput falls, degraded, slower.
    r"(?:性能|吞吐|速度)\s?(?:下降|降低|劣化|变差)|劣化|变慢",
    "spwbldrutqmghink0123456789<性吞速劣变")
# A speed-up smaller than hoped for: the run is not slower than its baseline.
UNDERWHELMING_RE = fast(
    r"\bno (?:\w+ )?(?:gain|speed-?up|improvement|benefit)s?\b|\bnot (?:improved|faster)\b|"
    r"\bha(?:ve|s) not improved\b|\b(?:doesn'?t|does not|didn'?t|did not|don'?t|do not|"
    r"cannot|can'?t|fails? to) (?:\w+ ){0,3}(?:improvement|speed-?up|gain|faster|reach)\w*|"
    r"\b(?:worse|lower|slower|less|smaller|weaker) than (?:expected|anticipated|reported|"
    r"claimed|in the paper)|\bbelow (?:expectations?|what|(?:the )?(?:paper|reported|claimed|"
    r"expected|advertised))|\b(?:far|well|way|much) below\b|\bfar from\b|\binconsistent "
    r"with\b|\bnot (?:good|as (?:fast|good))\b|\bunchanged\b|\bidentical\b|\bno difference\b|"
    r"\bonly (?:~|about )?\d+(?:\.\d+)?\s?% (?:better|faster)|"
    # Chinese: no gain, no improvement.
    r"(?:无|没有|没)\s?(?:收益|提升|加速)",
    "nhdcfwlsbiuo无没")
ACCEPT_DROP_RE = fast(
    r"(?:accept\w*|\bacc\.?(?= len))(?: rate| length| len)?\b(?:(?!throughput|speed|latency|"
    r"tok/s|tokens/s|performance)[^.\n]){0,60}?\b(?:lower|drop\w*|decreas\w*|regress\w*|worse|degrad\w*|"
    r"collaps\w*|reduced|low|fell|falls|incorrect)\b|"
    r"(?:lower|drop in|decreas\w* in|regression in|low|poor|reduced|lowering|degradation "
    r"(?:in|of))\s+(?:the\s+)?(?:mean\s+)?accept\w*|"
    r"incorrect rejection|rejection sampling behavio|draft logits|"
    r"(?<![\d.])0(?:\.0+)?\s?%\s+(?:\w+\s+){0,2}accept\w*|accept\w*(?: rate)?\s*(?:of|is|=|:|at|"
    r"drops? to|falls? to)?\s*[0-4](?:\.\d+)?\s?%|accept\w*(?: rate| length)?\s+(?:is\s+)?"
    r"(?:near|close to|almost|nearly|practically) (?:zero|0)|"
    # An accepted length near 1 in other words: "1.02 tokens per step", "AL stuck at 1.0".
    r"(?:tokens per (?:step|forward|verification)|tokens/step|\bAL\b|mean accepted tokens)\s*"
    r"(?:of|is|=|:|stays at|stuck at|only|around|about)?\s*[~≈]?\s*1(?:\.0\d?)?(?![.\d])|"
    r"(?<![\d.])1(?:\.0\d?)?\s+tokens per (?:step|forward|verification)",
    "aldrpi0tma1")
_GRAPHS = (r"(?:(?:cuda|hip|acl|npu)[-_ ]?graphs?|cudagraphs?|aclgraph|graph mode|torchair|"
           r"\bgraphs?\b)")
GRAPH_SLOWER_RE = _rx(
    _GRAPHS + r"[^.\n]{0,60}\b(?:slower|worse) "
    r"than (?:the )?(?:eager|enforce|--enforce)|\b(?:slower|worse) (?:with|under|in|using) "
    + _GRAPHS + r"[^.\n]{0,30}\bthan (?:with |in |under )?"
    r"(?:the )?(?:eager|--enforce)|eager[^.\n]{0,40}faster than[^.\n]{0,20}"
    r"(?:cuda ?graph|cudagraph|graph)|faster (?:with|in|using|under) [^.\n]{0,20}eager"
    r"[^.\n]{0,20} than [^.\n]{0,20}(?:cuda ?graph|cudagraph|graph)"
)
GRAPH_MODE_SLOWER_RE = _rx(
    r"(?:slower|worse|faster|better) (?:than|vs\.?) (?:the )?(?:--)?(?:piecewise|full\w*|"
    r"eager|enforce[-_]eager|cuda ?graphs?|cudagraphs?)\b"
)
VERSION_REGRESSION_RE = _rx(
    r"after upgrad|since upgrad|upgrad\w* (?:\w+ ){0,3}from|regress\w* (?:from|between|after|"
    r"since)|from v?\d+\.\d+(?:\.\d+)? to v?\d+\.\d+|performance (?:decrease|drop|regression) "
    r"after|(?:slower|worse|faster|better) (?:in|on|with) (?:vllm |sglang )?v?\d+\.\d+[\w.+]* "
    r"than (?:in |on |with )?(?:vllm |sglang )?v?\d+\.\d+|\bgone after\b"
)
# Builds or versions set against each other: a good and a bad one, a bisection, a
# post-merge slowdown. Speed lost between them is a regression between versions.
VERSIONS_COMPARED_RE = _rx(
    r"\bbisect\w*|\((?:good|bad)\)|\bfirst bad\b|\blast good\b|\bnearest good\b|"
    r"\bpost[- ]merge\b|\bafter (?:the )?(?:merge|upgrade)\b|\bsince (?:the )?merge\b|"
    r"compared to the (?:pr|previous|old(?:er)?|earlier) (?:branch|build|version|release|"
    r"nightly)|\bbetween (?:versions|releases|builds|nightlies|commits)\b|\bupgrad\w* to\b")
BUG_RE = fast(
    r"\bbug(?:fix)?\b|\bfix(?:es|ed)?\b|misleading|\bno-?op\b|silently|\bbypass\w*|\bbroken\b|"
    r"\bincorrect\b|\bwrong\b|\bnever\b|\bunexpected\w*|\bnot (?:work|captured|applied|used)|"
    r"\bunchanged\b|\bidentical\b|\bcorrupt\w*|\binvalid\b|\bregress\w*|\boverhead\b|"
    r"\bdowngrad\w*",
    "bfmnsiwucrod")
FEATURE_TITLE_RE = _rx(r"^\W*(?:\[[^\]]*\]\s*)*(?:support|add|apply|implement|enable|"
                       r"introduce|use|optimi[sz]e|speed ?up|accelerate|refactor|expose|fuse|"
                       r"reduce|remove|avoid|skip|cache|batch|overlap|improve|align|move|allow|"
                       r"capture|replace|reuse|precompute|vectori[sz]e|port|extend|integrate)\b")
_TAGS_RE = _rx(r"^\W*(?:\[[^\]]*\]\s*)+:?\s*")
# Words that report a problem even in a pull request that adds something.
_PROBLEM_WORDS = ("misleading", "no-op", "noop", "silently", "broken", "wrong", "regression",
                  "regressions", "regressed", "downgrade", "downgrades", "downgraded")


_THAN_RE = _rx(r"\b(?:slower|worse|lower)\b[^.\n]{0,40}?\bthan\b")
# "DFlash slower than EAGLE3": one method against another, not against no speculation.
_THAN_METHOD_RE = _rx(r"\b(?:slower|worse|lower)\s+(?:\w+\s+){0,2}?(?:than|vs\.?)\s+(?:the\s+)?"
                      r"(?:eagle\w*|mtp|ngram|n-gram|medusa|dflash|draft[- ]model|suffix)\b")


def decide_symptom(w: Wording, spec: bool, graph: bool, crash: bool, graph_crash: bool,
                   measured: tuple[str, str] | None = None) -> tuple[str | None, list[str]]:
    """The symptom and why. `measured` is what the numbers say, when arms named for what
    they ran show it (a spec arm's tok/s below its baseline's), with the figures."""
    title, prose = w.title, w.prose
    text = f"{title}\n{prose}"
    baseline = baseline_words(text)
    # The headline first.
    if hit := hits(VERSION_REGRESSION_RE, title, 1):
        return "regression_between_versions", [f"the title blames a version: {hit[0]!r}"]
    if spec and (hit := hits(ACCEPT_DROP_RE, title, 1)):
        return "acceptance_drop", [f"the title says acceptance dropped: {hit[0]!r}"]
    if graph and (hit := hits(GRAPH_SLOWER_RE, title, 1)):
        return "graph_slower_than_eager", [f"graphs slower than eager: {hit[0]!r}"]
    slower_title = hits(SLOWER_RE, title, 1)
    if slower_title and not baseline and (hit := hits(VERSIONS_COMPARED_RE, w.question, 1)):
        return "regression_between_versions", [
            f"slower ({slower_title[0]!r}) between versions: {hit[0]!r}"]
    graph_arms = hits(GRAPH_MODE_SLOWER_RE, title, 1)
    # "fp8 KV cache slower than fp16": a title comparing something other than speculation.
    other_subject = (not SPEC_RE.search(title) and bool(_THAN_RE.search(title))) or bool(
        _THAN_METHOD_RE.search(title))
    if spec and slower_title and not graph_arms and not other_subject and (baseline or not hits(
            UNDERWHELMING_RE, title, 1)):
        return "spec_slower_than_baseline", [
            f"the title says slower: {slower_title[0]!r}"
            + (f" (baseline: {baseline[0]!r})" if baseline else "")]
    # Then what the prose says. Speed lost against a baseline is the symptom even when
    # low acceptance is given as its cause.
    slower = hits(SLOWER_RE, prose, 1)
    versions = hits(VERSION_REGRESSION_RE, w.question, 1)
    if spec and slower and measured and measured[0] == "spec_slower_than_baseline" \
            and not versions:
        return "spec_slower_than_baseline", [f"slower with speculation: {slower[0]!r}; "
                                             f"{measured[1]}"]
    if spec and (hit := hits(ACCEPT_DROP_RE, prose, 1)) and not slower_title:
        return "acceptance_drop", [f"acceptance described as dropping: {hit[0]!r}"]
    if graph and (hit := hits(GRAPH_SLOWER_RE, text, 1)):
        return "graph_slower_than_eager", [f"graphs slower than eager: {hit[0]!r}"]
    if spec and slower and baseline and not graph_arms and not versions:
        return "spec_slower_than_baseline", [
            f"slower with speculation: {slower[0]!r} vs {baseline[0]!r}"]
    if versions and not baseline:
        return "regression_between_versions", [f"a version upgrade is blamed: {versions[0]!r}"]
    # A crash needs error output or a title that says so; "rather than let it crash" in a
    # PR description is not one.
    error_output = crash_output(w.body) or crash_output(prose)
    crash_title = hits(CRASH_RE, title, 1)
    if crash and (error_output or crash_title) and (graph_crash or not (spec or graph)
                                                     or crash_title):
        return "crash", [f"a crash: {(crash_title or error_output)[0]!r}"]
    problem = hits(BUG_RE, text, 2) + hits(UNDERWHELMING_RE, text, 1)
    if measured and (problem or slower or slower_title or not FEATURE_TITLE_RE.search(title)):
        return measured[0], [measured[1]]
    # "[BugFix] Add support for X": the tag files it; the title's verb says it adds a
    # feature, unless the text names a problem beyond the tag ("the graphs are never used").
    tagged_fix = bool(hits(BUG_RE, title, 1)) and not hits(BUG_RE, _TAGS_RE.sub("", title), 1)
    beyond_tag = [b for b in problem if b.lower() not in ("bug", "bugfix", "fix", "fixes",
                                                          "fixed")]
    if FEATURE_TITLE_RE.search(title) and (not hits(BUG_RE, title, 1) or (
            tagged_fix and not beyond_tag)) and not any(
            b.lower() in _PROBLEM_WORDS for b in problem):
        return None, ["a feature or optimisation with no problem reported"]
    if problem or slower or slower_title:
        return "other", ["a problem is reported: " + ", ".join(problem or slower or slower_title)]
    if error_output:
        return "crash", [f"error output: {error_output[0]!r}"]
    return None, []
