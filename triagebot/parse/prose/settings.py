"""Settings stated in words: "TP=4", "k=3", "temperature 0", "batch size 1", commits, and
a table column of speculative token counts."""

from __future__ import annotations

import re

from triagebot.parse.common import FLAGS, Facts, fast
from triagebot.parse.prose.lines import Line, table_rows

_INT = r"(\d{1,6})"
# Between a setting's name and its value: "TP=4", "TP: 4", "| TP | 4 |", "set TP to 4".
_IS = r"\s*(?:=|:|\||of|is|was|set to|to)?\s*"
_TP_RE = fast(r"(?<![\w-])(?:TP|tp)\s?(?:=|:|\s)\s?" + _INT + r"\b|\bTP" + _INT +
                    r"\b(?!\])|tensor[- ]parallel(?:ism|[- ]size)?" + _IS + _INT + r"\b",
    't')
_DP_RE = fast(r"(?<![\w-])(?:DP|dp)\s?(?:=|:)\s?" + _INT + r"\b|"
                    r"data[- ]parallel(?:ism|[- ]size)?\s*(?:of|=|:)\s*" + _INT + r"\b",
    'd')
_K_RE = fast(
    r"\bnum_speculative_tokens[\"']?\s*(?:=|:|to)?\s*" + _INT + r"\b|"
    r"\b(?:num[_-])?spec(?:ulative)?[_-]?(?:tokens|len|k)\s*(?:=|:)\s*" + _INT + r"\b|"
    r"(?<![\w-])MTP[- ]?" + r"([1-9])\b(?![.%])|"
    # "depth 3" of a draft tree, llama.cpp's `n_max=2`.
    r"\b(?:draft |tree |spec(?:ulation)? )?depth\s*(?:=|:|of)?\s*([1-9]\d?)\b(?![.%])|"
    r"\bn_max\s*=\s*([1-9]\d?)\b|\bgamma\s*=\s*([1-9]\d?)\b|"
    r"(?<![\w-])[kK]\s?=\s?" + r"([1-9]\d?)\b|"
    r"\b(?:requested_)?draft_tokens\s*(?:=|:)\s*" + _INT + r"\b|"
    # TensorRT-LLM's config: `max_draft_len: 3`.
    r"\bmax_draft_len\s*(?:=|:)\s*" + _INT + r"\b|"
    r"\b([1-9]\d?)\s+(?:requested\s+)?(?:speculative|draft|spec)\s+tokens\b|"
    # `mtp=1 + eager`: a method with its token count, as arms are often named.
    r"(?<![\w-])(?:mtp|eagle3?|ngram|dflash|draft)\s?=\s?([1-9]\d?)\b(?!\s*(?:\.|%))",
    'nsmkrdegt0123456789')
# `"temperature": 0` in a request body pasted as JSON counts like the prose.
_TEMP_RE = fast(r"\btemp(?:erature)?\b[\"']?" + _IS + r"(\d(?:\.\d+)?)\b",
    't')
# A client concurrency stated once. Not a server limit (`--max-num-seqs`, a max batch
# size), nor a measured average, nor a flag's name (`--batch-size`: the runs read flags).
_CONC_RE = fast(
    r"(?<![\w])(?<!average )(?<!avg )(?<!mean )(?<!measured )(?<!effective )(?<!peak )"
    r"(?:max[-_ ]?)?(?<!_)concurrency" + _IS + _INT + r"\b(?!\s*(?:%|x\b))|"
    r"(?<!max )(?<!max_)(?<![\w-])batch[-_ ]size" + _IS + _INT + r"\b|"
    r"(?:\b(?:at|with)\s|(?<=,\s))batch\s(\d{1,4})\b(?!\s*of)|"
    r"(?<![\w-])(?:bs|BS)\s?=?\s?" + _INT + r"\b|"
    r"(?<![\w.=-])c=(\d{1,4})\b(?!\.?\d)|"
    r"(?<![\w.,])" + _INT + r"\s+concurren(?:cy|t requests)\b|"
    r"\b(single[- ]stream|single request|one request at a time|single concurrency)\b|"
    # Chinese: "并发数：1", "并发 8" (concurrency).
    r"并发(?:数|度)?\s*[:=]?\s*" + _INT + r"\b",
    'mcbsoaw0123456789并')
# "At concurrency > 8", "high-concurrency loads", "concurrency 1/4/16": swept.
_CONC_SWEEP_RE = fast(
    r"concurrency\s*(?:[<>≥≤]|above|over|higher than|greater than|up to|from \d+ to)|"
    r"\b(?:high|higher|low|different|various|varying|multiple|several|increasing)[- ]"
    r"concurrenc|concurrency (?:levels|sweep|values|settings)|\bconcurrenc(?:y|ies)"
    r"(?: of)?\s*\d+\s*(?:[,/]|and|to|-)\s*\d+|\bsingle-threaded or\b",
    'chldvmsi')
# Running requests a decode log reports: SGLang `#running-req: 1`, vLLM `Running: 1 reqs`.
_RUNNING_RE = re.compile(r"#running-req:\s*(\d+)|\bRunning:\s*(\d+) reqs")
_MAXTOK_RE = fast(
    r"\bmax[-_ ](?:new[-_ ])?tokens[\"']?" + _IS + _INT + r"\b|"
    r"\boutput[-_ ](?:length|len)" + _IS + _INT + r"\b|"
    r"(?<![\d,.])(\d{2,6}) (?:output )?tokens generated\b|"
    r"\bgenerat(?:e|es|ing) (\d{2,6}) (?:new |output )?tokens\b|"
    r"(?<![\d,.])(\d{2,6}) (?:generated|output|new) tokens (?:per|for each|each) (?:request|"
    r"prompt|query|data point|sample|run)\b",
    'mog0123456789')
_COMMIT_RE = fast(
    r"(?:\bcommit\b|\bsha\b|\bhash\b|\bmain\s?@|\bmaster\s?@|\bHEAD\s?@)[\s:*`'\"@]{0,6}"
    r"(?:is\s+)?([0-9a-f]{7,40})\b",
    'cshm')


_SPEC_TOKEN_FLAG_RE = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(f) for f, name in FLAGS.items()
                                 if name == "num_speculative_tokens" and f.startswith("--"))
    + r")[ =]\s?([1-9]\d?)\b", re.I)
_MARKUP_RE = re.compile(r"`|\*\*")


def numbers(lines: list[Line], facts: Facts) -> None:
    """TP, DP, k, temperature, concurrency, max tokens and commits stated in words."""
    for no, raw, kind in lines:
        if not _DIGIT_RE.search(raw) and "single" not in raw and "one req" not in raw:
            continue  # every setting below is a number, but "single stream"
        # `- Tensor parallel: \`1\``: the value is the same without its markup.
        text = _MARKUP_RE.sub("", raw) if "`" in raw or "*" in raw else raw
        low = text.lower()
        if "tp" in low or "tensor" in low:
            for m in _TP_RE.finditer(text):
                facts.add("tp", int(next(g for g in m.groups() if g)), no, raw, "prose", kind)
        if "dp" in low or "data" in low:
            for m in _DP_RE.finditer(text):
                facts.add("dp", int(next(g for g in m.groups() if g)), no, raw, "prose", kind)
        if _K_HINT_RE.search(low):
            for m in _K_RE.finditer(text):
                k = int(next(g for g in m.groups() if g))
                if 0 < k <= 64:
                    facts.add("num_speculative_tokens", k, no, raw, "prose", kind)
            if "--" in text:
                for m in _SPEC_TOKEN_FLAG_RE.finditer(text.replace("_", "-")):
                    facts.add("num_speculative_tokens", int(m.group(1)), no, raw, "prose",
                              kind)
        if "temp" in low:
            for m in _TEMP_RE.finditer(text):
                value = float(m.group(1))
                if value <= 2.0:
                    facts.add("temperature", value, no, raw, "prose", kind)
        _concurrency(no, text, raw, kind, facts)
        if "token" in low or "output" in low:
            for m in _MAXTOK_RE.finditer(text):
                facts.add("max_tokens", int(next(g for g in m.groups() if g)), no, raw,
                          "prose", kind)
        if "commit" in low or "sha" in low or "hash" in low or "@" in low:
            for m in _COMMIT_RE.finditer(text):
                if _HEX_LETTER_RE.search(m.group(1)) and _DIGIT_RE.search(m.group(1)):
                    facts.add("commit", m.group(1), no, raw, "prose", kind)


_DIGIT_RE = re.compile(r"\d")
_CONC_HINT_RE = re.compile(r"conc|batch|\bbs\b|bs\s?=|single|one req|并发|\bc=\d")
_HEX_LETTER_RE = re.compile(r"[a-f]")
# Words around every k pattern: "num_speculative_tokens", "spec_len", "MTP1", "k=3", "mtp=1",
# "draft_tokens", "3 speculative tokens".
_K_HINT_RE = re.compile(r"spec|mtp|k\s?=|draft|eagle|ngram|dflash|tokens|gamma")


def _concurrency(no: int, text: str, raw: str, kind: str, facts: Facts) -> None:
    low = text.lower()
    if _CONC_HINT_RE.search(low):
        for m in _CONC_RE.finditer(text):
            g = next(g for g in m.groups() if g)
            facts.add("concurrency", 1 if not g.isdigit() else int(g), no, raw, "prose", kind)
        for m in _CONC_SWEEP_RE.finditer(text):
            facts.add("concurrency_sweep", m.group(0), no, raw, "prose", kind)
    if "unning" in text:
        for m in _RUNNING_RE.finditer(text):
            facts.add("concurrency_log", int(m.group(1) or m.group(2)), no, raw, "prose", kind)


_K_HEADER_RE = re.compile(r"^\s*(?:spec[_ -]?len|k|n[-_ ]?max|num[_ ]spec(?:ulative)?[_ ]tokens|"
                          r"(?:num[_ ])?draft[_ ]tokens|mtp[_ ]?(?:tokens|k)?|gamma|"
                          r"speculative[_ ]tokens|n[_ ]?spec)\s*$", re.I)


def table_spec_tokens(lines: list[Line], facts: Facts) -> None:
    """k values in a table column headed `spec_len`, `k`, `num_speculative_tokens`..."""
    for no, text, kind, header, cells in table_rows(lines):
        column = next((i for i, c in enumerate(header) if _K_HEADER_RE.match(c)), None)
        if column is not None and column < len(cells):
            m = re.match(r"\s*([1-9]\d?)\b", cells[column])
            if m:
                facts.add("num_speculative_tokens", int(m.group(1)), no, text, "prose", kind)
