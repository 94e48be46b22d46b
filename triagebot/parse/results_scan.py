"""The results scanner's state (the arm a block or run is about, the table being read) and
its reading of tool output: spec-decode log lines, benchmark summaries, JSON results."""

from __future__ import annotations

from dataclasses import dataclass

from triagebot.model import Evidence, ReportedNumber
from triagebot.parse.results_cells import (
    _is_separator,
    _label_like,
    _num,
    _row_metric,
    _skippable,
    _split_cells,
    _to_float,
)
from triagebot.parse.results_words import (
    _AVG_LATENCY,
    _BENCH_THROUGHPUT,
    _JSON_KEYS,
    _JSON_POSITIONS,
    _JSON_RE,
    _LLAMA_ACCEPT,
    _LLAMA_COUNT,
    _LLAMA_DECODED,
    _LLAMA_EVAL,
    _LLAMA_RATE,
    _LOOKBACK_LINES,
    _MAX_LINE,
    _NUM_RE,
    _ROW_LABELS,
    _SGLANG_SEG,
    _SPEC_LINE,
    _TOK_S,
    SOURCE,
    _Metric,
)

# --- the scanner ---------------------------------------------------------------------------


@dataclass
class _Table:
    last_row: int  # 0-based index of the last row seen in this table
    header: str  # the line above the first row
    width: int  # number of value cells per row
    columns: list[_Metric | None] | None = None  # header cells → metrics, once per table


class _ScanState:
    """What every reader shares: the lines, the arm they are about, what was found."""
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.out: list[ReportedNumber] = []
        self.fence_lang: str | None = None  # language of the open ``` fence, "" if none
        self.block_arm: str | None = None
        self.in_block = False
        self.table: _Table | None = None
        self.run_arm: tuple[int, str | None] | None = None  # (last row index, its arm)

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


class _ToolReader(_ScanState):
    """Lines benchmark tools and engines print: spec-decode metrics, summaries, JSON."""

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
