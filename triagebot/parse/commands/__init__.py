"""Command lines pasted into a report, read into `Invocation`s: which program ran, with
which flags and environment. What a flag means is decided later (`parse.runs`)."""

from __future__ import annotations

from triagebot.parse.commands.invocation import FRAGMENT, Arg, Invocation
from triagebot.parse.commands.jsonish import parse_json_value
from triagebot.parse.commands.scanner import (
    ScanResult,
    find_env_assignments,
    find_invocations,
    read_commands,
)

__all__ = ["FRAGMENT", "Arg", "Invocation", "ScanResult", "find_env_assignments",
           "find_invocations", "parse_json_value", "read_commands"]
