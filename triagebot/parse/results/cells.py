"""Reading one piece of a results line: numbers with their units, table cells and widths,
labels, and latency or acceptance mentioned in prose."""

from __future__ import annotations

import re

from triagebot.parse.results.words import (
    ACCEPT_KW,
    ASSIGN_NUM,
    BULLET,
    CALL_WITH_KW,
    CELL_RE,
    CODE_MARKERS,
    CODE_START,
    COMMAND,
    DATE_PREFIX,
    EMPTY_CELLS,
    GAP,
    GAP_WORDS,
    GENERIC,
    INLINE_CODE,
    LOG_PREFIX,
    NUMBER,
    NUMBER_RE,
    POSITION_LABEL,
    ROW_LABELS,
    TOK_S,
    Metric,
)


def to_float(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def norm_label(text: str) -> str:
    text = text.replace("*", "").replace("`", "").strip().rstrip(":：").strip()
    return " ".join(text.split()).lower()


def parse_cell(cell: str) -> tuple[float, str] | None:
    """A table cell holding one number (maybe `~`, a unit, `%`, bold) → (value, suffix)."""
    text = cell.replace("*", "").replace("`", "").strip().lstrip("↓↑▲▼⬇⬆ ")
    if not text or len(text) > 40:
        return None
    match = CELL_RE.match(text)
    if match is None:
        return None
    value = to_float(match.group(1))
    if value is None:
        return None
    return value, (match.group(2) or "")


def clean_label(text: str) -> str:
    text = BULLET.sub("", text)
    text = text.replace("*", "").replace("`", "").replace("__", "").strip()
    return text.rstrip(":：").strip()


def label_like(text: str) -> str | None:
    """A short heading-ish phrase that can name an arm, or None."""
    label = clean_label(text)
    if not label or len(label) > 60 or len(label.split()) > 8:
        return None
    if not any(c.isalpha() for c in label) or "http" in label or label[-1] in ".?!,;":
        return None
    if any(c in label for c in "<>{}[]$\\|"):
        return None
    words = [w.strip("()-/,") for w in label.lower().split()]
    if all(w in GENERIC or not w for w in words):
        return None
    return label


def is_code(line: str) -> bool:
    # Inline code inside a sentence (an arm's config in backticks) does not make the
    # sentence code; a whole line in one span stays whatever its text is.
    if "`" in line and not line.lstrip().startswith("`"):
        line = INLINE_CODE.sub("", line)
    if any(marker in line for marker in CODE_MARKERS):
        return True
    if CODE_START.match(line) or CALL_WITH_KW.search(line):
        return True
    stripped = line.rstrip()
    return stripped.endswith(("\\", "^", "(", "[", ",")) and not stripped.endswith("%,")


def is_noise(line: str) -> bool:
    """Commands, progress bars and engine log lines: their numbers are settings or noise."""
    s = line.strip()
    if s.endswith("\\") or s.startswith("--") or COMMAND.match(s):
        return True
    if "it/s]" in s or "%|" in s or "s/it]" in s:
        return True
    return bool(LOG_PREFIX.match(s) or DATE_PREFIX.match(s))


def skippable(line: str) -> bool:
    """Lines between a label and its result block that are not the label themselves."""
    s = line.strip()
    if s.startswith(("```", "~~~", "<details", "</details", "<summary", "<br", "---", "___")):
        return True
    if is_noise(s):
        return True
    low = s.lower()
    if low.startswith(
        (
            "starting",
            "initial test run",
            "namespace(",
            "warning",
            "traffic request",
            "burstiness",
            "maximum request concurrency",
            "request rate",
        )
    ):
        return True
    if ASSIGN_NUM.match(s):
        return True  # `n_predict = 512`: a setting printed by the tool, not a label
    pos = s.find(":")
    if 0 < pos < 60:
        value = s[pos + 1 :].strip().lower()
        if value[:1].isdigit() or value in ("none", "inf", "nan"):
            return True
    return False


def split_cells(line: str) -> tuple[list[str], str]:
    """Cells of a table row and how it was delimited: pipe, tab, gap (2+ spaces), space."""
    s = line.strip()
    if s.count("|") >= 2:
        inner = s[1:] if s.startswith("|") else s
        inner = inner[:-1] if inner.endswith("|") else inner
        return [c.strip() for c in inner.split("|")], "pipe"
    if "\t" in s:
        return [c.strip() for c in s.split("\t")], "tab"
    if "  " in s:
        return [c.strip() for c in GAP.split(s) if c.strip()], "gap"
    return _paren_tokens(s), "space"


def _paren_tokens(text: str) -> list[str]:
    """Whitespace tokens, with `(...)` groups glued to the token before: `MRV2 (strict)`."""
    out: list[str] = []
    depth = 0
    for token in text.split():
        if out and (depth > 0 or token.startswith("(")):
            out[-1] += " " + token
        else:
            out.append(token)
        depth = max(0, depth + token.count("(") - token.count(")"))
    return out


def is_separator(line: str) -> bool:
    s = line.strip()
    return bool(s) and s.count("-") >= 3 and all(c in "|-: +" for c in s)


def classify_header(cell: str) -> Metric | None:
    """A table column header → the metric its cells hold."""
    h = norm_label(cell)
    if not h:
        return None
    known = ROW_LABELS.get(h)
    if known is not None:
        return known
    if "speedup" in h or "speed-up" in h or h in ("x", "ratio"):
        return Metric("speedup", "x")
    if "accept" in h or h in ("al", "mal", "acc len", "acc rate", "acc. rate"):
        if "len" in h or h in ("al", "mal"):
            return Metric("acceptance_length", "tokens")
        return Metric("acceptance_rate", "", 0.01 if "%" in h else 1.0)
    stat = "median" if "median" in h else "p99" if "p99" in h else "mean"
    for key in ("ttft", "tpot", "itl"):
        if key in h and not (key == "itl" and stat == "p99"):
            return Metric(f"{key}_ms_{stat}", "ms", 1.0 if "(s)" not in h else 1000.0)
    if "req/s" in h:
        return Metric("request_throughput", "req/s")
    if any(k in h for k in ("tok/s", "tokens/s", "token/s", "t/s", "throughput", "tps")):
        if any(k in h for k in ("prompt", "prefill", "input", "pp")):
            return None
        if "total" in h:
            return Metric("total_tok_s", TOK_S)
        if "peak" in h:
            return Metric("peak_output_tok_s", TOK_S)
        return Metric("output_tok_s", TOK_S)
    if "latency" in h:
        return Metric("e2e_latency_s", "s", 0.001 if "ms" in h else 1.0)
    return None


def row_metric(label: str) -> tuple[Metric, str] | None:
    """A known row label → (metric, metric name); per-position rows carry their index."""
    norm = norm_label(BULLET.sub("", label))
    metric = ROW_LABELS.get(norm)
    if metric is not None:
        return metric, metric.name
    match = POSITION_LABEL.match(norm)
    if match is not None:
        scale = 0.01 if "(%)" in norm or norm.startswith("position") else 1.0
        name = f"per_position_acceptance[{match.group(1)}]"
        return Metric("per_position_acceptance", "", scale), name
    return None


def as_number(text: str) -> float:
    value = to_float(text)
    return 0.0 if value is None else value


def row_width(line: str) -> int:
    """How many numeric cells end this line (0 when it has no label or is not a row)."""
    cells, _ = split_cells(line)
    count = 0
    for cell in reversed(cells):
        if parse_cell(cell) is None and cell.strip().lower() not in EMPTY_CELLS:
            break
        count += 1
    if count == len(cells) or count == 0:
        return 0
    return count


# A column of differences between the arms ("Δ", "diff", "speedup"): not an arm.
DELTA_HEADER_RE = re.compile(r"^\s*(?:Δ|delta|diff\w*|change|gain|improvement|speed-?up|"
                             r"ratio|%|vs\.?)\s*(?:\(%\))?\s*$", re.I)


def header_arms(header: str, width: int) -> list[str | None] | None:
    """The arm each value column of a metric row belongs to, from the table's header;
    None for a column of differences."""
    if not header:
        return None
    cells = [clean_label(c) for c in split_cells(header)[0]]
    if len(cells) == width + 1:
        cells = cells[1:]
    elif len(cells) != width:
        return None
    if not all(cells):
        return None
    return [None if DELTA_HEADER_RE.search(c) else c for c in cells]


def prose_label(line: str) -> tuple[str | None, str]:
    """`- label: rest` / `label = rest` → (label, rest); (None, line) without one."""
    body = BULLET.sub("", line).strip()
    for sep in (":", "：", " = "):
        pos = _outer_find(body, sep)
        # A parenthesis after the arm's name holds its settings, not more of its name.
        head = re.sub(r"\s*\([^()]*\)", "", body[:pos]) if pos > 0 else ""
        if pos > 0 and len(head) <= 60:
            label = head.replace("*", "").replace("`", "").strip()
            if label and len(label.split()) <= 8 and not any(c.isdigit() for c in label[:1]):
                return label, body[pos + len(sep) :]
    return None, body


def _outer_find(text: str, sep: str) -> int:
    """`sep`'s first position outside parentheses and backticks: the colon ending
    "suffix (`{"method": "suffix"}`): 121 tok/s" is the last one, not the JSON's."""
    depth, ticks, start = 0, 0, 0
    while (pos := text.find(sep, start)) >= 0:
        before = text[:pos]
        depth = before.count("(") - before.count(")")
        ticks = before.count("`") % 2
        if depth <= 0 and not ticks:
            return pos
        start = pos + 1
    return -1


_LATENCY_VALUE = re.compile(r"^\s*[~≈]?\s*" + NUMBER + r"\s*(ms|s|sec|seconds)\b")


def latency_mention(label: str, rest: str) -> list[tuple[Metric, float, bool]]:
    """`ttft: 62.9 ms`, `mean tpot: 14 ms`, `avg_latency: 1567ms` written as prose."""
    words = set(re.split(r"[\s_]+", label.lower()))
    match = _LATENCY_VALUE.match(rest)
    if match is None:
        return []
    value = as_number(match.group(1))
    unit_ms = match.group(2) == "ms"
    stat = "median" if "median" in words else "p99" if "p99" in words else "mean"
    for key in ("ttft", "tpot", "itl"):
        if key in words and not (key == "itl" and stat == "p99"):
            return [(Metric(f"{key}_ms_{stat}", "ms", 1.0 if unit_ms else 1000.0), value, False)]
    if "latency" in words and stat == "mean":
        return [(Metric("e2e_latency_s", "s", 0.001 if unit_ms else 1.0), value, False)]
    return []


def acceptance_mentions(line: str) -> list[tuple[Metric, float, bool]]:
    out: list[tuple[Metric, float, bool]] = []
    for match in ACCEPT_KW.finditer(line):
        word = match.group(0).lower()
        window = line[match.end() : match.end() + 40]
        num = NUMBER_RE.search(window)
        if num is None:
            continue
        gap = window[: num.start()]
        gap_words = re.findall(r"[A-Za-z]+", gap)
        if any(w.lower() not in GAP_WORDS for w in gap_words):
            continue
        if not re.fullmatch(r"[\sA-Za-z():=~≈_-]*", gap):
            continue
        value = to_float(num.group(1))
        if value is None:
            continue
        tail = window[num.end() : num.end() + 2]
        pct = tail.startswith("%") or tail.startswith(" %")
        lows = " ".join(w.lower() for w in gap_words)
        if word == "al" or "len" in word or "len" in lows:
            out.append((Metric("acceptance_length", "tokens"), value, False))
        else:
            out.append((Metric("acceptance_rate", ""), value, pct))
    return out
