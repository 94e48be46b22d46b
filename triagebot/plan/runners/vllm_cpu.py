"""vLLM on the `cpu` runner: vLLM's CPU build running stand-in models built locally
(the choices themselves, and what they answer and cannot: `triagebot/plan/cpu.py`)."""

from __future__ import annotations

from typing import Any

from triagebot.engines import EngineAdapter
from triagebot.engines import vllm_cpu as cpu_locks
from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan import cpu
from triagebot.plan.axes import Axis
from triagebot.plan.base_fields import is_multimodal, wants_spec
from triagebot.plan.context import PlanContext
from triagebot.plan.runner import PlanDraft, RunnerProfile
from triagebot.plan_model import Budget, Cell
from triagebot.request_model import ReproRequest


def vision_standin_wanted(request: ReproRequest, options: ReproOptions) -> bool:
    """Whether the cpu runner answers with the vision-language stand-in: a multimodal
    report that does not speculate (that stand-in has no draft)."""
    return is_multimodal(request, options) and not wants_spec(request, options)


class VllmCpuProfile(RunnerProfile):
    kind = "vllm-cpu"
    standin = True

    def matches(self, engine: str, gpu: str | None) -> bool:
        # The engines it refuses are its own to refuse, with the reason.
        return gpu == cpu.RUNNER and (engine == "vllm" or engine in cpu.ENGINES_NOT_HERE)

    def check_engine(self, engine: str) -> None:
        cpu.refuse_engine(engine)

    def choose_release(self, draft: PlanDraft) -> str | None:
        assert draft.version is not None
        vision = vision_standin_wanted(draft.request, draft.options)
        return cpu.choose_release(
            draft.version, wants_spec(draft.request, draft.options),
            cpu_locks.mm_releases() if vision else cpu_locks.locked_releases(),
            draft.choices, multimodal=vision)

    def adjust(self, draft: PlanDraft) -> None:
        request, options, base = draft.request, draft.options, draft.base
        draft.budget = cpu.budget(draft.budget, base["workload"].kind == "serve",
                                  options.runs is not None, options.warmups is not None,
                                  multimodal=vision_standin_wanted(request, options))
        _standin_fields(draft)
        base["sampling"] = cpu.sampling(base["sampling"], options.temperature,
                                        wants_spec(request, options), draft.version or "",
                                        draft.choices)

    def axes(self, engine: str) -> set[str]:
        return cpu.AXES

    def where(self, engine: str) -> str:
        return f"{engine} on the cpu runner"

    def why_not(self, axis: Axis, *, short: bool = False) -> str | None:
        def cut(text: str) -> str:
            # Each reason reads "claim: evidence"; a headline keeps the claim.
            return text.split(": ", 1)[0] if short else text

        why = cut(cpu.why_not(axis.name, [level.fields for level in axis.levels]))
        if {"strict", "probabilistic"} <= {lv.fields.get("rejection_sample_method")
                                           for lv in axis.levels}:
            # At temperature 0 both verify by the target's argmax: only sampling tells
            # them apart.
            why += ("; strict and probabilistic rejection sampling differ only when "
                    f"sampling, and {cut(cpu.RANDOM_SAMPLING_CAUSE)}")
        return why

    def nothing_left(self, found: list[Axis], draft: PlanDraft) -> None:
        dropped = "; ".join(f"{a.name}: {self.why_not(a)}" for a in found)
        raise PlanRejected(f"the cpu runner cannot answer this report's question ({dropped})",
                           field="runner", accepted=sorted(cpu.AXES))

    def cell_fields(self, fields: dict[str, Any], context: PlanContext) -> None:
        if context.cpu_family is not None and fields.get("spec") is not None:
            fields["spec"] = cpu.spec_standin(fields["spec"], context.cpu_family)

    def finish_cell(self, cell: Cell) -> Cell:
        return cpu.finish_cell(cell)

    def notes(self, draft: PlanDraft, axes: list[Axis]) -> None:
        cpu.notes(draft.choices, any(a.name == "graph" for a in axes), draft.budget.max_runs,
                  multimodal=vision_standin_wanted(draft.request, draft.options))

    def estimate_seconds(self, engine: EngineAdapter, cell: Cell, budget: Budget) -> float:
        return cpu.estimate_seconds(cell, budget)


PROFILE = VllmCpuProfile()


def _standin_fields(draft: PlanDraft) -> None:
    """Stand-in models, a CPU-sized workload and what a GPU run would have set, for
    vLLM's CPU build."""
    request, options, base = draft.request, draft.options, draft.base
    context, choices = draft.context, draft.choices
    reported = request.models[0] if request.models else None
    if options.model:
        raise PlanRejected("the cpu runner runs stand-in models built locally; model= "
                           "cannot name another", field="model")
    vision = vision_standin_wanted(request, options)
    if vision:
        base["model"] = cpu.vision_standin(reported, choices)
        context.cpu_vision = True
        base["enforce_eager"] = True
        choices.note(cpu.MM_EAGER_WHY)
    else:
        # spec= may ask for a method the report did not use (mtp needs the MiMo stand-in).
        asked = [c.method for c in options.spec or () if c.method is not None]
        method = next((m for m in asked if m.endswith("mtp")), asked[0] if asked else None)
        target, draft_model, family = cpu.standin_models(
            reported, method or request.spec_method, choices)
        base["model"] = target
        context.draft = target if options.draft == "target" else draft_model
        context.cpu_family = family
    context.stands_in_for = reported
    base["workload"], base["sampling"] = cpu.scale(
        base["workload"], base["sampling"], choices, multimodal=vision,
        speculates=wants_spec(request, options), image_size=request.workload.image_size)
    dropped = {
        "tensor_parallel_size": base["tensor_parallel_size"] > 1,
        "data_parallel_size": base["data_parallel_size"] > 1,
        "expert_parallel": base["expert_parallel"],
        "model_runner": "model_runner" in base,
        "cudagraph_mode": "cudagraph_mode" in base,
        "compilation_config": bool(base["compilation_config"]),
        "speculative_config extras": bool(context.extra_spec),
        "env": bool(base["env"]),
    }
    for field, was_set in dropped.items():
        if was_set:
            choices.note(f"the report's {field} is not used on the cpu runner: "
                         f"{cpu.WHY_NOT.get(field, 'it describes a GPU run')}")
    if options.tp and options.tp > 1:
        raise PlanRejected("the cpu runner runs one process: tp>1 needs a GPU runner",
                           field="tp", accepted=["1"])
    base.update(tensor_parallel_size=1, data_parallel_size=1, expert_parallel=False,
                compilation_config={}, env={})
    context.extra_spec = {}
    base.pop("model_runner", None)
    base.pop("cudagraph_mode", None)
