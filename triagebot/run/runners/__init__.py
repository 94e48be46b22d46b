"""Every runner kind's run profile, found by the kind's name.

The kind of a plan is the plan side's (`triagebot.plan.runners.profile_for`); its run
side is `PROFILE` in the module of this package named after it (`vllm-cpu` ->
`vllm_cpu.py`), or the GPU runner's `RunProfile` where the kind has no module here. A
new kind is one module in `triagebot.plan.runners` and, where it runs differently, one
here.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache

from triagebot.plan.runners import profile_for
from triagebot.plan_model import Plan
from triagebot.run.runners.base import RunProfile


@cache
def profile_named(kind: str) -> RunProfile:
    module = f"{__name__}.{kind.replace('-', '_')}"
    if importlib.util.find_spec(module) is None:
        return RunProfile(kind)
    profile = getattr(importlib.import_module(module), "PROFILE", None)
    if not isinstance(profile, RunProfile):
        raise TypeError(f"{module} defines no PROFILE (a RunProfile)")
    return profile


def run_profile(plan: Plan) -> RunProfile:
    """The run side of the plan's runner kind."""
    return run_profile_for(plan.engine, plan.gpu_kind)


def run_profile_for(engine: str, gpu: str) -> RunProfile:
    """The run side of the kind that runs `engine` on runner `gpu`."""
    return profile_named(profile_for(engine, gpu).kind)
