"""A cell's processes, found and stopped as a whole: the process groups of the tree under a
script (servers start their own), signalled TERM and then KILL."""

from __future__ import annotations

import contextlib
import os
import signal as _signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path


def proc_table() -> list[tuple[int, str, int, int]] | None:
    """(pid, state, ppid, pgrp) for every process, from /proc; None off Linux."""
    if not os.path.isdir("/proc/self"):
        return None
    rows = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            data = Path("/proc", name, "stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) >= 3:
            rows.append((int(name), fields[0].decode(), int(fields[1]), int(fields[2])))
    return rows


def _tree_groups(root: int) -> set[int]:
    """The process groups of `root` and every live descendant.

    A script may start a server in a session of its own (to stop it cleanly); killing only
    the script's group would leave that server, and its GPU memory, behind.
    """
    groups = {root}
    table = proc_table()
    if table is None:
        return groups
    children: dict[int, list[tuple[int, int]]] = {}
    for pid, _state, ppid, pgrp in table:
        children.setdefault(ppid, []).append((pid, pgrp))
    stack = [root]
    while stack:
        for pid, pgrp in children.get(stack.pop(), []):
            groups.add(pgrp)
            stack.append(pid)
    return groups


def _groups_alive(groups: Iterable[int]) -> bool:
    """Whether any non-zombie process is left in `groups`."""
    groups = set(groups)
    table = proc_table()
    if table is None:
        for pgid in groups:
            try:
                os.killpg(pgid, 0)
                return True
            except (ProcessLookupError, PermissionError):
                continue
        return False
    return any(pgrp in groups and state != "Z" for _pid, state, _ppid, pgrp in table)


def _signal_groups(groups: Iterable[int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def signal_tree(pid: int, sig: int) -> None:
    """Send `sig` to every process group of `pid`'s tree (SIGSTOP and SIGCONT pause and
    resume a live engine between its rounds, front end and engine core alike)."""
    _signal_groups(_tree_groups(pid), sig)


def has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the script has exited, without reaping it while its group may live on.

    An unreaped script keeps its pid, and so its group id, from being reused, so the
    group can be signalled safely afterwards.
    """
    waitid = getattr(os, "waitid", None)
    if waitid is None or proc.returncode is not None:
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return proc.poll() is not None


def stop_tree(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """TERM every group of the script's tree, wait up to `grace_s`, then KILL."""
    groups = _tree_groups(proc.pid)
    _signal_groups(groups, _signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if has_exited(proc) and not _groups_alive(groups):
            break
        time.sleep(0.05)
    else:
        _signal_groups(groups | _tree_groups(proc.pid), _signal.SIGKILL)
    proc.wait()
