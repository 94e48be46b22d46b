"""The words, labels and line shapes the results reader knows: metrics and their units,
what benchmark tools and engine logs print, and what marks a line as code or noise."""

from __future__ import annotations

import re
from dataclasses import dataclass

SOURCE = "results"
MAX_LINE = 2000  # longer lines are not results anyone pasted; look at their head only
LOOKBACK_LINES = 40  # how far up we search for an arm label

NUMBER = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
NUMBER_RE = re.compile(NUMBER)
CELL_RE = re.compile(
    r"^[~≈]?\s*" + NUMBER + r"\s*(%|x|×|ms|s|sec|seconds|tok/s|tokens/s|t/s|req/s)?$"
)


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    scale: float = 1.0  # multiply the written value by this (ms → s, % → fraction)


TOK_S = "tok/s"
# Row labels of `vllm bench serve` / `sglang.bench_serving` output and of offline
# `spec_decode.py` output, normalised (lower case, single spaces, no trailing colon).
ROW_LABELS: dict[str, Metric] = {
    "output token throughput (tok/s)": Metric("output_tok_s", TOK_S),
    "output token throughput": Metric("output_tok_s", TOK_S),
    "output throughput (tok/s)": Metric("output_tok_s", TOK_S),
    "total token throughput (tok/s)": Metric("total_tok_s", TOK_S),
    "total token throughput": Metric("total_tok_s", TOK_S),
    "request throughput (req/s)": Metric("request_throughput", "req/s"),
    "request throughput": Metric("request_throughput", "req/s"),
    "peak output token throughput (tok/s)": Metric("peak_output_tok_s", TOK_S),
    "mean ttft (ms)": Metric("ttft_ms_mean", "ms"),
    "median ttft (ms)": Metric("ttft_ms_median", "ms"),
    "p99 ttft (ms)": Metric("ttft_ms_p99", "ms"),
    "mean tpot (ms)": Metric("tpot_ms_mean", "ms"),
    "median tpot (ms)": Metric("tpot_ms_median", "ms"),
    "p99 tpot (ms)": Metric("tpot_ms_p99", "ms"),
    "mean itl (ms)": Metric("itl_ms_mean", "ms"),
    "median itl (ms)": Metric("itl_ms_median", "ms"),
    "mean e2el (ms)": Metric("e2e_latency_s", "s", 0.001),
    "mean e2e latency (ms)": Metric("e2e_latency_s", "s", 0.001),
    "acceptance rate (%)": Metric("acceptance_rate", "", 0.01),
    "acceptance rate": Metric("acceptance_rate", ""),
    "draft acceptance rate": Metric("acceptance_rate", ""),
    "acceptance length": Metric("acceptance_length", "tokens"),
    "accept length": Metric("acceptance_length", "tokens"),
    "mean acceptance length": Metric("acceptance_length", "tokens"),
    "avg acceptance length": Metric("acceptance_length", "tokens"),
    "draft tokens": Metric("drafted_tokens", "tokens"),
    "drafted tokens": Metric("drafted_tokens", "tokens"),
    "accepted tokens": Metric("accepted_tokens", "tokens"),
    "num_draft_tokens": Metric("drafted_tokens", "tokens"),
    "num_accepted_tokens": Metric("accepted_tokens", "tokens"),
    "speedup": Metric("speedup", "x"),
}
POSITION_LABEL = re.compile(
    r"^(?:acceptance (?:pos(?:ition)?|at token) |position )(\d{1,2})(?: \(%\))?$"
)

# JSON keys of `vllm bench serve --save-result`, SGLang bench JSONL and vllm-mlx /v1/status.
JSON_KEYS: dict[str, Metric] = {
    "output_throughput": Metric("output_tok_s", TOK_S),
    "total_token_throughput": Metric("total_tok_s", TOK_S),
    "total_throughput": Metric("total_tok_s", TOK_S),
    "request_throughput": Metric("request_throughput", "req/s"),
    "max_output_tokens_per_s": Metric("peak_output_tok_s", TOK_S),
    "mean_ttft_ms": Metric("ttft_ms_mean", "ms"),
    "median_ttft_ms": Metric("ttft_ms_median", "ms"),
    "p99_ttft_ms": Metric("ttft_ms_p99", "ms"),
    "mean_tpot_ms": Metric("tpot_ms_mean", "ms"),
    "median_tpot_ms": Metric("tpot_ms_median", "ms"),
    "p99_tpot_ms": Metric("tpot_ms_p99", "ms"),
    "mean_itl_ms": Metric("itl_ms_mean", "ms"),
    "median_itl_ms": Metric("itl_ms_median", "ms"),
    "mean_e2el_ms": Metric("e2e_latency_s", "s", 0.001),
    "mean_e2e_latency_ms": Metric("e2e_latency_s", "s", 0.001),
    "avg_latency": Metric("e2e_latency_s", "s"),
    "spec_decode_acceptance_rate": Metric("acceptance_rate", "", 0.01),
    "spec_decode_acceptance_length": Metric("acceptance_length", "tokens"),
    "spec_decode_draft_tokens": Metric("drafted_tokens", "tokens"),
    "spec_decode_accepted_tokens": Metric("accepted_tokens", "tokens"),
    "accept_length": Metric("acceptance_length", "tokens"),
    "avg_spec_accept_length": Metric("acceptance_length", "tokens"),
    "spec_accept_length": Metric("acceptance_length", "tokens"),
    "acceptance_rate": Metric("acceptance_rate", ""),
    "generation_tps": Metric("output_tok_s", TOK_S),
}
JSON_RE = re.compile(r'"([a-z0-9_]{3,40})"\s*:\s*' + NUMBER + r"(?![\d.])")
JSON_POSITIONS = re.compile(
    r'"spec_decode_per_position_acceptance_rates"\s*:\s*\[([^\]]{0,400})\]'
)

# Fixed-shape tool lines.
SPEC_LINE = re.compile(r"(?:SpecDecoding|Speculative) metrics:\s*(.*)$")
BENCH_THROUGHPUT = re.compile(
    r"Throughput:\s*" + NUMBER + r"\s*requests/s,\s*" + NUMBER + r"\s*(total )?tokens/s"
    r"(?:,\s*" + NUMBER + r"\s*output tokens/s)?"
)
AVG_LATENCY = re.compile(
    r"^\W*avg[ _]latency\s*[:=]\s*" + NUMBER + r"\s*(ms|s|sec|secs|seconds)\b", re.IGNORECASE
)
LLAMA_DECODED = re.compile(
    r"decoded\s+\d+\s+tokens\s+in\s+[\d.]+\s+seconds,\s+speed:\s+" + NUMBER + r"\s*t/s"
)
LLAMA_EVAL = re.compile(r"^\s*(?:\S+\s+)?eval time\s*=.*?,\s*" + NUMBER + r"\s+tokens per second")
PROGRESS_SPEED = re.compile(r"est\. speed input: [\d.,]+ toks/s, output: " + NUMBER + r" toks/")
LLAMA_COUNT = re.compile(r"^\s*(n_drafted|n_accept)\s*=\s*(\d+)\s*$")
LLAMA_ACCEPT = re.compile(r"^\s*accept\s*=\s*" + NUMBER + r"\s*%\s*$")
LLAMA_RATE = re.compile(r"draft acceptance rate\s*=\s*" + NUMBER + r"\s*(%)?")
SGLANG_SEG = re.compile(
    r"(accept len|accept rate|gen throughput \(token/s\))\s*:\s*" + NUMBER, re.IGNORECASE
)

# Prose.
THROUGHPUT_RE = re.compile(
    r"(?<![\w.])[~≈]?\s*" + NUMBER + r"\s*(?:tok/s|tokens/s|tokens/sec|tok/sec|toks/s|token/s"
    r"|tokens per second|tok per sec|t/s|tps)(?![A-Za-z])",
    re.IGNORECASE,
)
SPEEDUP_RE = re.compile(r"(?<![\w.])" + NUMBER + r"\s?[x×](?![A-Za-z0-9])")
SPEEDUP_WORD_RE = re.compile(
    r"speed-?up\s*(?:of|:|=|is|was)?\s*[~≈]?\s*" + NUMBER + r"\s*[x×]?", re.IGNORECASE
)
SPEED_WORDS = ("faster", "slower", "speedup", "speed-up", "vs", "over", "better", "worse")
ACCEPT_KW = re.compile(r"(?i:accept(?:ance)?(?:[ _](?:rate|len(?:gth)?))?)|\bAL\b")
GAP_WORDS = frozenset(
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
COMMAND = re.compile(
    r"^\s*(?:\$\s*)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:vllm|python3?|sglang|llama-[\w-]+|\./\S+|curl"
    r"|docker|bash|sh|torchrun|mpirun|export|uv|pip3?|git|CUDA_VISIBLE_DEVICES=\S*)(?:\s|$)"
)
LOG_PREFIX = re.compile(r"^\s*(?:\(\S+ pid=\d+\)\s*)?(?:DEBUG|INFO|WARNING|WARN|ERROR)\b")
DATE_PREFIX = re.compile(r"^\s*\[?\d{4}-\d\d-\d\d")
BULLET = re.compile(r"^\s*(?:[-*•+>]\s+|\d{1,2}[.)、]\s*|#{1,6}\s*)+")
GENERIC = frozenset(
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
METRIC_WORDS = frozenset(
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
DIGIT = re.compile(r"\d")
# A line can only hold a result when it has one of these; everything else is skipped early.
# One case-sensitive alternation over the lower-cased line: IGNORECASE is much slower
# (bench/parse_bench.py times the parser's stages).
_CANDIDATE = re.compile(
    r"tok|t/s|throughput|accept|latency|ttft|tpot|itl|e2e|draft|speed|req/s|position|pos "
    r"|metrics:|tps|[|\t]|\d\s?[x×](?![a-z0-9])"
)


def is_candidate(line: str) -> bool:
    return _CANDIDATE.search(line.lower()) is not None or "AL" in line


MAX_NUMBERS = 2000  # no report states more; past this the text is a log dump
# Lines that reach the recognisers, each of which costs real time. A pasted multi-megabyte
# log or table stops here, so the scan's time has a bound whatever the input.
MAX_CANDIDATES = 15_000
ASSIGN_NUM = re.compile(r"^[\w .-]{1,40}=\s*[~\d.]")
GAP = re.compile(r"\s{2,}")
EMPTY_CELLS = frozenset({"", "-", "n/a", "na", "—", "–"})
CODE_MARKERS = ("print(", 'f"', "f'", "{", "}", "==", "+=", "lambda", "->")
CALL_WITH_KW = re.compile(r"\w\([^)]*\w=")
INLINE_CODE = re.compile(r"`[^`\n]*`")
CODE_START = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|return\b|for \w+ in |if |elif "
    r"|else:|while |with |assert |@\w|#!|//)"
)
