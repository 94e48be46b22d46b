"""The three words a comparison ends in, shared by every finding that carries one."""

from __future__ import annotations

from typing import Literal

Verdict = Literal["DIFFERENT", "SAME", "UNKNOWN"]
