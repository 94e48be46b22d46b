"""ReproRequest + overrides -> Plan: the cells to run and the comparisons that answer the
report. Pure: no I/O. Everything the plan could not take from the report is listed in
`plan.defaults` with its reason; everything it refuses raises `PlanRejected`.

`base_fields` decides what every cell shares, `cells` the axes and the cells; `build_plan`
below runs them in order and adds the comparisons.
"""

from __future__ import annotations

import hashlib
import json

from triagebot.engines import adapter, vllm_cpu, vllm_mlx_cpu
from triagebot.errors import PlanRejected
from triagebot.model import Budget, Plan, PlanPolicy, ReproRequest
from triagebot.overrides import ReproOptions
from triagebot.plan import cpu as C
from triagebot.plan import defaults as D
from triagebot.plan import mlx_cpu as M
from triagebot.plan.axes import AXIS_ORDER
from triagebot.plan.base_fields import (
    NOT_SPEED,
    base_fields_for,
    budget_with_options,
    check_cells,
    choose_engine,
    choose_gpu_kind,
    cpu_fields,
    multimodal_on_cpu,
    note_remote_code,
    note_stand_in_version,
    wants_spec,
)
from triagebot.plan.cells import (
    build_matrix,
    fit_time_limit,
    plan_axes,
    plan_question,
    stable_dump,
)
from triagebot.plan.mlx_mllm import about_mllm, mllm_workload

__all__ = ["PlanRejected", "build_plan", "plan_hash"]


def build_plan(
    request: ReproRequest,
    options: ReproOptions | None = None,
    budget: Budget | None = None,
    policy: PlanPolicy | None = None,
    *,
    exact_version: bool = False,
) -> Plan:
    """`exact_version`: run the asked release as it is, even where the cpu runner would
    pick a nearer one that can (a bisect step must measure the point it names)."""
    options = options or ReproOptions()
    policy = policy or PlanPolicy()
    choices = D.Choices()
    engine_name = choose_engine(request, options, choices)
    if options.gpu == C.RUNNER:
        C.refuse_engine(engine_name)
    engine = adapter(engine_name)
    reported_version = request.engine_version if request.engine == engine_name else None
    version = engine.resolve_version(options.version or reported_version)
    if version and not options.version and not reported_version:
        choices.default("engine_version", version, "the report names no version; the "
                        "newest release triagebot knows")
    note_stand_in_version(engine_name, options.version or reported_version, version, choices)
    if request.symptom in NOT_SPEED:
        choices.note(NOT_SPEED[request.symptom])
    on_cpu = engine_name == "vllm" and options.gpu == C.RUNNER
    # vllm-mlx on MLX's CPU build (plan/mlx_cpu.py); `on_cpu` stays vLLM's.
    mlx_cpu = engine_name == "vllm-mlx" and options.gpu == C.RUNNER
    budget = budget_with_options(budget or Budget(), options)
    multimodal = on_cpu and multimodal_on_cpu(request, options)
    if on_cpu and not exact_version:
        assert version is not None
        version = C.choose_release(
            version, wants_spec(request, options),
            vllm_cpu.mm_releases() if multimodal else vllm_cpu.locked_releases(), choices,
            multimodal=multimodal)
    if mlx_cpu and not exact_version:
        assert version is not None
        version = M.choose_release(version, vllm_mlx_cpu.locked_releases(), choices)

    base, context = base_fields_for(request, options, engine_name, version, choices,
                                    policy=policy, standin=on_cpu or mlx_cpu)
    if mlx_cpu:
        M.cpu_fields(request, options, base, context, choices)
        budget = M.budget(budget, options.runs is not None, options.warmups is not None)
    elif engine_name == "vllm-mlx" and about_mllm(request):
        base["workload"] = mllm_workload(base["workload"], request, choices)
    if on_cpu:
        budget = C.budget(budget, base["workload"].kind == "serve", options.runs is not None,
                          options.warmups is not None, multimodal=multimodal)
    if on_cpu:
        cpu_fields(request, options, base, context, choices)
        base["sampling"] = C.sampling(base["sampling"], options.temperature,
                                      wants_spec(request, options), version or "", choices)
    axes = plan_axes(request, options, engine_name, base, context, choices)
    if on_cpu:
        C.notes(choices, any(a.name == "graph" for a in axes), budget.max_runs,
                multimodal=multimodal)
    primary = min(range(len(axes)), key=lambda i: AXIS_ORDER.index(axes[i].name)) if axes else 0

    cells, comparisons = build_matrix(engine, base, context, axes, primary)
    check_cells(cells, budget)
    cells, comparisons, budget, estimate = fit_time_limit(
        engine, base, context, axes, primary, cells, comparisons, budget, options, choices,
        estimator=(C.estimate_seconds if on_cpu else M.estimate_seconds if mlx_cpu
                   else engine.estimate_seconds))
    note_remote_code(request, cells, choices)

    plan = Plan(
        engine=engine_name,
        engine_version=version,
        gpu_kind=choose_gpu_kind(request, options, engine_name, choices),
        question=plan_question(request, axes, primary, base, context, engine_name, version),
        cells=cells,
        comparisons=comparisons,
        budget=budget,
        policy=policy,
        estimated_seconds=round(estimate, 1),
        defaults=choices.defaults,
        notes=choices.notes,
        not_compared=choices.not_compared,
        stands_in_for=context.stands_in_for,
        source=request.source,
    )
    return plan.model_copy(update={"plan_hash": plan_hash(plan)})


def plan_hash(plan: Plan) -> str:
    body = plan.model_dump(mode="json", include={"cells", "comparisons", "budget", "engine",
                                                 "engine_version", "gpu_kind"})
    body["cells"] = [stable_dump(c) for c in body["cells"]]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
