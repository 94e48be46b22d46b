"""What a test can see of a process from /proc."""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str:
    """The one-letter state in /proc/<pid>/stat (T stopped, Z zombie), "gone" once reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def process_argv(pid: int) -> list[str]:
    """The command line in /proc/<pid>/cmdline, an empty list once the process is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []
