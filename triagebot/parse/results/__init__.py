"""Numbers the reporter saw (tool output, log lines, tables, prose) → `ReportedNumber`s."""

from __future__ import annotations

from triagebot.parse.results.scanner import find_reported_numbers, summarise

__all__ = ["find_reported_numbers", "summarise"]
