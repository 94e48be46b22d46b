"""The words a thread uses for speculation, graphs, speed, crashes and output quality, which
scope, symptom and modes read in the reporter's prose."""

from __future__ import annotations

import re

from triagebot.parse.common import fast


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


# "The n-gram method was not tried", "we did not use EAGLE": a method named to say it
# was not run.
_NOT_USED = (r"(?:not|never|didn'?t|haven'?t|wasn'?t|weren'?t|no longer)\s+(?:\w+\s+)?"
             r"(?:use[ds]?|using|tried|try|enabled?|turned on|run|ran|involved|applied|"
             r"configured)\b")
_NEGATION_RE = re.compile(r"\b" + _NOT_USED + r"[^.;:!?,]{0,12}$", re.I)  # "did not use X"
_NEGATED_AFTER_RE = re.compile(r"\s*(?:was|were|is|are|has|have|had)?\s*(?:been\s+)?" + _NOT_USED,
                               re.I)  # "X was not tried"
_CLAUSE_END_RE = re.compile(r"[.;:!?,]|\bbut\b")


def negated(text: str, start: int, end: int) -> bool:
    """Whether the clause around text[start:end] denies it ran."""
    before = _CLAUSE_END_RE.split(text[max(0, start - 40):start])[-1]
    after = text[end:end + 40]
    # The method's own noun may follow it: "the n-gram method was not tried".
    after = re.sub(r"^\s*(?:method|decoding|drafting|speculation)\b", "", after, flags=re.I)
    return bool(_NEGATION_RE.search(before) or _NEGATED_AFTER_RE.match(after))


def hits(pattern: re.Pattern[str], text: str, limit: int = 3,
         affirmed: bool = False) -> list[str]:
    """Up to `limit` distinct matches of `pattern` in `text`, as written; with `affirmed`,
    not those a clause denies ran ("we did not use speculative decoding")."""
    out: list[str] = []
    for m in pattern.finditer(text):
        if affirmed and negated(text, m.start(), m.end()):
            continue
        word = m.group(0).strip()
        if word and word.lower() not in (w.lower() for w in out):
            out.append(word)
        if len(out) >= limit:
            break
    return out


# Speed and acceptance in Chinese, Japanese and Korean reports (the document stage has put
# a space between these words and any Latin name or number beside them): performance,
# throughput, speed, latency, speed-up, slower, degraded; acceptance rate.
CJK_SPEED = r"性能|吞吐|速度|延迟|时延|加速|变慢|劣化|성능|속도|처리량|지연"
CJK_SPEED_FIRST = "性吞速延时加变劣성속처지"
CJK_ACCEPTANCE = r"(?:接受|采纳|接收|采样接受)率|受理率|수락률"
CJK_ACCEPTANCE_FIRST = "接采受수"
CJK_SPECULATIVE = r"投机(?:解码|推理|采样)"

# A speed-up factor ("1.8x", "0.62×"), not a device count ("2x H100", "8x GPUs").
_FACTOR = (r"(?<![\w.])\d+(?:\.\d+)?\s?[x×](?![\w])(?!\s*(?:NVIDIA\s+)?(?:[ABHLMT]\d|RTX|GB\d|MI\d|"
           r"GPUs?\b|H20|V100|A6000|nodes?\b|cards?\b))")
SPEC_RE = fast(
    r"speculative|spec[-_ ]?decod|\bspec[-_ ]?dec\b|\bMTP\d?\b|\beagle[-_ ]?\d?\b|\bngram\b|"
    r"\bn-gram\b|prompt[-_ ]lookup|draft[-_ ]model|draft tokens?|\bmedusa\b|\bdflash\b|"
    r"suffix decoding|acceptance (?:rate|length)|accept(?:ance)? len|\bnextn\b|"
    r"num_speculative_tokens|speculative_config|assistant_model|\bacc\.? len(?:gth)?\b|"
    + CJK_ACCEPTANCE + "|" + CJK_SPECULATIVE, "smenpda" + CJK_ACCEPTANCE_FIRST + "投")
# Graph execution under any vendor's name: CUDA and HIP graphs, Ascend's ACL graphs and
# torchair, and the encoder (ViT) graphs.
GRAPH_RE = fast(
    r"cuda[-_ ]?graphs?|cudagraph|\bCG\b|enforce[-_]eager|piecewise|graph capture|"
    r"capture[ds]? (?:the )?graphs?|graph replay|replay(?:ing)? (?:the )?graph|vit[-_ ]graph|"
    r"encoder[-_ ]graph|torch\.compile.*graph|disable[-_]cuda[-_]graph|hip[-_ ]?graphs?|"
    r"acl[-_ ]?graphs?|npu[-_ ]?graphs?|torchair|\bgraph mode\b|\beager mode\b", "cepgrvtdhan")
PERF_RE = fast(
    r"\bperf(?:ormance)?\b|\bunderperform\w*|\bperform(?:s|ed|ing)? (?:worse|better|slower|"
    r"faster|poorly|badly)\b|\bthroughput|\blatency|"
    r"\btok(?:en)?s?/s\b|tokens?/s(?:ec)?\b|\bt/s\b|\bslow(?:er|s|down|ed|ing)?\b|\bfaster\b|"
    r"\bspeed(?:-?up|s)?\b|\bTPOT\b|\bTTFT\b|\bITL\b|\bE2E\b|acceptance|\bbenchmark|\bregress|"
    r"\boverhead\b|\bms\b|\d\s?ms\b|\bx faster|\bbottleneck|\bno[- ]op\b|\bstep time|"
    r"\bdecode time|" + _FACTOR + r"|\bgains?\b|\bstress test|"
    r"\bload test|\bacc\.? len(?:gth)?\b|\baccepted (?:tokens|length)\b|\blaunch[- ]bound\b|"
    r"\bnet[- ]negative\b|"
    r"\bcosts? more than\b|" + CJK_SPEED + "|" + CJK_ACCEPTANCE,
    "putlsfieabromxndgc0123456789" + CJK_SPEED_FIRST + CJK_ACCEPTANCE_FIRST)
# Speed itself, the question a performance thread asks (PERF_RE also has "benchmark" and
# "regress", which an accuracy thread uses too).
SPEED_RE = fast(
    r"\bthroughput|\blatency|\btok(?:en)?s?/s\b|tokens?/s(?:ec)?\b|\bt/s\b|\bslow(?:er|s|down|"
    r"ed|ing)?\b|\bfaster\b|\bspeed(?:-?up|s)?\b|\bTPOT\b|\bTTFT\b|\bITL\b|\bE2E\b|"
    r"\bunderperform\w*|\bperform(?:s|ed|ing)? (?:worse|better|slower|faster|poorly|badly)\b|"
    r"\bperformance\b(?! (?:on|of) (?:the )?(?:gsm8k|mmlu|eval))|" + CJK_SPEED,
    "tlsfieup" + CJK_SPEED_FIRST)
CRASH_RE = fast(
    r"traceback \(most recent call last\)|\bsegfault|segmentation fault|illegal memory access|"
    r"\bcrash(?:es|ed|ing)?\b|\bCUDA error\b|cudaError\w+|device-side assert|RuntimeError|"
    r"AssertionError|\bassert(?:ion)? (?:failed|error)|GGML_ASSERT|\bhangs?\b|\bdeadlock|"
    r"core dumped|\bNaN\b|out of memory|\bOOM\b", "tsicdraghno")
CRASH_OUTPUT_RE = fast(
    r"traceback \(most recent call last\)|segmentation fault|illegal memory access|"
    r"\bCUDA error:|cudaError\w+|device-side assert|GGML_ASSERT|core dumped|"
    r"\bhangs?\b|\bhung\b|\bdeadlock|stuck|out of memory|\bcrash(?:es|ed)\b|AssertionError\b",
    "tsicdghuoa")
_ERROR_NAME_RE = _rx(r"\w+Error: ")


def crash_output(text: str) -> list[str]:
    """The first sign of error output in `text`: a traceback, a CUDA error, `XxxError: `,
    or a failed `assert` the text says it failed at."""
    found = hits(CRASH_OUTPUT_RE, text, 1)
    if not found and "error: " in text.lower():
        found = hits(_ERROR_NAME_RE, text, 1)
    if not found and "assert" in text:
        found = hits(_FAILED_ASSERT_RE, text, 1)
    return found


# "... and fail at:" then `assert 0 < n <= m` a few lines below, or an assert in an error log.
_FAILED_ASSERT_RE = re.compile(
    r"\b(?:fail\w*|error|raises?|abort\w*)\b[^\n]*\n(?:[^\n]*\n){0,2}?\s*assert\s+\S|"
    r"ERROR\b[^\n]*\]\s+assert\s+\S", re.I)
# The run that failed had graphs off: its crash is not one of capture or replay.
GRAPHS_OFF_RE = _rx(
    r"(?:cuda[-_ ]?graphs?|cudagraphs?) (?:are |is |were |was )?(?:disabled|off|turned off)|"
    r"(?:with|using|even with) --?enforce[-_]eager|disable[-_]cuda[-_]graph"
)
# Capturing graphs costs memory and start-up time: a cost the thread may ask about.
CAPTURE_COST_RE = _rx(
    r"(?:captur\w*|cuda[-_ ]?graphs?|cudagraphs?)[^.\n]{0,60}\b(?:memory|\d+(?:\.\d+)?\s?"
    r"(?:GiB|GB|MiB)|OOM|out of memory|start-?up time)\b|"
    # the time capturing takes: "Capture cuda graph end. Time elapsed: 62.67 s"
    r"captur\w*[^\n]{0,60}?\b(?:time elapsed|takes|took)\b[^\n]{0,20}?\d+(?:\.\d+)?\s?"
    r"(?:s|sec|seconds|min|minutes)\b"
)
# Output quality rather than speed: eval scores, outputs that differ between arms.
ACCURACY_RE = fast(
    r"\baccuracy\b|\bexact[ _]match\b|\bgsm8k\b|\bmmlu\b|\bhumaneval\b|lm[-_]eval|"
    r"\beval(?:uation)? scores?\b|outputs? (?:differ|diverge|mismatch|change)\w*|"
    r"(?:not|aren't|isn't|are not|is not) (?:the same|identical)|\bcorrectness\b|"
    r"\bgibberish\b|\bgarbage (?:output|text)|wrong (?:answers?|outputs?|tokens?)|"
    r"\bdifferent (?:outputs?|results|text|answers?)\b|\bcorrupt\w*", "aegmhloincwd")

_METHODS = r"(?:spec\w*|mtp|eagle\w*|ngram|n-gram|draft\w*|dflash|medusa|sd)"
# Words that name a run without speculation. "baseline" next to a version, branch or commit
# is the other side of a version comparison and is left out by `baseline_words`.
NO_SPEC_RE = fast(
    # An arm's name joins its words with `_` ("no_mtp_graph"): a method ends at a non-letter.
    r"\bbaseline\b|\bwithout (?:the )?" + _METHODS + r"(?![a-z])|\bwithout speculat\w*|"
    r"\bno[-_ ]?(?:spec(?:ulation|ulative decoding|[-_ ]?dec(?:oding)?)?|mtp|eagle\d?|draft|"
    r"sd|ngram|dflash)(?![a-z])|\bnon[-_ ]?" + _METHODS + r"(?![a-z])|\bw/o (?:the )?" + _METHODS
    + r"(?![a-z])|"
    r"\bvanilla\b|main model only|target(?: model)? (?:only|alone)|\bwith or without\b|"
    r"\bdisabl\w* (?:the )?" + _METHODS + r"\b|\b" + _METHODS + r" (?:disabled|off)\b|"
    r"\bautoregressive (?:baseline|decoding)\b|(?:than|vs\.?|versus) without\b|"
    r"\bwithout (?:a |the )?speculator\b|\bno speculator\b|"
    r"% of the (?:throughput|speed|performance|tok/s) (?:\w+ ){0,3}without\b|"
    # "H100 vs H100+EAGLE": the device alone against the device with a method.
    r"(?<=\w )vs\.?\s+\w+\s?\+\s?(?:spec\w*|mtp|eagle\w*|ngram|draft\w*|dflash|medusa)\b|"
    # "the same binary without `-md`": without the flag that turns speculation on.
    r"\bwithout\s+`?--?(?:md|model-draft|spec[\w-]*|speculative[\w-]*|draft[\w-]*)\b",
    "bwnvmtdsea%")
# "Standard inference" and "without it" name the baseline only inside a comparison: "barely
# above standard decoding (1.0)" is a reference point, not a run.
STANDARD_BASELINE_RE = fast(
    r"(?:\bvs\.?|\bversus|\bcompar\w* (?:\w+ ){0,4}(?:to|with|against)|\bthan|\bagainst)\s+"
    r"(?:the\s+|a\s+)?"
    r"(?:standard|regular|normal|plain|default|greedy|ordinary)\s+(?:inference|decoding|"
    r"generation|serving|mode|model|run)|\bwhereas without it\b|(?:than|vs\.?) without it\b",
    "vctaw")
_DTYPE_WORDS = r"(?:fp16|bf16|fp8|fp32|float16|bfloat16|int8|int4|awq|gptq|auto)"
_OTHER_BASELINE_RE = _rx(
    # A version, not a figure in the baseline's table cell ("| baseline | 56.49 |").
    r"baseline\W{0,3}(?:\(|:|=|is|was)?\s*(?:main|master|v\d+\.\d+|\d+\.\d+\.\d+|0\.\d{1,2}(?![\d.])|"
    r"commit|branch|nightly|"
    r"release|before|upstream|" + _DTYPE_WORDS + r"\b)|(?:main|master|nightly|release|commit|"
    r"upstream|" + _DTYPE_WORDS + r")\s*\(?baseline|"
    # another method as the baseline: "EAGLE3 baseline", "baseline: ngram"
    r"(?<![\w-])(?<!no-)(?<!no )(?<!non-)(?<!w/o )(?<!without )(?:eagle\w*|mtp|ngram|n-gram|medusa|"
    r"dflash)\s*\(?baseline|baseline[ \t:=(]{0,3}(?:is |was )?(?:eagle|mtp|ngram|n-gram|medusa|"
    r"dflash)|"
    # "(and `0.21.0-b1` for the baseline)": a version or build is the baseline.
    r"v?\d+\.\d+[\w.+-]*`?\s+(?:for|as) (?:the |a )?baseline")


def baseline_words(text: str) -> list[str]:
    """The words that name a run without speculation, "baseline" in another sense left out."""
    if "baseline" in text.lower() and _OTHER_BASELINE_RE.search(text):
        text = _OTHER_BASELINE_RE.sub(" ", text)
    return hits(NO_SPEC_RE, text, 1) or hits(STANDARD_BASELINE_RE, text, 1)


# The thread ran something: it benchmarked, tested, measured, profiled or reproduced it.
RAN_RE = fast(r"\b(?:benchmark(?:ed|ing)|benchmark(?:ing)? (?:results?|summary)|tested|"
              r"measured|observed?|stress test|test results?|profil(?:ed|ing)|reproduced|"
              r"reproducible)\b", "btmospr")
# A stated effect of a run: a speed-up factor, a percentage change, a comparison of speed.
EFFECT_RE = fast(
    _FACTOR + r"|[-−+~]?\d+(?:\.\d+)?\s?%\s*(?:\w+\s+){0,2}?"
    r"(?:faster|slower|drop|regression|improvement|speed-?up|loss|gain|better|worse|lower|"
    r"higher|measured)|(?:performance|throughput|latency|speed)\s+(?:regression|drop|"
    r"degradation|loss|improvement|increase|decrease)|\b(?:slower|faster) than\b|"
    r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|tok/s|tokens/s|t/s|s/it)\b|"
    # "reduces performance at high concurrency by about 10%"
    r"\b(?:reduc|improv|increas|decreas|lower|boost|cut)\w*\b[^.\n]{0,60}?\bby (?:about |around |"
    r"roughly |nearly |~)?\d+(?:\.\d+)?\s?%", "0123456789-−+~ptlsfridbc")
