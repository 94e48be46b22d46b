"""ReproRequest + overrides -> Plan: the cells to run and the comparisons that answer the
report. Pure: no I/O. Everything the plan could not take from the report is listed in
`plan.defaults` with its reason; everything it refuses raises `PlanRejected`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter, ValidationError

from triagebot.engines import SUPPORTED, EngineAdapter, adapter, vllm_cpu
from triagebot.errors import PlanRejected
from triagebot.model import (
    Budget,
    Cell,
    CellWorkload,
    Comparison,
    ModelId,
    Plan,
    PlanPolicy,
    ReproRequest,
    Sampling,
    check_inert,
)
from triagebot.overrides import ReproOptions
from triagebot.plan import cpu as C
from triagebot.plan import defaults as D
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

__all__ = ["PlanRejected", "build_plan"]

# What each engine can vary; a report-derived axis outside this is dropped with a note,
# an axis the user asked for by name is refused.
ENGINE_AXES = {
    "vllm": set(AXIS_ORDER),
    "sglang": {"spec", "graph"},
    "vllm-mlx": {"spec"},
    "transformers": {"spec", "graph"},
}
_AXIS_MODES = {"graph": {"eager", "graph"}, "encoder_graph": {"vit_eager", "vit_graph"},
               "cudagraph_mode": {"piecewise", "full", "full_and_piecewise",
                                  "full_decode_only"}, "variant": {"v1", "v2"}}
_SPEC_KEYS = {"method", "model", "num_speculative_tokens"}


def build_plan(
    request: ReproRequest,
    options: ReproOptions | None = None,
    budget: Budget | None = None,
    policy: PlanPolicy | None = None,
) -> Plan:
    options = options or ReproOptions()
    policy = policy or PlanPolicy()
    choices = D.Choices()
    engine_name = _engine(request, options, choices)
    engine = adapter(engine_name)
    reported_version = request.engine_version if request.engine == engine_name else None
    version = engine.resolve_version(options.version or reported_version)
    if version and not options.version and not reported_version:
        choices.default("engine_version", version, "the report names no version; the "
                        "newest release triagebot knows")
    _note_stand_in_version(engine_name, options.version or reported_version, version, choices)
    if request.symptom in _NOT_SPEED:
        choices.note(_NOT_SPEED[request.symptom])
    on_cpu = engine_name == "vllm" and options.gpu == C.RUNNER
    budget = _budget(budget or Budget(), options)
    if on_cpu:
        assert version is not None
        version = C.choose_release(version, _wants_spec(request, options),
                                   vllm_cpu.locked_releases(), choices)

    base = _base_fields(request, options, engine_name, version, choices, standin=on_cpu)
    base["_policy"] = policy
    if on_cpu:
        budget = C.budget(budget, base["workload"].kind == "serve", options.runs is not None,
                          options.warmups is not None)
    if on_cpu:
        _cpu_fields(request, options, base, choices)
    axes = _axes(request, options, engine_name, base, choices)
    if on_cpu:
        C.notes(choices, any(a.name == "graph" for a in axes))
    primary = min(range(len(axes)), key=lambda i: AXIS_ORDER.index(axes[i].name)) if axes else 0

    cells, comparisons = _matrix(engine, base, axes, primary)
    _check_cells(cells, budget)
    cells, comparisons, budget, estimate = _fit_time_limit(
        engine, base, axes, primary, cells, comparisons, budget, options, choices,
        estimator=C.estimate_seconds if on_cpu else engine.estimate_seconds)
    _note_remote_code(request, cells, choices)

    plan = Plan(
        engine=engine_name,
        engine_version=version,
        gpu_kind=_gpu_kind(request, options, engine_name, choices),
        question=_question(request, axes, primary, base, engine_name, version),
        cells=cells,
        comparisons=comparisons,
        budget=budget,
        policy=policy,
        estimated_seconds=round(estimate, 1),
        defaults=choices.defaults,
        notes=choices.notes,
        stands_in_for=base.pop("_stands_in_for", None),
        source=request.source,
    )
    return plan.model_copy(update={"plan_hash": plan_hash(plan)})


def plan_hash(plan: Plan) -> str:
    body = plan.model_dump(mode="json", include={"cells", "comparisons", "budget", "engine",
                                                 "engine_version", "gpu_kind"})
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]


# --- engine, version, budget -------------------------------------------------------------


def _engine(request: ReproRequest, options: ReproOptions, choices: D.Choices) -> str:
    if options.engine:
        return options.engine
    if request.engine in SUPPORTED:
        return request.engine
    if request.engine:
        raise PlanRejected(f"the report is about {request.engine}, which triagebot cannot "
                           "run yet; pass engine= to reproduce its question on another "
                           "engine", field="engine", accepted=list(SUPPORTED))
    choices.default("engine", "vllm", "the report names no engine")
    return "vllm"


# Symptoms whose question is not "how fast": the plan is the same matrix, read differently.
_NOT_SPEED = {
    "crash": "the report is a crash, not a slowdown: the runs are a crash check, and each "
             "cell's status and log signatures (not its timings) answer it",
    "accuracy": "the report is about outputs, not speed: greedy cells are compared token "
                "for token (outputs digest) and timings are secondary",
}


def _note_stand_in_version(engine: str, asked: str | None, version: str | None,
                           choices: D.Choices) -> None:
    """Say when the plan runs a release other than the one named (an unknown patch, a
    dev build, a release older or newer than triagebot's table)."""
    if not asked or not version:
        return
    def plain(v: str) -> str:
        return v.strip().removeprefix("v").split("+", 1)[0]

    if plain(asked) != plain(version):
        choices.note(f"triagebot has no release table for {engine} {asked}; the plan runs "
                     f"{version}, the nearest release it knows, so the reporter's exact "
                     "build is not what runs")


def _budget(budget: Budget, options: ReproOptions) -> Budget:
    update: dict[str, int] = {}
    if options.runs is not None:
        if options.runs > budget.max_runs:
            raise PlanRejected(f"runs={options.runs} is more than the budget's "
                               f"{budget.max_runs} runs per cell", field="runs")
        update["runs"] = options.runs
    if options.warmups is not None:
        update["warmups"] = options.warmups
    return budget.model_copy(update=update)


def _check_cells(cells: list[Cell], budget: Budget) -> None:
    if len(cells) > budget.max_cells:
        raise PlanRejected(
            f"the plan needs {len(cells)} cells (including the A/A duplicate) but the "
            f"budget allows {budget.max_cells}; narrow it with spec=, k= or modes=",
            field="budget")


def _gpu_kind(request: ReproRequest, options: ReproOptions, engine: str,
              choices: D.Choices) -> str:
    if options.gpu:
        return options.gpu
    if engine == "transformers":
        return "cpu"
    if engine == "vllm-mlx":
        return "apple-silicon"
    kind = D.gpu_kind(request.gpu)
    if kind:
        return kind
    why = (f"no runner kind is known for {request.gpu!r}" if request.gpu
           else "the report names no GPU")
    choices.default("gpu", D.GPU_KIND, why)
    return D.GPU_KIND


# --- the fields every cell shares ---------------------------------------------------------


def _model_id(value: str, field: str) -> str:
    try:
        return TypeAdapter(ModelId).validate_python(value)
    except ValidationError:
        raise PlanRejected(f"{field} {value[:60]!r} is not a model id triagebot will run "
                           "(letters, digits, '.', '_', '-' and one '/', or an absolute path)",
                           field=field) from None


def _base_fields(request: ReproRequest, options: ReproOptions, engine: str,
                 version: str | None, choices: D.Choices, *,
                 standin: bool = False) -> dict[str, Any]:
    reported_model = request.models[0] if request.models else None
    draft = options.draft or (request.draft_models[0] if request.draft_models else None)
    if engine == "transformers" and not options.model:
        model: str | None = D.REFERENCE_MODEL
        draft = D.REFERENCE_DRAFT
        if reported_model:
            choices.note(f"the reference engine runs a tiny random Llama built from a "
                         f"config in place of {reported_model}; its numbers answer the "
                         "same question on a stand-in, not on the reported model")
    else:
        model = options.model or reported_model
    if model is None and not standin:
        raise PlanRejected("the report names no model; pass model=ORG/NAME", field="model")
    base: dict[str, Any] = {
        "engine": engine,
        "version": version,
        # A stand-in replaces the model on the cpu runner (_cpu_fields).
        "model": _model_id(model, "model") if model else None,
        "_draft": _model_id(draft, "draft") if draft else None,
        "_stands_in_for": reported_model if model != reported_model else None,
        "tensor_parallel_size": options.tp or request.tensor_parallel_size or 1,
        "data_parallel_size": request.data_parallel_size or 1,
        "expert_parallel": bool(request.expert_parallel),
        "sampling": _sampling(request, options, choices),
        "workload": _workload(request, options, engine, version, choices),
        "env": {},
    }
    if request.engine in (None, engine):
        # The reporter's environment belongs to the engine it ran; model_runner carries
        # the V2 switch, which the engine module writes for the target release.
        base["env"] = {k: v for k, v in request.env_vars.items()
                       if k != "VLLM_USE_V2_MODEL_RUNNER"}
    elif request.env_vars:
        choices.note(f"the report's {request.engine} environment variables "
                     f"({', '.join(sorted(request.env_vars))}) do not apply to {engine}")
    if request.model_runner and engine == "vllm":
        base["model_runner"] = request.model_runner
    if request.enforce_eager is not None:
        base["enforce_eager"] = request.enforce_eager
    if request.cudagraph_mode and engine == "vllm":
        base["cudagraph_mode"] = request.cudagraph_mode.upper()
    base["compilation_config"] = _inert(
        {k: v for k, v in (request.compilation_config or {}).items()
         if k not in ("cudagraph_mode", "cudagraph_mm_encoder")}, "compilation_config")
    base["_extra_spec"] = _inert(
        {k: v for k, v in (request.speculative_config or {}).items() if k not in _SPEC_KEYS},
        "speculative_config")
    if engine == "transformers":
        _reference_scale(base, choices)
    return base


def _wants_spec(request: ReproRequest, options: ReproOptions) -> bool:
    if options.spec:
        return any(c.method is not None for c in options.spec)
    return request.spec_method is not None or bool(options.k)


def _cpu_fields(request: ReproRequest, options: ReproOptions, base: dict[str, Any],
                choices: D.Choices) -> None:
    """Stand-in models, a CPU-sized workload and what a GPU run would have set, for
    vLLM's CPU build."""
    reported = request.models[0] if request.models else None
    if options.model:
        raise PlanRejected("the cpu runner runs stand-in models built locally; model= "
                           "cannot name another", field="model")
    target, draft, family = C.standin_models(reported, request.spec_method, choices)
    base["model"] = target
    base["_draft"] = target if options.draft == "target" else draft
    base["_stands_in_for"] = reported
    base["_cpu"] = family
    base["workload"], base["sampling"] = C.scale(base["workload"], base["sampling"],
                                                 choices)
    dropped = {
        "tensor_parallel_size": base["tensor_parallel_size"] > 1,
        "data_parallel_size": base["data_parallel_size"] > 1,
        "expert_parallel": base["expert_parallel"],
        "model_runner": "model_runner" in base,
        "cudagraph_mode": "cudagraph_mode" in base,
        "compilation_config": bool(base["compilation_config"]),
        "speculative_config extras": bool(base["_extra_spec"]),
        "env": bool(base["env"]),
    }
    for field, was_set in dropped.items():
        if was_set:
            choices.note(f"the report's {field} is not used on the cpu runner: "
                         f"{C.WHY_NOT.get(field, 'it describes a GPU run')}")
    if options.tp and options.tp > 1:
        raise PlanRejected("the cpu runner runs one process: tp>1 needs a GPU runner",
                           field="tp", accepted=["1"])
    base.update(tensor_parallel_size=1, data_parallel_size=1, expert_parallel=False,
                compilation_config={}, _extra_spec={}, env={})
    base.pop("model_runner", None)
    base.pop("cudagraph_mode", None)


def _note_remote_code(request: ReproRequest, cells: list[Cell], choices: D.Choices) -> None:
    """Say which models run their own code, and how to allow it where the report used it."""
    asked = any(arm.settings.get("trust_remote_code") for arm in request.arms)
    for model in dict.fromkeys(c.model for c in cells):
        if any(c.trust_remote_code for c in cells if c.model == model):
            choices.note(f"trust_remote_code is on for {model}: it is on the allowlist")
        elif asked:
            choices.note(f"the report ran with trust_remote_code; it stays off for {model}, "
                         "which is not on the trust_remote_code allowlist")


def _inert(cfg: dict[str, Any], field: str) -> dict[str, Any]:
    try:
        out: dict[str, Any] = check_inert(cfg, field)
    except ValueError as exc:
        raise PlanRejected(f"the report's {exc}", field=field) from None
    return out


def _sampling(request: ReproRequest, options: ReproOptions, choices: D.Choices) -> Sampling:
    temperature = options.temperature if options.temperature is not None else \
        request.temperature
    if temperature is None:
        temperature = D.TEMPERATURE[0]
        choices.default("temperature", temperature, D.TEMPERATURE[1])
    max_tokens = options.max_tokens or request.max_tokens or request.workload.output_len
    if max_tokens is None:
        max_tokens = D.MAX_TOKENS[0]
        choices.default("max_tokens", max_tokens, D.MAX_TOKENS[1])
    ignore_eos = request.workload.ignore_eos
    if ignore_eos is None:
        ignore_eos = D.IGNORE_EOS[0]
        choices.default("ignore_eos", ignore_eos, D.IGNORE_EOS[1])
    return Sampling(temperature=temperature, top_p=request.top_p or 1.0,
                    max_tokens=max_tokens, ignore_eos=ignore_eos)


def _workload(request: ReproRequest, options: ReproOptions, engine: str,
              version: str | None, choices: D.Choices) -> CellWorkload:
    offered = adapter(engine).TEMPLATES
    kind = options.workload or _reported_kind(request)
    if kind is None:
        kind = "offline" if "offline" in offered else next(iter(offered))
        choices.default("workload", kind, "the report does not say how it ran")
    if kind == "mm_processor" and engine == "vllm" and version:
        from triagebot.engines import vllm_catalog

        if not vllm_catalog.has_mm_processor_bench(version):
            choices.note(f"vLLM {version} has no `vllm bench mm-processor`; the encoder "
                         "is measured through the offline API instead")
            kind = "offline"
    if kind not in offered:
        if options.workload:
            raise PlanRejected(f"{engine} has no {kind} workload", field="workload",
                               accepted=list(offered))
        fallback = "offline" if "offline" in offered else next(iter(offered))
        choices.note(f"{engine} cannot run the report's {kind} workload; using {fallback}")
        kind = fallback
    dataset = request.workload.dataset
    if dataset and dataset not in ("random", "random-mm"):
        choices.note(f"the report ran dataset {dataset}; the plan sends built-in prompts, "
                     "so acceptance can differ from the reporter's")
    modality = request.modality or "text"
    if engine == "transformers" and modality != "text":
        choices.note(f"the reference engine runs text only; the report's {modality} "
                     "inputs are not reproduced")
        modality = "text"
    num_prompts = options.prompts or request.workload.num_prompts
    if num_prompts is None:
        num_prompts = D.NUM_PROMPTS[kind]
        choices.default("num_prompts", num_prompts, D.NUM_PROMPTS_WHY[kind])
    input_len = request.workload.input_len
    if input_len is None:
        input_len = D.INPUT_LEN[kind]
        choices.default("input_len", input_len, "the report does not give prompt lengths")
    concurrency = options.concurrency or request.concurrency
    if concurrency is None and kind == "serve":
        concurrency = D.SERVE_CONCURRENCY
        choices.default("concurrency", concurrency, "the report does not give a "
                        "concurrency for its server")
    return CellWorkload(
        kind=kind,
        api=request.workload.api or "generate",
        dataset="random-mm" if modality != "text" else "random",
        num_prompts=num_prompts,
        input_len=input_len,
        concurrency=concurrency,
        modality=modality,
        images_per_prompt=request.workload.image_inputs or (1 if modality == "image" else 0),
        videos_per_prompt=request.workload.video_inputs or (1 if modality == "video" else 0),
    )


def _reported_kind(request: ReproRequest) -> str | None:
    kind = request.workload.kind
    return "offline" if kind in ("latency", "throughput") else kind


def _reference_scale(base: dict[str, Any], choices: D.Choices) -> None:
    """Shrink the workload to what the tiny reference model needs, and say so."""
    caps = D.REFERENCE_CAPS
    w: CellWorkload = base["workload"]
    s: Sampling = base["sampling"]
    # Every run generates for the same few prompts: enough tokens per run to average out
    # a CPU's jitter, few enough that a plan takes minutes.
    update_w: dict[str, object] = {"num_prompts": caps["num_prompts"]}
    if w.input_len > caps["input_len"]:
        update_w["input_len"] = caps["input_len"]
    if w.api == "chat":
        update_w["api"] = "generate"
        choices.note("the reference engine feeds token ids, not chat messages")
    if update_w:
        base["workload"] = w.model_copy(update=update_w)
    if s.max_tokens > caps["max_tokens"]:
        base["sampling"] = s.model_copy(update={"max_tokens": caps["max_tokens"]})
    choices.note(f"the reference engine runs {caps['num_prompts']} prompts per run, of at "
                 f"most {caps['input_len']} tokens, and at most {caps['max_tokens']} new "
                 "tokens, so the whole plan runs in minutes on a CPU")


# --- axes and cells ------------------------------------------------------------------------


def _axes(request: ReproRequest, options: ReproOptions, engine: str, base: dict[str, Any],
          choices: D.Choices) -> list[Axis]:
    spec = spec_levels(request, options, base["_draft"], choices)
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
    on_cpu = "_cpu" in base
    can = C.AXES if on_cpu else ENGINE_AXES[engine]
    where = f"{engine} on the cpu runner" if on_cpu else engine
    for axis in found:
        if axis.name in can:
            kept.append(axis)
        elif asked & _AXIS_MODES.get(axis.name, set()):
            raise PlanRejected(f"{where} cannot vary {axis.name}"
                               + (f": {C.WHY_NOT[axis.name]}" if on_cpu else ""),
                               field="modes", accepted=sorted(can))
        else:
            why = f" ({C.WHY_NOT[axis.name]})" if on_cpu else ""
            choices.note(f"the report compares {axis.name} "
                         f"({', '.join(lv.name for lv in axis.levels)}), which {where} "
                         f"cannot vary{why}; that part of the question is not reproduced")
    if on_cpu and found and not kept:
        dropped = "; ".join(f"{a.name}: {C.WHY_NOT[a.name]}" for a in found)
        raise PlanRejected(f"the cpu runner cannot answer this report's question ({dropped})",
                           field="runner", accepted=sorted(can))
    if "graph" not in {a.name for a in kept} and asked & {"eager", "graph"}:
        base["enforce_eager"] = "eager" in asked  # one graph mode asked for by name
    if "graph" not in {a.name for a in kept} and "enforce_eager" not in base:
        base["enforce_eager"] = False
        if engine != "vllm-mlx":
            choices.default("enforce_eager", False, "graphs on, the engine's default")
    kept.sort(key=lambda a: AXIS_ORDER.index(a.name))
    return kept


def _matrix(engine: EngineAdapter, base: dict[str, Any], axes: list[Axis],
            primary: int) -> tuple[list[Cell], list[Comparison]]:
    """Every combination of the axes' levels, plus an A/A duplicate of the focus cell."""
    cells: list[Cell] = []
    grid: dict[tuple[str, ...], str] = {}
    for combo in itertools.product(*(a.levels for a in axes)):
        cell = _cell(engine, base, list(zip(axes, combo, strict=True)), replica=0)
        cells.append(cell)
        grid[tuple(lv.name for lv in combo)] = cell.cell_id
    comparisons = build_comparisons(axes, grid, primary)
    focus = _focus_cell(axes, cells, grid)
    replica = _cell(engine, base, _levels_of(axes, focus), replica=1)
    cells.append(replica)
    comparisons.insert(0, noise_comparison(focus.cell_id, replica.cell_id, focus.label))
    return cells, comparisons


# The least a shrunk plan keeps: enough runs for a verdict, enough new tokens for decode
# to dominate a run, and (for a server) at least two requests per concurrent stream.
MIN_RUNS = 3
MIN_MAX_TOKENS = 128


def _fit_time_limit(engine: EngineAdapter, base: dict[str, Any], axes: list[Axis],
                    primary: int, cells: list[Cell], comparisons: list[Comparison],
                    budget: Budget, options: ReproOptions, choices: D.Choices,
                    estimator: Callable[[Cell, Budget], float],
                    ) -> tuple[list[Cell], list[Comparison], Budget, float]:
    """Shrink the workload until the plan fits the time limit, and say what was shrunk.

    Prompts go first (they multiply every run), then new tokens, then runs per cell,
    each halved in turn down to a floor; a value the maintainer set (prompts=,
    max_tokens=, runs=) is never touched. The prompt length is the reporter's question
    (long context is often the point) and is kept. Refused only when even the floors
    do not fit.
    """
    def estimate_of(cells: list[Cell], budget: Budget) -> float:
        return sum(estimator(c, budget) for c in cells)

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
        budget = shrunk
        cells, comparisons = _matrix(engine, base, axes, primary)
        estimate = estimate_of(cells, budget)
    end = (base["workload"].num_prompts, base["sampling"].max_tokens, budget.runs)
    if end != start:
        what = [f"{name} {new} instead of {old}" for name, old, new in
                zip(("prompts", "max_tokens", "runs per cell"), start, end, strict=True)
                if old != new]
        choices.note(f"shrunk to fit the {budget.time_limit_s / 60:.0f} min time limit "
                     f"(about {estimate / 60:.0f} min now): " + ", ".join(what)
                     + "; set prompts=, max_tokens= or runs= to choose otherwise")
    return cells, comparisons, budget, estimate


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
            fields["workload"] = w.model_copy(update=update)
        else:
            fields[key] = value


def _cell(engine: EngineAdapter, base: dict[str, Any], levels: list[tuple[Axis, Level]],
          replica: int) -> Cell:
    fields = {k: v for k, v in base.items() if not k.startswith("_")}
    for _, level in levels:
        _apply(fields, level)
    policy: PlanPolicy = base["_policy"]
    fields["trust_remote_code"] = policy.allows_remote_code(fields["model"],
                                                            fields.get("revision"))
    spec = fields.get("spec")
    if spec is not None and base["_extra_spec"]:
        fields["extra_speculative_config"] = base["_extra_spec"]
    label = " + ".join(level.name for _, level in levels) or "baseline"
    if replica:
        label += " (A/A)"
    fields.update(
        cell_id="c0000000000",
        label=label,
        template=engine.TEMPLATES[fields["workload"].kind],
        varies={axis.name: level.name for axis, level in levels},
        replica=replica,
    )
    on_cpu = "_cpu" in base
    if on_cpu and fields.get("spec") is not None:
        fields["spec"] = C.spec_standin(fields["spec"], base["_cpu"])
    try:
        cell = Cell(**fields)
        cell = cell.model_copy(update={"engine_args": engine.engine_args(cell),
                                       "env": engine.engine_env(cell)})
        if on_cpu:
            cell = C.finish_cell(cell)
        cell = Cell.model_validate(cell.model_dump())
    except ValidationError as exc:
        raise PlanRejected(f"cell {label!r}: {_first_error(exc)}", field="cell") from None
    return cell.model_copy(update={"cell_id": _cell_id(cell)})


def _cell_id(cell: Cell) -> str:
    body = cell.model_dump(mode="json", exclude={"cell_id", "label", "varies"})
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


def _question(request: ReproRequest, axes: list[Axis], primary: int, base: dict[str, Any],
              engine: str, version: str | None) -> str:
    model = base["model"]
    if base.get("_stands_in_for"):
        model = f"{model} (standing in for {base['_stands_in_for']})"
    where = f"{engine} {version}" if version else engine
    spec = base.get("spec")
    if spec is not None:
        where += f" with {spec.method} k={spec.num_speculative_tokens}"
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
