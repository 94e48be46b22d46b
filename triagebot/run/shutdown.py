"""A run told to stop (SIGTERM, SIGINT, SIGHUP) stops what it started before it ends.

Scripts run in sessions of their own (`supervise`, `live`), so a signal sent to the
runner's process group, or a terminal that closes, never reaches them; and Python's
default SIGTERM and SIGHUP end the runner without running a single `finally`, so the
`close` of a live engine never ran and its engine core and workers stayed behind, holding
gigabytes of memory, some of them stopped (SIGSTOP, paused between rounds) for good.

`on_stop_signals` turns those signals into a `Stopped` exception. Its handler first stops
every process this one started, directly or not (`stop_descendants`): each tree is
continued (SIGCONT: a stopped process acts on SIGTERM only once it runs again), then
TERMed, given a grace period, and KILLed. Only then does it raise, so the `finally`
blocks on the way out find ended processes and return at once, whatever they were doing
when the signal came. A second signal during that cleanup is ignored: cutting the
cleanup short is what left the engines behind.

`Stopped` is a BaseException, as KeyboardInterrupt is: the runners' `except Exception`
(which turn a bug into a failed job) must not swallow a request to stop. Callers end with
`exit_by`, which dies of the same signal, so a shell (a `for` loop under Ctrl-C, `set -e`)
and Celery (a pool process lost to SIGTERM) see what they would have seen without us.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn, TypeVar

from triagebot.run.process_groups import proc_table

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Long enough for an engine core to shut down on SIGTERM, short enough for whoever
# signalled us: Celery's cold shutdown and systemd wait for the runner, not for ever.
STOP_GRACE_S = 5.0
_POLL_S = 0.05
R = TypeVar("R")
_HOW = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}


class Stopped(BaseException):
    """The process was told to stop by `signum`; what it started has been stopped."""

    def __init__(self, signum: int, stopped: int) -> None:
        self.signum = signum
        self.stopped = stopped
        super().__init__(f"{signal.Signals(signum).name}: stopped {stopped} processes")

    @property
    def message(self) -> str:
        name = signal.Signals(self.signum).name
        how = _HOW.get(signal.Signals(self.signum), "stopped")
        if not self.stopped:
            return f"triagebot: {how} ({name}); no process of the run was left"
        plural = "es" if self.stopped != 1 else ""
        return f"triagebot: {how} ({name}); stopped the {self.stopped} process{plural} of the run"


def _descendants(table: Iterable[tuple[int, str, int, int]], root: int) -> list[
        tuple[int, str, int]]:
    """(pid, state, pgrp) of every descendant of `root`, zombies included: an unreaped
    script keeps its group id, the id its engine core still carries."""
    children: dict[int, list[tuple[int, str, int]]] = {}
    for pid, state, ppid, pgrp in table:
        children.setdefault(ppid, []).append((pid, state, pgrp))
    found: list[tuple[int, str, int]] = []
    stack = [root]
    while stack:
        for row in children.get(stack.pop(), []):
            found.append(row)
            stack.append(row[0])
    return found


def _targets() -> tuple[set[int], set[int]]:
    """The process groups this process's descendants lead (a script's session, a server's)
    and the descendants left in this process's own group (an installer), which are
    signalled one by one: the own group holds this process, and maybe a shell's pipeline."""
    table = proc_table()
    if table is None:
        return set(), set()
    own = os.getpgrp()
    groups: set[int] = set()
    loose: set[int] = set()
    for pid, state, pgrp in _descendants(table, os.getpid()):
        if pgrp != own:
            groups.add(pgrp)
        elif state != "Z":
            loose.add(pid)
    return groups, loose


def _send(groups: set[int], loose: set[int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for pid in loose:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _alive(groups: set[int], loose: set[int]) -> set[int]:
    """The live (not zombie) processes in `groups` or among `loose`."""
    table = proc_table() or []
    return {pid for pid, state, _ppid, pgrp in table
            if state != "Z" and (pgrp in groups or pid in loose)}


def stop_descendants(grace_s: float = STOP_GRACE_S) -> int:
    """Continue, TERM and, after `grace_s`, KILL every process this one started, directly
    or not, with the groups they lead; returns how many there were (Linux; 0 elsewhere)."""
    groups, loose = _targets()
    found = _alive(groups, loose)
    if not found:
        return 0
    _send(groups, loose, signal.SIGCONT)
    _send(groups, loose, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _alive(groups, loose) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    more_groups, more_loose = _targets()  # started while we waited
    groups |= more_groups
    loose |= more_loose
    left = _alive(groups, loose)
    if left:
        _send(groups, loose, signal.SIGCONT)
        _send(groups, loose, signal.SIGKILL)
    return len(found | left)


@contextlib.contextmanager
def on_stop_signals(signals: Iterable[int] = STOP_SIGNALS,
                    grace_s: float = STOP_GRACE_S) -> Iterator[None]:
    """Within the block, `signals` stop every process this one started and raise
    `Stopped`, after which the process is expected to end (`exit_by`). A signal whose
    handler is SIG_IGN stays ignored (`nohup` ignores SIGHUP, a Celery pool process
    SIGINT: whoever started us chose that). Off the main thread, where Python cannot set
    handlers, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return  # the cleanup of the first signal is under way; let it finish
        fired.append(signum)
        raise Stopped(signum, stop_descendants(grace_s))

    previous = {}
    for sig in signals:
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:
            continue
        previous[sig] = old
        signal.signal(sig, handler)
    try:
        yield
    finally:
        # After a Stopped the handler stays: it ignores more signals while the caller
        # says what happened and ends (a second Ctrl-C must not print a traceback).
        if not fired:
            for sig, old in previous.items():
                signal.signal(sig, old if old is not None else signal.SIG_DFL)


def exit_by(signum: int) -> NoReturn:
    """End this process by `signum`'s default action, as if no handler had been set: the
    exit status says which signal ended it (a shell shows 128+N)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the default action did not end the process


def run_until_stopped(main: Callable[[], R], say: Callable[[str], None] | None = None) -> R:
    """`main()`, or, when a stop signal comes, what it started stopped, one line said
    (stderr by default; no traceback) and this process ended by that signal."""
    try:
        with on_stop_signals():
            return main()
    except Stopped as stop:
        # The terminal may be gone (SIGHUP): the line is lost then, not the exit status.
        with contextlib.suppress(Exception):
            (say or _to_stderr)(stop.message)
        exit_by(stop.signum)


def _to_stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
