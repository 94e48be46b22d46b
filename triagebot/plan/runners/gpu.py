"""The GPU runner: the reported model, engine and release as reported, on a GPU of the
reported kind. Its behaviour is `RunnerProfile`'s own; it claims what no other kind does."""

from __future__ import annotations

from triagebot.plan.runner import RunnerProfile


class GpuProfile(RunnerProfile):
    kind = "gpu"


PROFILE = GpuProfile()
