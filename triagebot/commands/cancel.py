"""`@triagebot cancel`: stop the queued or running repro jobs of this thread."""

from __future__ import annotations

from triagebot.commands.base import CommandSpec, no_arguments

SPEC = CommandSpec(
    name="cancel",
    usage="",
    summary="Cancel this thread's queued and running repro jobs.",
    parse=no_arguments("cancel"),
)
