"""vllm-mlx on the `cpu` runner: MLX's Linux CPU build serving a stand-in with one MTP
layer (what it answers and cannot: `triagebot/plan/mlx_cpu.py`)."""

from __future__ import annotations

from triagebot.engines import EngineAdapter, vllm_mlx_cpu
from triagebot.plan import mlx_cpu
from triagebot.plan.cpu import RUNNER
from triagebot.plan.runner import PlanDraft, RunnerProfile
from triagebot.plan_model import Budget, Cell

ENGINE = "vllm-mlx"

__all__ = ["ENGINE", "PROFILE", "RUNNER"]


class VllmMlxCpuProfile(RunnerProfile):
    kind = "vllm-mlx-cpu"
    standin = True

    def matches(self, engine: str, gpu: str | None) -> bool:
        return engine == ENGINE and gpu == RUNNER

    def choose_release(self, draft: PlanDraft) -> str | None:
        assert draft.version is not None
        return mlx_cpu.choose_release(draft.version, vllm_mlx_cpu.locked_releases(),
                                      draft.choices)

    def adjust(self, draft: PlanDraft) -> None:
        options = draft.options
        mlx_cpu.cpu_fields(draft.request, options, draft.base, draft.context, draft.choices)
        draft.budget = mlx_cpu.budget(draft.budget, options.runs is not None,
                                      options.warmups is not None)

    def estimate_seconds(self, engine: EngineAdapter, cell: Cell, budget: Budget) -> float:
        return mlx_cpu.estimate_seconds(cell, budget)


PROFILE = VllmMlxCpuProfile()
