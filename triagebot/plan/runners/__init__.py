"""Every runner kind's plan profile, one module each, found by name or by what a plan asks.

Each module here defines `PROFILE` (a `triagebot.plan.runner.RunnerProfile`): adding a
module adds a runner kind, and nothing else lists the kinds. `profile_for` picks the one
kind that claims an engine and a runner (`gpu=` or a plan's `gpu_kind`); where none does,
the GPU runner's.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from triagebot.plan.runner import RunnerProfile

# The kind where no other claims an engine and runner.
DEFAULT_KIND = "gpu"


@cache
def profiles() -> dict[str, RunnerProfile]:
    """Every kind's profile by kind name, in module order."""
    found: dict[str, RunnerProfile] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        profile = getattr(importlib.import_module(f"{__name__}.{module}"), "PROFILE", None)
        if not isinstance(profile, RunnerProfile):
            raise TypeError(f"{__name__}.{module} defines no PROFILE (a RunnerProfile)")
        found[profile.kind] = profile
    return found


def profile_named(kind: str) -> RunnerProfile:
    return profiles()[kind]


def profile_for(engine: str, gpu: str | None) -> RunnerProfile:
    """The profile of the kind that runs `engine` on runner `gpu` (None: not named)."""
    claimed = [p for p in profiles().values() if p.matches(engine, gpu)]
    if len(claimed) > 1:
        raise RuntimeError(f"runner kinds {[p.kind for p in claimed]} all claim {engine} "
                           f"on {gpu}; a kind's `matches` must leave the others' alone")
    return claimed[0] if claimed else profiles()[DEFAULT_KIND]
