"""Signal dispositions for a child that stands in for a command typed at a terminal."""

from __future__ import annotations

import signal

# A command started from a terminal has these at their defaults; one started under
# `nohup`, or in the background of a script, inherits them ignored, and then (rightly)
# never acts on them. Tests of how a run answers them restore the defaults in the child.
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)


def as_from_a_terminal() -> None:
    """`preexec_fn` for such a child: the signals at their defaults."""
    for sig in TERMINAL_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
