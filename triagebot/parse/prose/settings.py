"""Settings stated in words: "TP=4", "k=3", "temperature 0", "batch size 1", commits, and
a table column of speculative token counts."""

from __future__ import annotations

import re

from triagebot.parse.common import FLAGS, Facts
from triagebot.parse.prose.lines import Line, table_rows

_INT = r"(\d{1,6})"
_TP_RE = re.compile(r"(?<![\w-])(?:TP|tp)\s?(?:=|:|\s)\s?" + _INT + r"\b|\bTP" + _INT + r"\b|"
                    r"tensor[- ]parallel(?:ism|[- ]size)?\s*(?:of|=|:)?\s*" + _INT + r"\b",
                    re.I)
_DP_RE = re.compile(r"(?<![\w-])(?:DP|dp)\s?(?:=|:)\s?" + _INT + r"\b|"
                    r"data[- ]parallel(?:ism|[- ]size)?\s*(?:of|=|:)\s*" + _INT + r"\b", re.I)
_K_RE = re.compile(
    r"\bnum_speculative_tokens[\"']?\s*(?:=|:)\s*" + _INT + r"\b|"
    r"\b(?:num[_-])?spec(?:ulative)?[_-]?(?:tokens|len|k)\s*(?:=|:)\s*" + _INT + r"\b|"
    r"(?<![\w-])MTP-?" + r"([1-9])\b|"
    r"(?<![\w-])[kK]\s?=\s?" + r"([1-9]\d?)\b|"
    r"\b(?:requested_)?draft_tokens\s*(?:=|:)\s*" + _INT + r"\b|"
    r"\b([1-9]\d?)\s+(?:requested\s+)?(?:speculative|draft|spec)\s+tokens\b",
    re.I,
)
_TEMP_RE = re.compile(r"\btemp(?:erature)?\b\s*(?:=|:|of|is|set to)?\s*(\d(?:\.\d+)?)\b", re.I)
_CONC_RE = re.compile(
    r"\b(?:max[-_ ]?)?concurrency\s*(?:=|:|of)?\s*" + _INT + r"\b|"
    r"(?<!max )(?<!max_)(?<!max-)\bbatch[-_ ]size\s*(?:=|:|of)?\s*" + _INT + r"\b|"
    r"\bbs\s?=\s?" + _INT + r"\b|"
    r"\b(single[- ]stream|single request|one request at a time)\b",
    re.I,
)
_MAXTOK_RE = re.compile(r"\bmax_(?:new_)?tokens\s*(?:=|:)\s*" + _INT + r"\b", re.I)
_COMMIT_RE = re.compile(
    r"(?:\bcommit\b|\bsha\b|\bhash\b|\bmain\s?@|\bmaster\s?@|\bHEAD\s?@)[\s:*`'\"@]{0,6}"
    r"(?:is\s+)?([0-9a-f]{7,40})\b",
    re.I,
)


_SPEC_TOKEN_FLAG_RE = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(f) for f, name in FLAGS.items()
                                 if name == "num_speculative_tokens" and f.startswith("--"))
    + r")[ =]\s?([1-9]\d?)\b", re.I)


def numbers(lines: list[Line], facts: Facts) -> None:
    """TP, DP, k, temperature, concurrency, max tokens and commits stated in words."""
    for no, text, kind in lines:
        for m in _TP_RE.finditer(text):
            facts.add("tp", int(next(g for g in m.groups() if g)), no, text, "prose", kind)
        for m in _DP_RE.finditer(text):
            facts.add("dp", int(next(g for g in m.groups() if g)), no, text, "prose", kind)
        for m in _K_RE.finditer(text):
            k = int(next(g for g in m.groups() if g))
            if 0 < k <= 64:
                facts.add("num_speculative_tokens", k, no, text, "prose", kind)
        for m in _SPEC_TOKEN_FLAG_RE.finditer(text.replace("_", "-")):
            facts.add("num_speculative_tokens", int(m.group(1)), no, text, "prose", kind)
        for m in _TEMP_RE.finditer(text):
            value = float(m.group(1))
            if value <= 2.0:
                facts.add("temperature", value, no, text, "prose", kind)
        for m in _CONC_RE.finditer(text):
            g = next(g for g in m.groups() if g)
            facts.add("concurrency", 1 if not g.isdigit() else int(g), no, text, "prose", kind)
        for m in _MAXTOK_RE.finditer(text):
            facts.add("max_tokens", int(m.group(1)), no, text, "prose", kind)
        for m in _COMMIT_RE.finditer(text):
            if re.search(r"[a-f]", m.group(1)) and re.search(r"\d", m.group(1)):
                facts.add("commit", m.group(1), no, text, "prose", kind)


_K_HEADER_RE = re.compile(r"^\s*(?:spec[_ -]?len|k|num[_ ]spec(?:ulative)?[_ ]tokens|"
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
