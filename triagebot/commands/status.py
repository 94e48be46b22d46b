"""`@triagebot status`: say where this thread's jobs stand."""

from __future__ import annotations

from triagebot.commands.base import CommandSpec, no_arguments

SPEC = CommandSpec(
    name="status",
    usage="",
    summary="Show the state of this thread's jobs, with links to their pages.",
    parse=no_arguments("status"),
)
