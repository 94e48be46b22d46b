"""Numbers the reporter saw → `ReportedNumber`s (and a `ReportedMetrics` summary).

Recognisers, tried per line in this order (the first that claims a line wins, so a number
is never reported twice):

1. log and tool lines with a fixed shape: `SpecDecoding metrics:` (all versions),
   `Speculative metrics:`, `vllm bench throughput` / `latency`, SGLang decode-batch logs,
   llama.cpp speculative and server timings, JSON keys of bench results / vllm-mlx status;
2. labelled metric rows: vLLM / SGLang "Serving Benchmark Result" blocks, the same rows
   pasted side by side with one column per arm, markdown pipe and tab-separated tables;
3. prose: bullets such as `- mtp_graph: 260.4 tok/s (0.560x vs no_mtp_graph)`.

Code is skipped (a number in `SamplingParams(max_tokens=500)` or `print(f"... tok/s")` was
never seen by anyone), and prose numbers need a unit or a metric word next to them, so
versions and dates never match. Everything is line based with simple regexes; nothing
here raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triagebot.model import Evidence, ReportedMetrics, ReportedNumber

__all__ = ["find_reported_numbers", "summarise"]

SOURCE = "results"
_MAX_LINE = 2000  # longer lines are not results anyone pasted; look at their head only
_LOOKBACK_LINES = 40  # how far up we search for an arm label

_NUM = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_NUM_RE = re.compile(_NUM)
_CELL_RE = re.compile(
    r"^[~≈]?\s*" + _NUM + r"\s*(%|x|×|ms|s|sec|seconds|tok/s|tokens/s|t/s|req/s)?$"
)


@dataclass(frozen=True)
class _Metric:
    name: str
    unit: str
    scale: float = 1.0  # multiply the written value by this (ms → s, % → fraction)


_TOK_S = "tok/s"
# Row labels of `vllm bench serve` / `sglang.bench_serving` output and of offline
# `spec_decode.py` output, normalised (lower case, single spaces, no trailing colon).
_ROW_LABELS: dict[str, _Metric] = {
    "output token throughput (tok/s)": _Metric("output_tok_s", _TOK_S),
    "output token throughput": _Metric("output_tok_s", _TOK_S),
    "output throughput (tok/s)": _Metric("output_tok_s", _TOK_S),
    "total token throughput (tok/s)": _Metric("total_tok_s", _TOK_S),
    "total token throughput": _Metric("total_tok_s", _TOK_S),
    "request throughput (req/s)": _Metric("request_throughput", "req/s"),
    "request throughput": _Metric("request_throughput", "req/s"),
    "peak output token throughput (tok/s)": _Metric("peak_output_tok_s", _TOK_S),
    "mean ttft (ms)": _Metric("ttft_ms_mean", "ms"),
    "median ttft (ms)": _Metric("ttft_ms_median", "ms"),
    "p99 ttft (ms)": _Metric("ttft_ms_p99", "ms"),
    "mean tpot (ms)": _Metric("tpot_ms_mean", "ms"),
    "median tpot (ms)": _Metric("tpot_ms_median", "ms"),
    "p99 tpot (ms)": _Metric("tpot_ms_p99", "ms"),
    "mean itl (ms)": _Metric("itl_ms_mean", "ms"),
    "median itl (ms)": _Metric("itl_ms_median", "ms"),
    "mean e2el (ms)": _Metric("e2e_latency_s", "s", 0.001),
    "mean e2e latency (ms)": _Metric("e2e_latency_s", "s", 0.001),
    "acceptance rate (%)": _Metric("acceptance_rate", "", 0.01),
    "acceptance rate": _Metric("acceptance_rate", ""),
    "draft acceptance rate": _Metric("acceptance_rate", ""),
    "acceptance length": _Metric("acceptance_length", "tokens"),
    "accept length": _Metric("acceptance_length", "tokens"),
    "mean acceptance length": _Metric("acceptance_length", "tokens"),
    "avg acceptance length": _Metric("acceptance_length", "tokens"),
    "draft tokens": _Metric("drafted_tokens", "tokens"),
    "drafted tokens": _Metric("drafted_tokens", "tokens"),
    "accepted tokens": _Metric("accepted_tokens", "tokens"),
    "num_draft_tokens": _Metric("drafted_tokens", "tokens"),
    "num_accepted_tokens": _Metric("accepted_tokens", "tokens"),
    "speedup": _Metric("speedup", "x"),
}
_POSITION_LABEL = re.compile(
    r"^(?:acceptance (?:pos(?:ition)?|at token) |position )(\d{1,2})(?: \(%\))?$"
)

# JSON keys of `vllm bench serve --save-result`, SGLang bench JSONL and vllm-mlx /v1/status.
_JSON_KEYS: dict[str, _Metric] = {
    "output_throughput": _Metric("output_tok_s", _TOK_S),
    "total_token_throughput": _Metric("total_tok_s", _TOK_S),
    "total_throughput": _Metric("total_tok_s", _TOK_S),
    "request_throughput": _Metric("request_throughput", "req/s"),
    "max_output_tokens_per_s": _Metric("peak_output_tok_s", _TOK_S),
    "mean_ttft_ms": _Metric("ttft_ms_mean", "ms"),
    "median_ttft_ms": _Metric("ttft_ms_median", "ms"),
    "p99_ttft_ms": _Metric("ttft_ms_p99", "ms"),
    "mean_tpot_ms": _Metric("tpot_ms_mean", "ms"),
    "median_tpot_ms": _Metric("tpot_ms_median", "ms"),
    "p99_tpot_ms": _Metric("tpot_ms_p99", "ms"),
    "mean_itl_ms": _Metric("itl_ms_mean", "ms"),
    "median_itl_ms": _Metric("itl_ms_median", "ms"),
    "mean_e2el_ms": _Metric("e2e_latency_s", "s", 0.001),
    "mean_e2e_latency_ms": _Metric("e2e_latency_s", "s", 0.001),
    "avg_latency": _Metric("e2e_latency_s", "s"),
    "spec_decode_acceptance_rate": _Metric("acceptance_rate", "", 0.01),
    "spec_decode_acceptance_length": _Metric("acceptance_length", "tokens"),
    "spec_decode_draft_tokens": _Metric("drafted_tokens", "tokens"),
    "spec_decode_accepted_tokens": _Metric("accepted_tokens", "tokens"),
    "accept_length": _Metric("acceptance_length", "tokens"),
    "avg_spec_accept_length": _Metric("acceptance_length", "tokens"),
    "spec_accept_length": _Metric("acceptance_length", "tokens"),
    "acceptance_rate": _Metric("acceptance_rate", ""),
    "generation_tps": _Metric("output_tok_s", _TOK_S),
}
_JSON_RE = re.compile(r'"([a-z0-9_]{3,40})"\s*:\s*' + _NUM + r"(?![\d.])")
_JSON_POSITIONS = re.compile(
    r'"spec_decode_per_position_acceptance_rates"\s*:\s*\[([^\]]{0,400})\]'
)

# Fixed-shape tool lines.
_SPEC_LINE = re.compile(r"(?:SpecDecoding|Speculative) metrics:\s*(.*)$")
_BENCH_THROUGHPUT = re.compile(
    r"Throughput:\s*" + _NUM + r"\s*requests/s,\s*" + _NUM + r"\s*(total )?tokens/s"
    r"(?:,\s*" + _NUM + r"\s*output tokens/s)?"
)
_AVG_LATENCY = re.compile(
    r"^\W*avg[ _]latency\s*[:=]\s*" + _NUM + r"\s*(ms|s|sec|secs|seconds)\b", re.IGNORECASE
)
_LLAMA_DECODED = re.compile(
    r"decoded\s+\d+\s+tokens\s+in\s+[\d.]+\s+seconds,\s+speed:\s+" + _NUM + r"\s*t/s"
)
_LLAMA_EVAL = re.compile(r"^\s*(?:\S+\s+)?eval time\s*=.*?,\s*" + _NUM + r"\s+tokens per second")
_LLAMA_COUNT = re.compile(r"^\s*(n_drafted|n_accept)\s*=\s*(\d+)\s*$")
_LLAMA_ACCEPT = re.compile(r"^\s*accept\s*=\s*" + _NUM + r"\s*%\s*$")
_LLAMA_RATE = re.compile(r"draft acceptance rate\s*=\s*" + _NUM + r"\s*(%)?")
_SGLANG_SEG = re.compile(
    r"(accept len|accept rate|gen throughput \(token/s\))\s*:\s*" + _NUM, re.IGNORECASE
)

# Prose.
_THROUGHPUT_RE = re.compile(
    r"(?<![\w.])[~≈]?\s*" + _NUM + r"\s*(?:tok/s|tokens/s|tokens/sec|tok/sec|toks/s|token/s"
    r"|tokens per second|tok per sec|t/s|tps)(?![A-Za-z])",
    re.IGNORECASE,
)
_SPEEDUP_RE = re.compile(r"(?<![\w.])" + _NUM + r"\s?[x×](?![A-Za-z0-9])")
_SPEEDUP_WORD_RE = re.compile(
    r"speed-?up\s*(?:of|:|=|is|was)?\s*[~≈]?\s*" + _NUM + r"\s*[x×]?", re.IGNORECASE
)
_SPEED_WORDS = ("faster", "slower", "speedup", "speed-up", "vs", "over", "better", "worse")
_ACCEPT_KW = re.compile(r"(?i:accept(?:ance)?(?:[ _](?:rate|len(?:gth)?))?)|\bAL\b")
_GAP_WORDS = frozenset(
    {
        "rate",
        "len",
        "length",
        "is",
        "of",
        "was",
        "about",
        "around",
        "roughly",
        "approx",
        "approximately",
        "avg",
        "average",
        "mean",
        "only",
        "just",
        "at",
        "drops",
        "to",
        "dropped",
        "falls",
        "fell",
        "stays",
        "stayed",
        "~",
    }
)

# Lines that sit between a label and its result block and are not the label.
_COMMAND = re.compile(
    r"^\s*(?:\$\s*)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:vllm|python3?|sglang|llama-[\w-]+|\./\S+|curl"
    r"|docker|bash|sh|torchrun|mpirun|export|uv|pip3?|git|CUDA_VISIBLE_DEVICES=\S*)(?:\s|$)"
)
_LOG_PREFIX = re.compile(r"^\s*(?:\(\S+ pid=\d+\)\s*)?(?:DEBUG|INFO|WARNING|WARN|ERROR)\b")
_DATE_PREFIX = re.compile(r"^\s*\[?\d{4}-\d\d-\d\d")
_BULLET = re.compile(r"^\s*(?:[-*•+>]\s+|\d{1,2}[.)、]\s*|#{1,6}\s*)+")
_GENERIC = frozenset(
    {
        "test",
        "tests",
        "result",
        "results",
        "benchmark",
        "benchmarks",
        "bench",
        "serve",
        "serving",
        "output",
        "outputs",
        "log",
        "logs",
        "performance",
        "perf",
        "metrics",
        "metric",
        "reproduction",
        "repro",
        "here",
        "are",
        "the",
        "is",
        "my",
        "our",
        "numbers",
        "data",
        "summary",
        "details",
        "observed",
        "expected",
        "command",
        "client",
        "server",
        "steps",
        "to",
        "reproduce",
        "and",
        "of",
        "plan",
        "environment",
        "describe",
        "bug",
        "stats",
        "statistics",
        "a",
        "some",
        "in",
        "runs",
        "run",
        "throughput",
        "latency",
        "e2e",
        "online",
        "offline",
        "script",
        "code",
        "example",
        "raw",
        "got",
        "i",
        "also",
        "seen",
        "note",
        "notes",
        "update",
        "edit",
        "tl;dr",
        "tldr",
        "short",
        "version",
        "so",
        "but",
        "however",
        "result:",
        "overall",
        "aggregate",
        "conclusion",
    }
)
# Words that name a metric rather than an arm, stripped from `label: value` prose labels.
_METRIC_WORDS = frozenset(
    {
        "acceptance",
        "accept",
        "rate",
        "length",
        "len",
        "throughput",
        "tok/s",
        "tokens/s",
        "mean",
        "avg",
        "average",
        "latency",
        "speed",
        "speedup",
        "ttft",
        "tpot",
        "itl",
        "output",
        "decode",
        "decoding",
        "generation",
        "e2e",
        "tps",
        "token",
        "tokens",
        "al",
        "draft",
        "avg_throughput",
        "avg_latency",
        "throughput:",
        "per",
        "second",
        "median",
        "p99",
    }
)
_DIGIT = re.compile(r"\d")
# A line can only hold a result when it has one of these; everything else is skipped early.
# One case-sensitive alternation over the lower-cased line: IGNORECASE makes it 4x slower.
_CANDIDATE = re.compile(
    r"tok|t/s|throughput|accept|latency|ttft|tpot|itl|e2e|draft|speed|req/s|position|pos "
    r"|metrics:|tps|[|\t]|\d\s?[x×](?![a-z0-9])"
)


def _candidate(line: str) -> bool:
    return _CANDIDATE.search(line.lower()) is not None or "AL" in line


_MAX_NUMBERS = 2000  # no report states more; past this the text is a log dump
# Lines that reach the recognisers (15-30 µs each). A pasted multi-megabyte log or table
# stops here, keeping the whole scan well under a second whatever the input.
_MAX_CANDIDATES = 15_000
_ASSIGN_NUM = re.compile(r"^[\w .-]{1,40}=\s*[~\d.]")
_GAP = re.compile(r"\s{2,}")
_EMPTY_CELLS = frozenset({"", "-", "n/a", "na", "—", "–"})
_CODE_MARKERS = ("print(", 'f"', "f'", "{", "}", "==", "+=", "lambda", "->")
_CALL_WITH_KW = re.compile(r"\w\([^)]*\w=")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_CODE_START = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|return\b|for \w+ in |if |elif "
    r"|else:|while |with |assert |@\w|#!|//)"
)


def find_reported_numbers(lines: list[str]) -> list[ReportedNumber]:
    """Every number the reporter saw, in text order. Never raises."""
    try:
        return _Scanner(lines).run()
    except Exception:  # hostile or odd text must not break the parse
        return []


def summarise(numbers: list[ReportedNumber]) -> ReportedMetrics:
    """The scored summary: output tok/s per arm, first acceptance rate and length."""
    throughput: dict[str, float] = {}
    unarmed: float | None = None
    rate: float | None = None
    length: float | None = None
    for num in numbers:
        if num.metric == "output_tok_s":
            if num.arm:
                throughput.setdefault(num.arm, num.value)
            elif unarmed is None:
                unarmed = num.value
        elif num.metric == "acceptance_rate":
            if num.value > 1:
                # "acceptance rate 5.6" is a length by another name.
                length = num.value if length is None else length
            elif rate is None:
                rate = num.value
        elif num.metric == "acceptance_length" and length is None:
            length = num.value
    # Arm-less numbers only speak when nothing names an arm: mixing them in would invent
    # an arm called "reported" beside the real ones.
    if not throughput and unarmed is not None:
        throughput["reported"] = unarmed
    return ReportedMetrics(
        throughput_tok_s=throughput or None, acceptance_rate=rate, acceptance_length=length
    )


# --- helpers -------------------------------------------------------------------------------


def _to_float(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _norm_label(text: str) -> str:
    text = text.replace("*", "").replace("`", "").strip().rstrip(":：").strip()
    return " ".join(text.split()).lower()


def _parse_cell(cell: str) -> tuple[float, str] | None:
    """A table cell holding one number (maybe `~`, a unit, `%`, bold) → (value, suffix)."""
    text = cell.replace("*", "").replace("`", "").strip()
    if not text or len(text) > 40:
        return None
    match = _CELL_RE.match(text)
    if match is None:
        return None
    value = _to_float(match.group(1))
    if value is None:
        return None
    return value, (match.group(2) or "")


def _clean_label(text: str) -> str:
    text = _BULLET.sub("", text)
    text = text.replace("*", "").replace("`", "").replace("__", "").strip()
    return text.rstrip(":：").strip()


def _label_like(text: str) -> str | None:
    """A short heading-ish phrase that can name an arm, or None."""
    label = _clean_label(text)
    if not label or len(label) > 60 or len(label.split()) > 8:
        return None
    if not any(c.isalpha() for c in label) or "http" in label or label[-1] in ".?!,;":
        return None
    if any(c in label for c in "<>{}[]$\\|"):
        return None
    words = [w.strip("()-/,") for w in label.lower().split()]
    if all(w in _GENERIC or not w for w in words):
        return None
    return label


def _is_code(line: str) -> bool:
    # Inline code inside a sentence (an arm's config in backticks) does not make the
    # sentence code; a whole line in one span stays whatever its text is.
    if "`" in line and not line.lstrip().startswith("`"):
        line = _INLINE_CODE.sub("", line)
    if any(marker in line for marker in _CODE_MARKERS):
        return True
    if _CODE_START.match(line) or _CALL_WITH_KW.search(line):
        return True
    stripped = line.rstrip()
    return stripped.endswith(("\\", "^", "(", "[", ",")) and not stripped.endswith("%,")


def _noise(line: str) -> bool:
    """Commands, progress bars and engine log lines: their numbers are settings or noise."""
    s = line.strip()
    if s.endswith("\\") or s.startswith("--") or _COMMAND.match(s):
        return True
    if "it/s]" in s or "%|" in s or "s/it]" in s:
        return True
    return bool(_LOG_PREFIX.match(s) or _DATE_PREFIX.match(s))


def _skippable(line: str) -> bool:
    """Lines between a label and its result block that are not the label themselves."""
    s = line.strip()
    if s.startswith(("```", "~~~", "<details", "</details", "<summary", "<br", "---", "___")):
        return True
    if _noise(s):
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
    if _ASSIGN_NUM.match(s):
        return True  # `n_predict = 512`: a setting printed by the tool, not a label
    pos = s.find(":")
    if 0 < pos < 60:
        value = s[pos + 1 :].strip().lower()
        if value[:1].isdigit() or value in ("none", "inf", "nan"):
            return True
    return False


def _split_cells(line: str) -> tuple[list[str], str]:
    """Cells of a table row and how it was delimited: pipe, tab, gap (2+ spaces), space."""
    s = line.strip()
    if s.count("|") >= 2:
        inner = s[1:] if s.startswith("|") else s
        inner = inner[:-1] if inner.endswith("|") else inner
        return [c.strip() for c in inner.split("|")], "pipe"
    if "\t" in s:
        return [c.strip() for c in s.split("\t")], "tab"
    if "  " in s:
        return [c.strip() for c in _GAP.split(s) if c.strip()], "gap"
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


def _is_separator(line: str) -> bool:
    s = line.strip()
    return bool(s) and s.count("-") >= 3 and all(c in "|-: +" for c in s)


def _classify_header(cell: str) -> _Metric | None:
    """A table column header → the metric its cells hold."""
    h = _norm_label(cell)
    if not h:
        return None
    known = _ROW_LABELS.get(h)
    if known is not None:
        return known
    if "speedup" in h or "speed-up" in h or h in ("x", "ratio"):
        return _Metric("speedup", "x")
    if "accept" in h or h in ("al", "mal", "acc len", "acc rate", "acc. rate"):
        if "len" in h or h in ("al", "mal"):
            return _Metric("acceptance_length", "tokens")
        return _Metric("acceptance_rate", "", 0.01 if "%" in h else 1.0)
    stat = "median" if "median" in h else "p99" if "p99" in h else "mean"
    for key in ("ttft", "tpot", "itl"):
        if key in h and not (key == "itl" and stat == "p99"):
            return _Metric(f"{key}_ms_{stat}", "ms", 1.0 if "(s)" not in h else 1000.0)
    if "req/s" in h:
        return _Metric("request_throughput", "req/s")
    if any(k in h for k in ("tok/s", "tokens/s", "token/s", "t/s", "throughput", "tps")):
        if any(k in h for k in ("prompt", "prefill", "input", "pp")):
            return None
        if "total" in h:
            return _Metric("total_tok_s", _TOK_S)
        if "peak" in h:
            return _Metric("peak_output_tok_s", _TOK_S)
        return _Metric("output_tok_s", _TOK_S)
    if "latency" in h:
        return _Metric("e2e_latency_s", "s", 0.001 if "ms" in h else 1.0)
    return None


def _row_metric(label: str) -> tuple[_Metric, str] | None:
    """A known row label → (metric, metric name); per-position rows carry their index."""
    norm = _norm_label(_BULLET.sub("", label))
    metric = _ROW_LABELS.get(norm)
    if metric is not None:
        return metric, metric.name
    match = _POSITION_LABEL.match(norm)
    if match is not None:
        scale = 0.01 if "(%)" in norm or norm.startswith("position") else 1.0
        name = f"per_position_acceptance[{match.group(1)}]"
        return _Metric("per_position_acceptance", "", scale), name
    return None


# --- the scanner ---------------------------------------------------------------------------


@dataclass
class _Table:
    last_row: int  # 0-based index of the last row seen in this table
    header: str  # the line above the first row
    width: int  # number of value cells per row
    columns: list[_Metric | None] | None = None  # header cells → metrics, once per table


class _Scanner:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.out: list[ReportedNumber] = []
        self.fence_lang: str | None = None  # language of the open ``` fence, "" if none
        self.block_arm: str | None = None
        self.in_block = False
        self.table: _Table | None = None
        self.run_arm: tuple[int, str | None] | None = None  # (last row index, its arm)

    def run(self) -> list[ReportedNumber]:
        budget = _MAX_CANDIDATES
        for idx, raw in enumerate(self.lines):
            line = raw if len(raw) <= _MAX_LINE else raw[:_MAX_LINE]
            head = line.lstrip()[:1]
            if not head:
                self.in_block = False  # result blocks have no blank lines inside
                continue
            if head in "`~=" and self._structure(idx, line):
                continue
            if _DIGIT.search(line) is None or not _candidate(line):
                continue  # two C-speed searches keep the common line cheap
            budget -= 1
            if len(self.out) >= _MAX_NUMBERS or budget < 0:
                break
            if _LOG_PREFIX.match(line) or _DATE_PREFIX.match(line):
                # Engine logs: only the spec-decode and decode-batch lines carry results.
                _ = self._spec_line(idx, line) or self._tool_line(idx, line)
                continue
            if (
                self._spec_line(idx, line)
                or self._tool_line(idx, line)
                or self._json_line(idx, line)
                or self._row(idx, line)
            ):
                continue
            if self.fence_lang in ("python", "py", "python3", "ipython", "json", "yaml"):
                continue
            if _is_code(line) or _noise(line):
                continue
            self._prose(idx, line)
        return self.out

    # -- emitting -----------------------------------------------------------------------

    def _emit(
        self,
        idx: int,
        metric: _Metric,
        value: float,
        arm: str | None,
        name: str | None = None,
        percent: bool = False,
    ) -> None:
        scale = metric.scale
        metric_name = name or metric.name
        if metric.name == "acceptance_rate":
            if percent:
                scale = 0.01
            elif scale == 1.0 and value > 1:
                if value < 10:
                    # "acceptance rate 3.2" is a length by another name.
                    metric_name, scale = "acceptance_length", 1.0
                elif value <= 100:
                    scale = 0.01
                else:
                    return
        elif metric.name == "per_position_acceptance" and percent:
            scale = 0.01
        value = round(value * scale, 10)
        self.out.append(
            ReportedNumber(
                metric=metric_name,
                value=value,
                unit=metric.unit,
                arm=arm or None,
                evidence=Evidence(line=idx + 1, text=self.lines[idx], source=SOURCE),
            )
        )

    # -- structure: fences, result block banners ----------------------------------------

    def _structure(self, idx: int, line: str) -> bool:
        s = line.strip()
        if s.startswith(("```", "~~~")):
            if self.fence_lang is None:
                self.fence_lang = s.strip("`~ ").split(" ")[0].lower()
            else:
                self.fence_lang = None
            self.in_block = False
            return True
        if s.startswith("=") and ("Benchmark Result" in s or "benchmark result" in s.lower()):
            self.in_block = True
            self.block_arm = self._find_arm(idx)
            return True
        if s.startswith("=") and s.strip("=") == "":
            self.in_block = False
            return True
        return False

    def _find_arm(self, idx: int) -> str | None:
        """The nearest label above line `idx`: a heading, `**Bold:**`, `PR:`, `with MTP`."""
        if self.run_arm is not None and self.run_arm[0] == idx - 1:
            return self.run_arm[1]
        stop = max(-1, idx - _LOOKBACK_LINES)
        for j in range(idx - 1, stop, -1):
            text = self.lines[j][:_MAX_LINE]
            s = text.strip()
            if not s or _is_separator(s):
                continue
            if s.startswith("=") or "Benchmark Result" in s:
                return None  # the end of an earlier block: nothing labels this one
            if _skippable(s):
                continue
            if _row_metric(_split_cells(s)[0][0] if s else "") is not None:
                continue
            return _label_like(s)
        return None

    def _arm_here(self, idx: int) -> str | None:
        arm = self.block_arm if self.in_block else self._find_arm(idx)
        self.run_arm = (idx, arm)
        return arm

    # -- 1. fixed-shape lines -----------------------------------------------------------

    def _spec_line(self, idx: int, line: str) -> bool:
        if "metrics:" not in line:
            return False
        match = _SPEC_LINE.search(line)
        if match is None:
            return False
        arm = self._arm_here(idx)
        current: str | None = None
        position = 0
        for segment in match.group(1).split(","):
            key, sep, val = segment.partition(":")
            if sep:
                current = " ".join(key.lower().split())
            else:
                val = key  # a bare number continues the per-position list
            num = _NUM_RE.search(val)
            if num is None or current is None:
                continue
            value = _to_float(num.group(1))
            if value is None:
                continue
            pct = "%" in val
            if current == "per-position acceptance rate":
                self._emit(
                    idx,
                    _Metric("per_position_acceptance", ""),
                    value,
                    arm,
                    name=f"per_position_acceptance[{position}]",
                    percent=pct,
                )
                position += 1
            elif "acceptance rate" in current:
                self._emit(idx, _Metric("acceptance_rate", ""), value, arm, percent=pct)
            elif "acceptance length" in current:
                self._emit(idx, _ROW_LABELS["acceptance length"], value, arm)
            elif current in ("accepted", "number of accepted tokens"):
                self._emit(idx, _ROW_LABELS["accepted tokens"], value, arm)
            elif current in ("drafted", "number of draft tokens"):
                self._emit(idx, _ROW_LABELS["draft tokens"], value, arm)
        return True

    def _tool_line(self, idx: int, line: str) -> bool:
        if "Throughput:" in line and "requests/s" in line:
            match = _BENCH_THROUGHPUT.search(line)
            if match:
                arm = self._arm_here(idx)
                self._emit(idx, _ROW_LABELS["request throughput"], _num(match.group(1)), arm)
                # Before output tokens/s was printed, "tokens/s" meant total tokens.
                self._emit(idx, _ROW_LABELS["total token throughput"], _num(match.group(2)), arm)
                if match.group(4):
                    self._emit(
                        idx, _ROW_LABELS["output token throughput"], _num(match.group(4)), arm
                    )
                return True
        low = line.lower()
        if "latency" in low:
            match = _AVG_LATENCY.match(line)
            if match:
                scale = 0.001 if match.group(2).lower() == "ms" else 1.0
                self._emit(
                    idx,
                    _Metric("e2e_latency_s", "s", scale),
                    _num(match.group(1)),
                    self._arm_here(idx),
                )
                return True
        if "decoded" in low and "t/s" in low:
            match = _LLAMA_DECODED.search(line)
            if match:
                self._emit(
                    idx, _Metric("output_tok_s", _TOK_S), _num(match.group(1)), self._arm_here(idx)
                )
                return True
        if "eval time" in low and "tokens per second" in low and "prompt eval" not in low:
            match = _LLAMA_EVAL.search(line)
            if match:
                self._emit(
                    idx, _Metric("output_tok_s", _TOK_S), _num(match.group(1)), self._arm_here(idx)
                )
                return True
        if "n_drafted" in low or "n_accept" in low:
            match = _LLAMA_COUNT.match(line)
            if match:
                name = "drafted_tokens" if match.group(1) == "n_drafted" else "accepted_tokens"
                self._emit(idx, _Metric(name, "tokens"), _num(match.group(2)), self._arm_here(idx))
                return True
        if "accept" in low:
            match = _LLAMA_ACCEPT.match(line) or _LLAMA_RATE.search(line)
            if match:
                pct = match.re is _LLAMA_ACCEPT or bool(match.lastindex and match.group(2))
                self._emit(
                    idx,
                    _Metric("acceptance_rate", ""),
                    _num(match.group(1)),
                    self._arm_here(idx),
                    percent=pct,
                )
                return True
            if "accept len" in low and ("decode batch" in low or "#running-req" in low):
                return self._sglang_log(idx, line)
        return False

    def _sglang_log(self, idx: int, line: str) -> bool:
        arm = self._arm_here(idx)
        for match in _SGLANG_SEG.finditer(line):
            key = match.group(1).lower()
            value = _num(match.group(2))
            if key == "accept len":
                self._emit(idx, _ROW_LABELS["accept length"], value, arm)
            elif key == "accept rate":
                self._emit(idx, _Metric("acceptance_rate", ""), value, arm)
            else:
                self._emit(idx, _Metric("output_tok_s", _TOK_S), value, arm)
        return True

    def _json_line(self, idx: int, line: str) -> bool:
        if '"' not in line:
            return False
        found = False
        arm: str | None = None
        for match in _JSON_RE.finditer(line):
            metric = _JSON_KEYS.get(match.group(1))
            if metric is None:
                continue
            if not found:
                arm = self._arm_here(idx)
                found = True
            self._emit(idx, metric, _num(match.group(2)), arm)
        positions = _JSON_POSITIONS.search(line) if "per_position" in line else None
        if positions:
            arm = arm if found else self._arm_here(idx)
            for pos, text in enumerate(positions.group(1).split(",")):
                value = _to_float(text.strip())
                if value is not None:
                    self._emit(
                        idx,
                        _Metric("per_position_acceptance", ""),
                        value,
                        arm,
                        name=f"per_position_acceptance[{pos}]",
                    )
            found = True
        return found

    # -- 2. labelled rows and tables ----------------------------------------------------

    def _row(self, idx: int, line: str) -> bool:
        if _is_separator(line):
            return False
        cells, kind = _split_cells(line)
        # The values are the longest run of numeric cells at the end; the rest is the label.
        values: list[tuple[float, str] | None] = []
        cut = len(cells)
        while cut > 0:
            cell = cells[cut - 1]
            parsed = _parse_cell(cell)
            if parsed is None and cell.strip().lower() not in _EMPTY_CELLS:
                break
            values.append(parsed)
            cut -= 1
        values.reverse()
        label_cells = [c for c in cells[:cut] if c.strip()]
        if not label_cells or all(v is None for v in values):
            return False
        label = " ".join(label_cells)
        if not any(c.isalpha() for c in label):
            return False
        known = _row_metric(label)
        table_kind = kind in ("pipe", "tab")
        if len(values) == 1 and (known is not None or not table_kind):
            return self._single_row(idx, label, known, values[0])
        if _is_code(line):
            return False
        header = self._table_header(idx, len(values))
        if known is not None:
            arms = _header_arms(header, len(values))
            for pos, value in enumerate(values):
                if value is not None:
                    arm = arms[pos] if arms else None
                    self._emit(idx, known[0], value[0], arm, name=known[1], percent=value[1] == "%")
            return True
        if not table_kind:
            return False
        # Row-oriented table: the row label is the arm, the headers name the metrics.
        columns = self._columns(header, len(values))
        if columns is None:
            return True
        arm = _clean_label(" / ".join(label_cells)) or None
        for metric, value in zip(columns, values, strict=True):
            if metric is not None and value is not None:
                self._emit(idx, metric, value[0], arm, percent=value[1] == "%")
        return True

    def _single_row(
        self,
        idx: int,
        label: str,
        known: tuple[_Metric, str] | None,
        value: tuple[float, str] | None,
    ) -> bool:
        if known is None:
            return False
        is_position = known[0].name == "per_position_acceptance"
        if is_position and not self.in_block and not _norm_label(label).startswith("accept"):
            return False  # "Position 0:" means nothing outside a result block
        if value is not None:
            self._emit(
                idx, known[0], value[0], self._arm_here(idx), name=known[1], percent=value[1] == "%"
            )
        return True

    def _columns(self, header: str, width: int) -> list[_Metric | None] | None:
        table = self.table
        if table is not None and table.columns is not None:
            return table.columns
        cells = _split_cells(header)[0] if header else []
        if len(cells) < width:
            return None
        columns = [_classify_header(cell) for cell in cells[len(cells) - width :]]
        if table is not None:
            table.columns = columns
        return columns

    def _table_header(self, idx: int, width: int) -> str:
        table = self.table
        if table is not None and table.width == width and self._adjacent(table.last_row, idx):
            table.last_row = idx
            return table.header
        # Walk up over the rows of this table (rows the prefilter skipped included) to the
        # line above its first row: that line names the columns.
        header = ""
        stop = max(-1, idx - _LOOKBACK_LINES)
        for j in range(idx - 1, stop, -1):
            text = self.lines[j][:_MAX_LINE]
            if _is_separator(text) or _row_width(text) == width:
                continue
            header = text
            break
        self.table = _Table(last_row=idx, header=header, width=width)
        return header

    def _adjacent(self, last: int, idx: int) -> bool:
        if idx - last > _LOOKBACK_LINES:
            return False
        return all(
            _is_separator(self.lines[j]) or _row_width(self.lines[j][:_MAX_LINE]) > 0
            for j in range(last + 1, idx)
        )

    # -- 3. prose -----------------------------------------------------------------------

    def _prose(self, idx: int, line: str) -> None:
        label, rest = _prose_label(line)
        found: list[tuple[_Metric, float, bool]] = []
        for match in _THROUGHPUT_RE.finditer(line):
            before = line[max(0, match.start() - 30) : match.start()].lower()
            prefix = line[: match.start()].lower()
            if any(k in before for k in ("prompt", "prefill", "input")) or any(
                k in prefix for k in ("prompt eval", "encoded", "prompt processing")
            ):
                continue
            name = "total_tok_s" if "total" in before else "output_tok_s"
            found.append((_Metric(name, _TOK_S), _num(match.group(1)), False))
        for match in _SPEEDUP_RE.finditer(line):
            after = line[match.end() : match.end() + 12].lower().lstrip(" )*")
            if "." in match.group(1) or after.startswith(_SPEED_WORDS):
                value = _num(match.group(1))
                if after.startswith("slower") and value > 1:
                    value = 1 / value  # "2x slower" is a ratio of one half
                found.append((_Metric("speedup", "x"), value, False))
        if not any(m.name == "speedup" for m, _, _ in found) and "speed" in line.lower():
            word = _SPEEDUP_WORD_RE.search(line)
            if word:
                found.append((_Metric("speedup", "x"), _num(word.group(1)), False))
        found.extend(_acceptance_mentions(line))
        if label is not None:
            found.extend(_latency_mention(label, rest))
        if not found:
            return
        arm: str | None = None
        if label is not None:
            words = [w for w in re.split(r"[\s_]+", label.lower()) if w]
            if words and all(w in _METRIC_WORDS for w in words):
                # `- Avg latency: 1.5s` under `**With MTP:**`: the arm is the heading above.
                arm = self._arm_here(idx)
            else:
                kept = [w for w in label.split() if w.lower() not in _METRIC_WORDS]
                arm = _label_like(" ".join(kept))
        for metric, value, pct in found:
            self._emit(idx, metric, value, arm, percent=pct)


def _num(text: str) -> float:
    value = _to_float(text)
    return 0.0 if value is None else value


def _row_width(line: str) -> int:
    """How many numeric cells end this line (0 when it has no label or is not a row)."""
    cells, _ = _split_cells(line)
    count = 0
    for cell in reversed(cells):
        if _parse_cell(cell) is None and cell.strip().lower() not in _EMPTY_CELLS:
            break
        count += 1
    if count == len(cells) or count == 0:
        return 0
    return count


def _header_arms(header: str, width: int) -> list[str] | None:
    if not header:
        return None
    cells = [_clean_label(c) for c in _split_cells(header)[0]]
    if len(cells) == width + 1:
        cells = cells[1:]
    elif len(cells) != width:
        return None
    if not all(cells):
        return None
    return cells


def _prose_label(line: str) -> tuple[str | None, str]:
    """`- label: rest` / `label = rest` → (label, rest); (None, line) without one."""
    body = _BULLET.sub("", line).strip()
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


_LATENCY_VALUE = re.compile(r"^\s*[~≈]?\s*" + _NUM + r"\s*(ms|s|sec|seconds)\b")


def _latency_mention(label: str, rest: str) -> list[tuple[_Metric, float, bool]]:
    """`ttft: 62.9 ms`, `mean tpot: 14 ms`, `avg_latency: 1567ms` written as prose."""
    words = set(re.split(r"[\s_]+", label.lower()))
    match = _LATENCY_VALUE.match(rest)
    if match is None:
        return []
    value = _num(match.group(1))
    unit_ms = match.group(2) == "ms"
    stat = "median" if "median" in words else "p99" if "p99" in words else "mean"
    for key in ("ttft", "tpot", "itl"):
        if key in words and not (key == "itl" and stat == "p99"):
            return [(_Metric(f"{key}_ms_{stat}", "ms", 1.0 if unit_ms else 1000.0), value, False)]
    if "latency" in words and stat == "mean":
        return [(_Metric("e2e_latency_s", "s", 0.001 if unit_ms else 1.0), value, False)]
    return []


def _acceptance_mentions(line: str) -> list[tuple[_Metric, float, bool]]:
    out: list[tuple[_Metric, float, bool]] = []
    for match in _ACCEPT_KW.finditer(line):
        word = match.group(0).lower()
        window = line[match.end() : match.end() + 40]
        num = _NUM_RE.search(window)
        if num is None:
            continue
        gap = window[: num.start()]
        gap_words = re.findall(r"[A-Za-z]+", gap)
        if any(w.lower() not in _GAP_WORDS for w in gap_words):
            continue
        if not re.fullmatch(r"[\sA-Za-z():=~≈_-]*", gap):
            continue
        value = _to_float(num.group(1))
        if value is None:
            continue
        tail = window[num.end() : num.end() + 2]
        pct = tail.startswith("%") or tail.startswith(" %")
        lows = " ".join(w.lower() for w in gap_words)
        if word == "al" or "len" in word or "len" in lows:
            out.append((_Metric("acceptance_length", "tokens"), value, False))
        else:
            out.append((_Metric("acceptance_rate", ""), value, pct))
    return out
