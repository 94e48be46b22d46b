"""The results scanner's state (the arm a block or run is about, the table being read) and
its reading of tool output: spec-decode log lines, benchmark summaries, JSON results."""

from __future__ import annotations

from dataclasses import dataclass

from triagebot.parse.document import Layout
from triagebot.parse.results.cells import (
    as_number,
    is_separator,
    label_like,
    row_metric,
    skippable,
    split_cells,
    to_float,
)
from triagebot.parse.results.words import (
    AVG_LATENCY,
    BENCH_THROUGHPUT,
    JSON_KEYS,
    JSON_POSITIONS,
    JSON_RE,
    LLAMA_ACCEPT,
    LLAMA_COUNT,
    LLAMA_DECODED,
    LLAMA_EVAL,
    LLAMA_RATE,
    LOOKBACK_LINES,
    MAX_LINE,
    NUMBER_RE,
    PROGRESS_SPEED,
    ROW_LABELS,
    SGLANG_SEG,
    SOURCE,
    SPEC_LINE,
    TOK_S,
    Metric,
)
from triagebot.request_model import Evidence, ReportedNumber

# --- the scanner ---------------------------------------------------------------------------


@dataclass
class Table:
    last_row: int  # 0-based index of the last row seen in this table
    header: str  # the line above the first row
    width: int  # number of value cells per row
    columns: list[Metric | None] | None = None  # header cells → metrics, once per table


class _ScanState:
    """What every reader shares: the lines, the arm they are about, what was found."""
    def __init__(self, lines: list[str], layout: Layout) -> None:
        self.lines = lines
        self.layout = layout
        self.out: list[ReportedNumber] = []
        self.fence_lang: str | None = None  # the line's code block language, "" if unnamed
        self.block_arm: str | None = None
        self.in_block = False
        self.table: Table | None = None
        self.run_arm: tuple[int, str | None] | None = None  # (last row index, its arm)

    # -- emitting -----------------------------------------------------------------------

    def _emit(
        self,
        idx: int,
        metric: Metric,
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
        if s.startswith(("```", "~~~")) and self.fence_lang is not None:
            self.in_block = False  # a fence's own line
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
        stop = max(-1, idx - LOOKBACK_LINES)
        for j in range(idx - 1, stop, -1):
            text = self.lines[j][:MAX_LINE]
            s = text.strip()
            if not s or is_separator(s):
                continue
            if s.startswith("=") or "Benchmark Result" in s:
                return None  # the end of an earlier block: nothing labels this one
            if skippable(s):
                continue
            if row_metric(split_cells(s)[0][0] if s else "") is not None:
                continue
            return label_like(s)
        return None

    def _arm_here(self, idx: int) -> str | None:
        arm = self.block_arm if self.in_block else self._find_arm(idx)
        self.run_arm = (idx, arm)
        return arm


class ToolReader(_ScanState):
    """Lines benchmark tools and engines print: spec-decode metrics, summaries, JSON."""

    # -- 1. fixed-shape lines -----------------------------------------------------------

    def _spec_line(self, idx: int, line: str) -> bool:
        if "metrics:" not in line:
            return False
        match = SPEC_LINE.search(line)
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
            num = NUMBER_RE.search(val)
            if num is None or current is None:
                continue
            value = to_float(num.group(1))
            if value is None:
                continue
            pct = "%" in val
            if current == "per-position acceptance rate":
                self._emit(
                    idx,
                    Metric("per_position_acceptance", ""),
                    value,
                    arm,
                    name=f"per_position_acceptance[{position}]",
                    percent=pct,
                )
                position += 1
            elif "acceptance rate" in current:
                self._emit(idx, Metric("acceptance_rate", ""), value, arm, percent=pct)
            elif "acceptance length" in current:
                self._emit(idx, ROW_LABELS["acceptance length"], value, arm)
            elif current in ("accepted", "number of accepted tokens"):
                self._emit(idx, ROW_LABELS["accepted tokens"], value, arm)
            elif current in ("drafted", "number of draft tokens"):
                self._emit(idx, ROW_LABELS["draft tokens"], value, arm)
        return True

    def _tool_line(self, idx: int, line: str) -> bool:
        if "est. speed" in line:
            # vLLM's offline progress bar ends on the run's measured speed.
            match = PROGRESS_SPEED.search(line)
            if match:
                self._emit(idx, Metric("output_tok_s", TOK_S), as_number(match.group(1)),
                           self._arm_here(idx))
                return True
        if "Throughput:" in line and "requests/s" in line:
            match = BENCH_THROUGHPUT.search(line)
            if match:
                arm = self._arm_here(idx)
                self._emit(idx, ROW_LABELS["request throughput"], as_number(match.group(1)), arm)
                # Before output tokens/s was printed, "tokens/s" meant total tokens.
                self._emit(idx, ROW_LABELS["total token throughput"], as_number(match.group(2)),
                           arm)
                if match.group(4):
                    self._emit(
                        idx, ROW_LABELS["output token throughput"], as_number(match.group(4)), arm
                    )
                return True
        low = line.lower()
        if "latency" in low:
            match = AVG_LATENCY.match(line)
            if match:
                scale = 0.001 if match.group(2).lower() == "ms" else 1.0
                self._emit(
                    idx,
                    Metric("e2e_latency_s", "s", scale),
                    as_number(match.group(1)),
                    self._arm_here(idx),
                )
                return True
        if "decoded" in low and "t/s" in low:
            match = LLAMA_DECODED.search(line)
            if match:
                self._emit(idx, Metric("output_tok_s", TOK_S), as_number(match.group(1)),
                           self._arm_here(idx))
                return True
        if "eval time" in low and "tokens per second" in low and "prompt eval" not in low:
            match = LLAMA_EVAL.search(line)
            if match:
                self._emit(idx, Metric("output_tok_s", TOK_S), as_number(match.group(1)),
                           self._arm_here(idx))
                return True
        if "n_drafted" in low or "n_accept" in low:
            match = LLAMA_COUNT.match(line)
            if match:
                name = "drafted_tokens" if match.group(1) == "n_drafted" else "accepted_tokens"
                self._emit(idx, Metric(name, "tokens"), as_number(match.group(2)),
                           self._arm_here(idx))
                return True
        if "accept" in low:
            match = LLAMA_ACCEPT.match(line) or LLAMA_RATE.search(line)
            if match:
                pct = match.re is LLAMA_ACCEPT or bool(match.lastindex and match.group(2))
                self._emit(
                    idx,
                    Metric("acceptance_rate", ""),
                    as_number(match.group(1)),
                    self._arm_here(idx),
                    percent=pct,
                )
                return True
            if "accept len" in low and ("decode batch" in low or "#running-req" in low):
                return self._sglang_log(idx, line)
        return False

    def _sglang_log(self, idx: int, line: str) -> bool:
        arm = self._arm_here(idx)
        for match in SGLANG_SEG.finditer(line):
            key = match.group(1).lower()
            value = as_number(match.group(2))
            if key == "accept len":
                self._emit(idx, ROW_LABELS["accept length"], value, arm)
            elif key == "accept rate":
                self._emit(idx, Metric("acceptance_rate", ""), value, arm)
            else:
                self._emit(idx, Metric("output_tok_s", TOK_S), value, arm)
        return True

    def _json_line(self, idx: int, line: str) -> bool:
        if '"' not in line:
            return False
        found = False
        arm: str | None = None
        for match in JSON_RE.finditer(line):
            metric = JSON_KEYS.get(match.group(1))
            if metric is None:
                continue
            if not found:
                arm = self._arm_here(idx)
                found = True
            self._emit(idx, metric, as_number(match.group(2)), arm)
        positions = JSON_POSITIONS.search(line) if "per_position" in line else None
        if positions:
            arm = arm if found else self._arm_here(idx)
            for pos, text in enumerate(positions.group(1).split(",")):
                value = to_float(text.strip())
                if value is not None:
                    self._emit(
                        idx,
                        Metric("per_position_acceptance", ""),
                        value,
                        arm,
                        name=f"per_position_acceptance[{pos}]",
                    )
            found = True
        return found
