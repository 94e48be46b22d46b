"""Which bisect ranges a multimodal report on the cpu runner can walk.

Such a report runs in a release's multimodal environment (its lock plus what vLLM's vision
models import), which exists only where a multimodal lock does: one committed, or one in
the cache's `locks/`. A step at a release without one could only fail, and a range whose
inner releases fail every step ends in skips, not in an answer; so the whole bisect is
refused before anything runs, naming the releases it could walk. Nightlies and commits
have no multimodal lock at all, so such a bisect has no level below releases.
"""

from __future__ import annotations

from pathlib import Path

from triagebot.bisect.ranges import BisectError, BisectRange
from triagebot.engines import vllm_cpu as locks
from triagebot.plan_model import Plan
from triagebot.run import vllm_cpu

MM = locks.MM
_SHOWN = 8


def needs_mm_env(plan: Plan) -> bool:
    """Whether `plan`'s steps run in the multimodal environment of their release."""
    return vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind) and vllm_cpu.is_multimodal(plan)


def has_mm_lock(version: str, cache_dir: Path) -> bool:
    name = locks.lock_path(version, locks.MM).name
    return (locks.locks_dir() / name).exists() or (vllm_cpu.cache_locks(cache_dir)
                                                   / name).exists()


def check_range(plan: Plan, rng: BisectRange, cache_dir: Path) -> None:
    """A BisectError, before any step, where a multimodal cpu plan's range holds a point
    without a multimodal lock (module docstring)."""
    if not needs_mm_env(plan):
        return
    have = ", ".join(locks.mm_releases()) or "none"
    if rng.level != "release":
        raise BisectError(
            f"this report runs in vLLM's multimodal CPU environment, which is locked only "
            f"for releases (multimodal locks: {have}); a {rng.level} range cannot be "
            "bisected: give good= and bad= as releases that have one")
    missing = [p for p in rng.points if not has_mm_lock(p, cache_dir)]
    if not missing:
        return
    shown = ", ".join(missing[:_SHOWN]) + (f" and {len(missing) - _SHOWN} more"
                                           if len(missing) > _SHOWN else "")
    raise BisectError(
        f"this report runs in vLLM's multimodal CPU environment, and {len(missing)} of "
        f"the {len(rng.points)} releases from {rng.points[0]} to {rng.points[-1]} have no "
        f"multimodal lock ({shown}), so their steps could only fail. Releases with a "
        f"multimodal lock: {have}. Bisect between those, or write the missing ones first "
        "(`triagebot runner lock cpu --version X --mm`)")
