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

The reading is split by what it reads: `words` (labels, units, line shapes), `cells`
(one cell, label or mention), and the scanner's layers `tools` (state and tool output)
and `tables`, which `_Scanner` below drives in one pass.
"""

from __future__ import annotations

import re

from triagebot.parse.document import PYTHON_LANGUAGES, Layout, read_layout
from triagebot.parse.results.cells import (
    acceptance_mentions,
    as_number,
    is_code,
    is_noise,
    label_like,
    latency_mention,
    prose_label,
)
from triagebot.parse.results.tables import TableReader
from triagebot.parse.results.words import (
    DATE_PREFIX,
    DIGIT,
    LOG_PREFIX,
    MAX_CANDIDATES,
    MAX_LINE,
    MAX_NUMBERS,
    METRIC_WORDS,
    SPEED_WORDS,
    SPEEDUP_RE,
    SPEEDUP_WORD_RE,
    THROUGHPUT_RE,
    TOK_S,
    Metric,
    is_candidate,
)
from triagebot.request_model import ReportedMetrics, ReportedNumber

__all__ = ["find_reported_numbers", "summarise"]


def find_reported_numbers(lines: list[str],
                          layout: Layout | None = None) -> list[ReportedNumber]:
    """Every number the reporter saw, in text order. Never raises. `layout` says where the
    fenced code is (read from `lines` when not given)."""
    try:
        return _Scanner(lines, layout or read_layout(lines)).run()
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


class _Scanner(TableReader):
    """One pass over the document: each line goes to the reader its shape calls for."""

    def run(self) -> list[ReportedNumber]:
        budget = MAX_CANDIDATES
        for idx, raw in enumerate(self.lines):
            line = raw if len(raw) <= MAX_LINE else raw[:MAX_LINE]
            self.fence_lang = self.layout.language(idx)
            head = line.lstrip()[:1]
            if not head:
                self.in_block = False  # result blocks have no blank lines inside
                continue
            if head in "`~=" and self._structure(idx, line):
                continue
            if DIGIT.search(line) is None or not is_candidate(line):
                continue  # two C-speed searches keep the common line cheap
            budget -= 1
            if len(self.out) >= MAX_NUMBERS or budget < 0:
                break
            if LOG_PREFIX.match(line) or DATE_PREFIX.match(line):
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
            if self.fence_lang in PYTHON_LANGUAGES or self.fence_lang in ("json", "yaml"):
                continue
            if is_code(line) or is_noise(line):
                continue
            self._prose(idx, line)
        return self.out

    # -- 3. prose -----------------------------------------------------------------------

    def _prose(self, idx: int, line: str) -> None:
        label, rest = prose_label(line)
        found: list[tuple[Metric, float, bool]] = []
        for match in THROUGHPUT_RE.finditer(line):
            before = line[max(0, match.start() - 30) : match.start()].lower()
            prefix = line[: match.start()].lower()
            if any(k in before for k in ("prompt", "prefill", "input")) or any(
                k in prefix for k in ("prompt eval", "encoded", "prompt processing")
            ):
                continue
            name = "total_tok_s" if "total" in before else "output_tok_s"
            found.append((Metric(name, TOK_S), as_number(match.group(1)), False))
        for match in SPEEDUP_RE.finditer(line):
            after = line[match.end() : match.end() + 12].lower().lstrip(" )*")
            if "." in match.group(1) or after.startswith(SPEED_WORDS):
                value = as_number(match.group(1))
                if after.startswith("slower") and value > 1:
                    value = 1 / value  # "2x slower" is a ratio of one half
                found.append((Metric("speedup", "x"), value, False))
        if not any(m.name == "speedup" for m, _, _ in found) and "speed" in line.lower():
            word = SPEEDUP_WORD_RE.search(line)
            if word:
                found.append((Metric("speedup", "x"), as_number(word.group(1)), False))
        found.extend(acceptance_mentions(line))
        if label is not None:
            found.extend(latency_mention(label, rest))
        if not found:
            return
        arm: str | None = None
        if label is not None:
            words = [w for w in re.split(r"[\s_]+", label.lower()) if w]
            if words and all(w in METRIC_WORDS for w in words):
                # `- Avg latency: 1.5s` under `**With MTP:**`: the arm is the heading above.
                arm = self._arm_here(idx)
            else:
                kept = [w for w in label.split() if w.lower() not in METRIC_WORDS]
                arm = label_like(" ".join(kept))
        for metric, value, pct in found:
            self._emit(idx, metric, value, arm, percent=pct)
