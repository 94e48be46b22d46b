"""`@triagebot help`: reply with the commands and the repro keys."""

from __future__ import annotations

from triagebot.commands.base import CommandSpec, no_arguments

SPEC = CommandSpec(
    name="help",
    usage="",
    summary="Reply with this list of commands.",
    parse=no_arguments("help"),
)
