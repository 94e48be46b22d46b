"""vllm-mlx on MLX's CPU build on the `cpu` runner: a locked environment per release,
its stand-ins built and linked, a home and temp folder per run so that no prefix cache
carries over (`triagebot/run/vllm_mlx.py`)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from triagebot.run import vllm_mlx
from triagebot.run.runners.base import CellEnv, Preparing, RunProfile


class VllmMlxCpuRun(RunProfile):
    kind = "vllm-mlx-cpu"

    def prepare(self, job: Preparing) -> CellEnv:
        assert job.release is not None
        where = job.where
        env, variables = vllm_mlx.prepare(
            job.release, job.out, cache_dir=where.cache_dir, standins_dir=where.standins_dir,
            models={c.model for c in job.plan.cells}, log=job.log)
        return CellEnv(env, variables)

    def per_run_dirs(self) -> AbstractContextManager[dict[str, str]]:
        return vllm_mlx.per_run_dirs()


PROFILE = VllmMlxCpuRun()
