"""vllm-mlx on MLX's Linux CPU backend: the releases the `cpu` runner has a lock for.

A lock is `triagebot/engines/locks/vllm-mlx-X.txt`, hashed `uv pip compile` output that
`triagebot.run.vllm_mlx` installs as it is. A lock is not vllm-mlx's own resolution:
its requirements are `REQUIREMENTS` below, each override in `OVERRIDES` says why the
release's own pins do not run verified MTP on Linux, and torch and torchvision are left
out (vllm-mlx lists them for vision preprocessing; `vllm-mlx serve` runs without them,
the text path and, with mlx-vlm's own numpy Qwen3-VL processors, the Qwen3.5
vision-language one, and PyPI's Linux torch is the CUDA build, gigabytes that a CPU never
uses).
Reading the folder and these tables is all this module does, so plans can name only
releases a runner can install.
"""

from __future__ import annotations

import re
from pathlib import Path

from triagebot.engines import vllm_cpu

PACKAGE = "vllm-mlx"
# MLX's CPU backend for x86-64 Linux is the `cpu` extra (the `mlx-cpu` wheel); its wheels
# are tagged manylinux_2_35, so the lock is resolved for that platform.
MLX = "mlx[cpu]==0.32.4"
PLATFORM = "x86_64-manylinux_2_35"
PYTHON = "3.11"
# Pinned away from what each release resolves to, with the reason (seen on these machines).
OVERRIDES: dict[str, dict[str, str]] = {
    "0.6.0": {
        "mlx-lm==0.31.1": "vllm-mlx 0.6.0 asks for mlx-lm>=0.31.3,<0.32, and the "
                          "BatchGenerator of 0.31.2 and later has no `_step` hook: the "
                          "server then logs \"[MTP] disabled: mlx-lm BatchGenerator lacks "
                          "the _step hook\" and never drafts. 0.31.1 is the newest mlx-lm "
                          "with the hook (0.31.0 is yanked)",
    },
}
# Never installed: every requirement on these is replaced by one that matches no platform.
LEFT_OUT = ("torch", "torchvision")
_LOCK = re.compile(r"^vllm-mlx-(\d+\.\d+\.\d+)\.txt$")


def lock_path(version: str) -> Path:
    return vllm_cpu.locks_dir() / f"vllm-mlx-{version}.txt"


def locked_releases() -> list[str]:
    """The releases with a committed lock, oldest first."""
    found = [m.group(1) for p in vllm_cpu.locks_dir().glob("vllm-mlx-*.txt")
             if (m := _LOCK.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def requirements(version: str) -> list[str]:
    return [f"{PACKAGE}=={version}", MLX]


def overrides(version: str) -> list[str]:
    return [*OVERRIDES.get(version, {}), *(f'{name} ; sys_platform == "never"'
                                            for name in LEFT_OUT)]
