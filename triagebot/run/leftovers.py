"""Engines left behind by a runner that was killed outright are ended by the next one.

Nothing runs in a process killed by SIGKILL: a Celery hard time limit (TERM, then KILL a
tenth of a second later), the kernel's OOM killer, `kill -9`. The script dies with it
(`supervise`'s trampoline asks the kernel for that), but vLLM starts its engine core by
spawn, as a child of the script with no parent-death signal of its own, and a live
engine's tree may be stopped between rounds, where it never reads the end of its stdin
and no handler of its own can run. So those processes stay, holding their memory.

Every script starts with `TRIAGEBOT_OWNER=<scope>:<pid>:<start>` as the last entry of its
environment (`owner_tag`, set by `supervise.child_environment`), and every process under
it inherits it: the engine core, its workers, a server in a session of its own. (Last,
because a process that sets its title, as vLLM's do, overwrites the first entries of the
environment block that /proc shows.) `reap` ends the
processes of this user whose environment names an owner of `scope` that is no longer
running: its pid gone, or taken by a process started at another time. A process without
the tag is never touched, and the scope (the environment cache a runner uses) keeps one
deployment's runners off another's processes. The tag is read through a pidfd where the
kernel has them, so a pid reused between the reading and the signal is never hit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

OWNER_VAR = "TRIAGEBOT_OWNER"


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (None: no such process, or not
    Linux): with the pid, it names one process for good."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        return int(data[data.rfind(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def scope_of(path: Path) -> str:
    """The scope of the runners that share `path` (their environment cache)."""
    return hashlib.sha256(str(path.expanduser().resolve()).encode()).hexdigest()[:12]


def owner_tag(scope: str, pid: int | None = None) -> str:
    """The value of TRIAGEBOT_OWNER for scripts started by `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{scope}:{pid}:{start_ticks(pid) or 0}"


def _tag(pid: int) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None  # gone, or another user's
    prefix = OWNER_VAR.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode(errors="replace")
    return None


def _orphaned(tag: str, scope: str) -> bool:
    """Whether `tag` names an owner in `scope` that is no longer running."""
    parts = tag.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != scope:
        return False
    try:
        pid, ticks = int(parts[1]), int(parts[2])
    except ValueError:
        return False
    return start_ticks(pid) != ticks


def leftovers(scope: str) -> list[int]:
    """The processes of this user that a dead owner of `scope` started (Linux; [] elsewhere)."""
    if not os.path.isdir("/proc/self"):
        return []
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        tag = _tag(int(name))
        if tag is not None and _orphaned(tag, scope):
            found.append(int(name))
    return sorted(found)


def started_by(scope: str, pid: int) -> list[int]:
    """The running processes that carry the tag of owner `pid` in `scope`: all that owner
    started, directly or not, and that are still there (Linux; [] elsewhere)."""
    if not os.path.isdir("/proc/self"):
        return []
    want = owner_tag(scope, pid)
    return sorted(int(name) for name in os.listdir("/proc")
                  if name.isdigit() and _tag(int(name)) == want)


def _kill(pid: int, scope: str) -> bool:
    """Continue and KILL `pid` if it still carries a dead owner's tag of `scope`."""
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is None or send is None:
        tag = _tag(pid)
        if tag is None or not _orphaned(tag, scope):
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
            return True
        return False
    try:
        fd = pidfd_open(pid)
    except OSError:
        return False
    try:
        # Read after the pidfd holds the process: the tag read is that process's.
        tag = _tag(pid)
        if tag is None or not _orphaned(tag, scope):
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(fd, signal.SIGCONT)
            send(fd, signal.SIGKILL)
            return True
        return False
    finally:
        os.close(fd)


def reap(scope: str, log: Callable[[str], None] | None = None) -> int:
    """End what dead owners of `scope` left running; returns how many processes."""
    killed = [pid for pid in leftovers(scope) if _kill(pid, scope)]
    if killed and log is not None:
        log(f"ended {len(killed)} process(es) left running by a runner that was killed: "
            f"{', '.join(map(str, killed))}")
    return len(killed)
