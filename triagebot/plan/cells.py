"""The plan's axes and cells: what the report compares becomes axes, their product becomes
cells (shrunk to fit the time limit), and the question names the cell the report is about."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from pydantic import ValidationError

from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan.axes import (
    AXIS_ORDER,
    DRAFTED_METHODS,
    Axis,
    Level,
    cudagraph_mode_axis,
    encoder_graph_axis,
    graph_axis,
    spec_levels,
    variant_axis,
)
from triagebot.plan.comparisons import build_comparisons, noise_comparison
from triagebot.plan.runner import PlanDraft
from triagebot.plan_model import Budget, Cell, CellWorkload, Comparison, NotCompared, Sampling
from triagebot.request_model import ReproRequest

_AXIS_MODES = {"graph": {"eager", "graph"}, "encoder_graph": {"vit_eager", "vit_graph"},
               "cudagraph_mode": {"piecewise", "full", "full_and_piecewise",
                                  "full_decode_only"}, "variant": {"v1", "v2"}}


# --- axes and cells ------------------------------------------------------------------------


def plan_axes(draft: PlanDraft) -> list[Axis]:
    """The axes the report compares that the runner can vary (the others noted, or
    refused where asked for by name), in AXIS_ORDER; `draft.base` takes a lone level."""
    request, options, engine = draft.request, draft.options, draft.engine_name
    base, context, choices, profile = draft.base, draft.context, draft.choices, draft.profile
    spec = spec_levels(request, options, context.draft, choices)
    _require_drafts(spec, request, engine)
    spec_on = any(lv.fields.get("spec") for lv in spec)
    found: list[Axis] = []
    if len(spec) > 1:
        found.append(Axis("spec", spec))
    else:
        base["spec"] = spec[0].fields["spec"]
    for axis in (variant_axis(request, options), cudagraph_mode_axis(request, options),
                 encoder_graph_axis(request, options), graph_axis(request, options, spec_on)):
        if axis is not None:
            found.append(axis)
    kept = []
    asked = set(options.modes or [])
    can = profile.axes(engine)
    where = profile.where(engine)
    answered = False
    for axis in found:
        if axis.name in can:
            kept.append(axis)
        elif axis.name == "encoder_graph" and context.cpu_vision and "vit_graph" not in asked:
            # The eager encoder runs on the vision-language stand-in; only the graph arm
            # needs a GPU.
            eager, graph = axis.levels
            base.update(eager.fields)
            context.base_label = eager.name
            answered = True
            choices.note(f"the report compares {axis.name} ({eager.name}, {graph.name}): "
                         f"the cpu runner measures the {eager.name} arm and refuses the "
                         f"{graph.name} arm: {profile.why_not(axis)}")
            choices.not_compared.append(NotCompared(
                axis=axis.name, levels=[lv.name for lv in axis.levels],
                why=profile.why_not(axis, short=True) or ""))
        elif asked & _AXIS_MODES.get(axis.name, set()):
            why = profile.why_not(axis)
            raise PlanRejected(f"{where} cannot vary {axis.name}" + (f": {why}" if why else ""),
                               field="modes", accepted=sorted(can))
        else:
            why = profile.why_not(axis)
            choices.note(f"the report compares {axis.name} "
                         f"({', '.join(lv.name for lv in axis.levels)}), which {where} "
                         f"cannot vary{f' ({why})' if why else ''}; that part of the "
                         "question is not reproduced")
            choices.not_compared.append(NotCompared(
                axis=axis.name, levels=[lv.name for lv in axis.levels],
                why=profile.why_not(axis, short=True) or f"{where} cannot vary {axis.name}"))
    if found and not kept and not answered:
        profile.nothing_left(found, draft)
    if "graph" not in {a.name for a in kept} and asked & {"eager", "graph"}:
        base["enforce_eager"] = "eager" in asked  # one graph mode asked for by name
    if "graph" not in {a.name for a in kept} and "enforce_eager" not in base:
        base["enforce_eager"] = False
        if engine != "vllm-mlx":
            choices.default("enforce_eager", False, "graphs on, the engine's default")
    kept.sort(key=lambda a: AXIS_ORDER.index(a.name))
    # An axis left out that would have come first was the report's question (the plan's
    # primary axis is the first in AXIS_ORDER): the comparisons kept are not the ones asked.
    first = min((AXIS_ORDER.index(a.name) for a in kept), default=len(AXIS_ORDER))
    for left in choices.not_compared:
        left.question = AXIS_ORDER.index(left.axis) < first
    return kept


def build_matrix(draft: PlanDraft, axes: list[Axis],
                 primary: int) -> tuple[list[Cell], list[Comparison]]:
    """Every combination of the axes' levels, plus an A/A duplicate of the focus cell."""
    cells: list[Cell] = []
    grid: dict[tuple[str, ...], str] = {}
    for combo in itertools.product(*(a.levels for a in axes)):
        cell = _cell(draft, list(zip(axes, combo, strict=True)), replica=0)
        cells.append(cell)
        grid[tuple(lv.name for lv in combo)] = cell.cell_id
    comparisons = build_comparisons(axes, grid, primary)
    focus = _focus_cell(axes, cells, grid)
    replica = _cell(draft, _levels_of(axes, focus), replica=1)
    cells.append(replica)
    comparisons.insert(0, noise_comparison(focus.cell_id, replica.cell_id, focus.label))
    return cells, comparisons


# The least a shrunk plan keeps: enough runs for a verdict, enough new tokens for decode
# to dominate a run, and (for a server) at least two requests per concurrent stream.
MIN_RUNS = 3
MIN_MAX_TOKENS = 128


def fit_time_limit(draft: PlanDraft, axes: list[Axis], primary: int, cells: list[Cell],
                   comparisons: list[Comparison]) -> tuple[list[Cell], list[Comparison], float]:
    """Shrink the workload until the plan fits the time limit, and say what was shrunk
    (`draft.base` and `draft.budget` updated); the cells, comparisons and estimate.

    Prompts go first (they multiply every run), then new tokens, then runs per cell,
    each halved in turn down to a floor; a value the maintainer set (prompts=,
    max_tokens=, runs=) is never touched. The prompt length is the reporter's question
    (long context is often the point) and is kept. Refused only when even the floors
    do not fit.
    """
    base, options, choices, budget = draft.base, draft.options, draft.choices, draft.budget

    def estimate_of(cells: list[Cell], budget: Budget) -> float:
        return sum(draft.profile.estimate_seconds(draft.engine, c, budget) for c in cells)

    estimate = estimate_of(cells, budget)
    start = (base["workload"].num_prompts, base["sampling"].max_tokens, budget.runs)
    while estimate > budget.time_limit_s:
        shrunk = _shrink_once(base, budget, options)
        if shrunk is None:
            raise PlanRejected(
                f"the plan needs about {estimate / 60:.0f} min ({len(cells)} cells x "
                f"{budget.warmups} warm-up + {budget.runs} runs, {base['workload'].num_prompts}"
                f" prompts, max_tokens={base['sampling'].max_tokens}) but the time limit is "
                f"{budget.time_limit_s / 60:.0f} min even with the workload shrunk; narrow "
                "spec=/modes=, or lower runs=, max_tokens= or prompts=", field="budget")
        budget = draft.budget = shrunk
        cells, comparisons = build_matrix(draft, axes, primary)
        estimate = estimate_of(cells, budget)
    end = (base["workload"].num_prompts, base["sampling"].max_tokens, budget.runs)
    if end != start:
        what = [f"{name} {new} instead of {old}" for name, old, new in
                zip(("prompts", "max_tokens", "runs per cell"), start, end, strict=True)
                if old != new]
        choices.note(f"shrunk to fit the {budget.time_limit_s / 60:.0f} min time limit "
                     f"(about {estimate / 60:.0f} min now): " + ", ".join(what)
                     + "; set prompts=, max_tokens= or runs= to choose otherwise")
    return cells, comparisons, estimate


def _shrink_once(base: dict[str, Any], budget: Budget, options: ReproOptions) -> Budget | None:
    """One halving of the first shrinkable part of the workload: the budget to use next
    (`base` is updated in place), or None when nothing is left to shrink."""
    w: CellWorkload = base["workload"]
    floor = 2 * w.concurrency if w.kind == "serve" and w.concurrency else 1
    if options.prompts is None and w.num_prompts > floor:
        base["workload"] = w.model_copy(update={"num_prompts": max(floor, w.num_prompts // 2)})
        return budget
    s: Sampling = base["sampling"]
    if options.max_tokens is None and s.max_tokens > MIN_MAX_TOKENS:
        base["sampling"] = s.model_copy(
            update={"max_tokens": max(MIN_MAX_TOKENS, s.max_tokens // 2)})
        return budget
    if options.runs is None and budget.runs > MIN_RUNS:
        return budget.model_copy(update={"runs": max(MIN_RUNS, budget.runs // 2)})
    return None


def _require_drafts(spec: list[Level], request: ReproRequest, engine: str) -> None:
    """A method that runs a separate draft checkpoint needs one named; refuse with what
    to add (and the checkpoint the thread mentions, if it mentions one)."""
    if engine == "transformers":
        return  # the reference engine brings its own tiny draft
    needs = [lv.fields["spec"].method for lv in spec if lv.fields.get("spec") is not None
             and lv.fields["spec"].method in DRAFTED_METHODS
             and lv.fields["spec"].draft_model is None]
    if not needs:
        return
    flag = ("--speculative-draft-model-path" if engine == "sglang"
            else "speculative_config's model")
    message = (f"{needs[0]} on {engine} runs a separate draft checkpoint ({flag}) and the "
               "report names none; add draft=ORG/NAME to the repro command")
    offered = request.suggestions.get("draft_models", [])
    if offered:
        message += (f"; the thread mentions {', '.join(offered)}, e.g. draft={offered[0]}")
    raise PlanRejected(message, field="draft")


def _apply(fields: dict[str, Any], level: Level) -> None:
    for key, value in level.fields.items():
        if key in ("rejection_sample_method", "draft_enforce_eager"):
            if fields.get("spec") is not None:
                fields["spec"] = fields["spec"].model_copy(update={key: value})
        elif key in ("modality", "images_per_prompt", "videos_per_prompt"):
            w: CellWorkload = fields["workload"]
            update = {key: value}
            if key == "modality":
                update["dataset"] = "random-mm" if value != "text" else "random"
                if value != "image":  # the report's image size is no video's or text's
                    update["image_size"] = None
            fields["workload"] = w.model_copy(update=update)
        else:
            fields[key] = value


def _cell(draft: PlanDraft, levels: list[tuple[Axis, Level]], replica: int) -> Cell:
    engine, context = draft.engine, draft.context
    fields = dict(draft.base)
    for _, level in levels:
        _apply(fields, level)
    fields["trust_remote_code"] = context.policy.allows_remote_code(fields["model"],
                                                            fields.get("revision"))
    spec = fields.get("spec")
    if spec is not None and context.extra_spec:
        fields["extra_speculative_config"] = context.extra_spec
    label = " + ".join(level.name for _, level in levels) or context.base_label or "baseline"
    if replica:
        label += " (A/A)"
    fields.update(
        cell_id="c0000000000",
        label=label,
        template=engine.TEMPLATES[fields["workload"].kind],
        varies={axis.name: level.name for axis, level in levels},
        replica=replica,
    )
    draft.profile.cell_fields(fields, context)
    try:
        cell = Cell(**fields)
        cell = cell.model_copy(update={"engine_args": engine.engine_args(cell),
                                       "env": engine.engine_env(cell)})
        cell = draft.profile.finish_cell(cell)
        cell = Cell.model_validate(cell.model_dump())
    except ValidationError as exc:
        raise PlanRejected(f"cell {label!r}: {_first_error(exc)}", field="cell") from None
    return cell.model_copy(update={"cell_id": cell_id(cell)})


def stable_dump(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell's dump without the fields added after cells were first hashed where they
    hold their default, so a cell that does not use one keeps its id."""
    workload = cell.get("workload")
    if isinstance(workload, dict) and workload.get("image_size") is None:
        cell = {**cell, "workload": {k: v for k, v in workload.items() if k != "image_size"}}
    spec = cell.get("spec")
    if isinstance(spec, dict) and spec.get("synthetic_acceptance_rates") is None:
        cell = {**cell, "spec": {k: v for k, v in spec.items()
                                 if k != "synthetic_acceptance_rates"}}
    return cell


def cell_id(cell: Cell) -> str:
    body = stable_dump(cell.model_dump(mode="json", exclude={"cell_id", "label", "varies"}))
    return "c" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}"


def _focus_cell(axes: list[Axis], cells: list[Cell], grid: dict[tuple[str, ...], str]) -> Cell:
    """The cell the report is about: spec on, graphs on, the reporter's first variant."""
    key = tuple((a.baseline if a.name == "variant" else a.treatment).name for a in axes)
    cell_id = grid.get(key, cells[0].cell_id)
    return next(c for c in cells if c.cell_id == cell_id)


def _levels_of(axes: list[Axis], cell: Cell) -> list[tuple[Axis, Level]]:
    return [(a, next(lv for lv in a.levels if lv.name == cell.varies[a.name])) for a in axes]


def plan_question(draft: PlanDraft, axes: list[Axis], primary: int) -> str:
    base, context, engine, version = draft.base, draft.context, draft.engine_name, draft.version
    model = base["model"]
    if context.stands_in_for:
        model = f"{model} (standing in for {context.stands_in_for})"
    where = f"{engine} {version}" if version else engine
    spec = base.get("spec")
    if spec is not None:
        where += f" with {spec.method} k={spec.num_speculative_tokens}"
    if not axes and context.cpu_vision and context.base_label:
        return (f"How long does the vision encoder of {model} take per request on {where} "
                f"({context.base_label}; the graph arm needs a GPU)?")
    if not axes:
        return f"How fast is {model} on {where}?"
    p = axes[primary]
    treated = ", ".join(lv.name for lv in p.levels[1:])
    rest = [a for i, a in enumerate(axes) if i != primary]
    under = ""
    if rest:
        under = " under " + "; ".join(" and ".join(lv.name for lv in a.levels) for a in rest)
    if p.name == "spec":
        return (f"Does speculative decoding ({treated}) make {model} faster on {where} than "
                f"no speculation{under}?")
    return f"How does {treated} compare with {p.baseline.name} for {model} on {where}{under}?"
