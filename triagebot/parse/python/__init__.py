"""Python pasted into a report, read with `ast` (never run) into calls and assignments."""

from __future__ import annotations

from triagebot.parse.python.reader import PyAssign, PyCall, PyFacts, extract_python

__all__ = ["PyAssign", "PyCall", "PyFacts", "extract_python"]
