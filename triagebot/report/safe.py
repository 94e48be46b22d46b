"""Text the report template may print: `Md` marks a value already made safe for its spot,
and the helpers here are the only ways the report builds one from outside text.

The template environment's `finalize` refuses any other value, so a template edit cannot
print raw user-derived text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from triagebot.report import markdown as md


class Md(str):
    """Text already made safe for the spot the template prints it in."""

    __slots__ = ()


class UnsafeReportValue(ValueError):
    """A template printed a value that did not pass a markdown helper."""


def finalize(value: Any) -> Any:
    if isinstance(value, Md) or value is None or value == "":
        return value if value is not None else ""
    raise UnsafeReportValue(f"report template printed an unescaped {type(value).__name__}")


def join_md(items: Sequence[Any], sep: str = " | ") -> Md:
    """Join already-safe pieces; a raw string among them is refused like in finalize."""
    for item in items:
        finalize(item)
    return Md(sep.join(items))


def prose(text: object, limit: int = 500) -> Md:
    return Md(md.inline(text, limit))


def cell_text(text: object, limit: int = 200) -> Md:
    return Md(md.table_cell(text, limit))


def number(value: float | None, fmt: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{suffix}"


def interval(low: float | None, high: float | None, fmt: str = ".2f") -> str:
    return "" if low is None or high is None else f" [{low:{fmt}}, {high:{fmt}}]"

