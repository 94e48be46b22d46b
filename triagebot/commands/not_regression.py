"""`@triagebot not-a-regression`: on a sentinel tracking issue, a maintainer says the flag
was no regression (noise, an intended change). It takes no arguments; the decision
checks that the thread is a tracking issue and who may say so."""

from __future__ import annotations

from triagebot.commands.base import CommandSpec, no_arguments

SPEC = CommandSpec(
    name="not-a-regression",
    usage="",
    summary="On a sentinel tracking issue: the flag was no regression; it is counted in "
            "the sentinel's false-positive rate.",
    parse=no_arguments("not-a-regression"),
)
