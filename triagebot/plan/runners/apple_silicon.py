"""Apple silicon: vllm-mlx on a Mac, the reported model on MLX's Metal backend. Where the
report is about vllm-mlx's multimodal (MLLM) path, the workload takes that path."""

from __future__ import annotations

from triagebot.plan.mlx_mllm import about_mllm, mllm_workload
from triagebot.plan.runner import PlanDraft, RunnerProfile
from triagebot.plan.runners.vllm_mlx_cpu import ENGINE, RUNNER


class AppleSiliconProfile(RunnerProfile):
    kind = "apple-silicon"

    def matches(self, engine: str, gpu: str | None) -> bool:
        return engine == ENGINE and gpu != RUNNER

    def adjust(self, draft: PlanDraft) -> None:
        if about_mllm(draft.request):
            draft.base["workload"] = mllm_workload(draft.base["workload"], draft.request,
                                                   draft.choices)


PROFILE = AppleSiliconProfile()
