"""The last stage: every field of the ReproRequest decided from what the extractors found.

A value the reporter ran (a flag, a kwarg) beats one they describe; a field stated with
conflicting values stays null with a warning. `setup` decides what was run, `compare`
what is compared, `scope` whether the thread is ours, and `request` puts them together.
"""

from __future__ import annotations

from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.decide.request import resolve

__all__ = ["Assembler", "resolve"]
