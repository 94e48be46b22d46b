"""ReproRequest + overrides -> Plan: the cells to run and the comparisons that answer the
report. Pure: no I/O. Everything the plan could not take from the report is listed in
`plan.defaults` with its reason; everything it refuses raises `PlanRejected`.

`base_fields` decides what every cell shares, `cells` the axes and the cells; `build_plan`
below runs them in order and adds the comparisons.
"""

from __future__ import annotations

import hashlib
import json

from triagebot.engines import adapter
from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan.axes import AXIS_ORDER
from triagebot.plan.base_fields import (
    NOT_SPEED,
    base_fields_for,
    budget_with_options,
    check_cells,
    choose_engine,
    choose_gpu_kind,
    note_remote_code,
    note_stand_in_version,
)
from triagebot.plan.cells import (
    build_matrix,
    fit_time_limit,
    plan_axes,
    plan_question,
    stable_dump,
)
from triagebot.plan.defaults import Choices
from triagebot.plan.runner import PlanDraft
from triagebot.plan.runners import profile_for
from triagebot.plan_model import Budget, Plan, PlanPolicy
from triagebot.request_model import ReproRequest

__all__ = ["PlanRejected", "build_plan", "plan_hash"]


def build_plan(
    request: ReproRequest,
    options: ReproOptions | None = None,
    budget: Budget | None = None,
    policy: PlanPolicy | None = None,
    *,
    exact_version: bool = False,
) -> Plan:
    """`exact_version`: run the asked release as it is, even where the runner would pick
    a nearer one that can (a bisect step must measure the point it names).

    The steps are the same on every runner; where runner kinds differ, the runner's
    profile (`plan/runner.py`, one per kind in `plan/runners/`) decides."""
    options = options or ReproOptions()
    policy = policy or PlanPolicy()
    choices = Choices()
    engine_name = choose_engine(request, options, choices)
    profile = profile_for(engine_name, options.gpu)
    profile.check_engine(engine_name)
    engine = adapter(engine_name)
    reported_version = request.engine_version if request.engine == engine_name else None
    version = engine.resolve_version(options.version or reported_version)
    if version and not options.version and not reported_version:
        choices.default("engine_version", version, "the report names no version; the "
                        "newest release triagebot knows")
    note_stand_in_version(engine_name, options.version or reported_version, version, choices)
    if request.symptom in NOT_SPEED:
        choices.note(NOT_SPEED[request.symptom])
    draft = PlanDraft(request=request, options=options, engine_name=engine_name,
                      engine=engine, version=version, choices=choices,
                      budget=budget_with_options(budget or Budget(), options), profile=profile)
    if not exact_version:
        draft.version = profile.choose_release(draft)

    draft.base, draft.context = base_fields_for(request, options, engine_name, draft.version,
                                                choices, policy=policy,
                                                standin=profile.standin)
    profile.adjust(draft)
    axes = plan_axes(draft)
    profile.notes(draft, axes)
    primary = min(range(len(axes)), key=lambda i: AXIS_ORDER.index(axes[i].name)) if axes else 0

    cells, comparisons = build_matrix(draft, axes, primary)
    check_cells(cells, draft.budget)
    cells, comparisons, estimate = fit_time_limit(draft, axes, primary, cells, comparisons)
    note_remote_code(request, cells, choices)

    plan = Plan(
        engine=engine_name,
        engine_version=draft.version,
        gpu_kind=choose_gpu_kind(request, options, engine_name, choices),
        question=plan_question(draft, axes, primary),
        cells=cells,
        comparisons=comparisons,
        budget=draft.budget,
        policy=policy,
        estimated_seconds=round(estimate, 1),
        defaults=choices.defaults,
        notes=choices.notes,
        not_compared=choices.not_compared,
        stands_in_for=draft.context.stands_in_for,
        source=request.source,
    )
    return plan.model_copy(update={"plan_hash": plan_hash(plan)})


def plan_hash(plan: Plan) -> str:
    body = plan.model_dump(mode="json", include={"cells", "comparisons", "budget", "engine",
                                                 "engine_version", "gpu_kind"})
    body["cells"] = [stable_dump(c) for c in body["cells"]]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
