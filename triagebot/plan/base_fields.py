"""What every cell of a plan shares: the engine and version, the budget, the GPU kind, the
model and speculative settings, sampling and the workload, each default noted with why."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from triagebot.engines import SUPPORTED, adapter, vllm_catalog
from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan import defaults
from triagebot.plan.context import PlanContext
from triagebot.plan_model import (
    Budget,
    Cell,
    CellWorkload,
    ModelId,
    PlanPolicy,
    Sampling,
    check_inert,
)
from triagebot.request_model import ReproRequest

_SPEC_KEYS = {"method", "model", "num_speculative_tokens"}


# --- engine, version, budget -------------------------------------------------------------


def choose_engine(request: ReproRequest, options: ReproOptions, choices: defaults.Choices) -> str:
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
NOT_SPEED = {
    "crash": "the report is a crash, not a slowdown: the runs are a crash check, and each "
             "cell's status and log signatures (not its timings) answer it",
    "accuracy": "the report is about outputs, not speed: greedy cells are compared token "
                "for token (outputs digest) and timings are secondary",
}


def note_stand_in_version(engine: str, asked: str | None, version: str | None,
                          choices: defaults.Choices) -> None:
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


def budget_with_options(budget: Budget, options: ReproOptions) -> Budget:
    update: dict[str, int] = {}
    if options.runs is not None:
        if options.runs > budget.max_runs:
            raise PlanRejected(f"runs={options.runs} is more than the budget's "
                               f"{budget.max_runs} runs per cell", field="runs")
        update["runs"] = options.runs
    if options.warmups is not None:
        update["warmups"] = options.warmups
    return budget.model_copy(update=update)


def check_cells(cells: list[Cell], budget: Budget) -> None:
    if len(cells) > budget.max_cells:
        raise PlanRejected(
            f"the plan needs {len(cells)} cells (including the A/A duplicate) but the "
            f"budget allows {budget.max_cells}; narrow it with spec=, k= or modes=",
            field="budget")


def choose_gpu_kind(request: ReproRequest, options: ReproOptions, engine: str,
                    choices: defaults.Choices) -> str:
    if options.gpu:
        return options.gpu
    if engine == "transformers":
        return "cpu"
    if engine == "vllm-mlx":
        return "apple-silicon"
    kind = defaults.gpu_kind(request.gpu)
    if kind:
        return kind
    why = (f"no runner kind is known for {request.gpu!r}" if request.gpu
           else "the report names no GPU")
    choices.default("gpu", defaults.GPU_KIND, why)
    return defaults.GPU_KIND


# --- the fields every cell shares ---------------------------------------------------------


def _model_id(value: str, field: str) -> str:
    try:
        return TypeAdapter(ModelId).validate_python(value)
    except ValidationError:
        raise PlanRejected(f"{field} {value[:60]!r} is not a model id triagebot will run "
                           "(letters, digits, '.', '_', '-' and one '/', or an absolute path)",
                           field=field) from None


def base_fields_for(request: ReproRequest, options: ReproOptions, engine: str,
                    version: str | None, choices: defaults.Choices, *, policy: PlanPolicy,
                    standin: bool = False) -> tuple[dict[str, Any], PlanContext]:
    reported_model = request.models[0] if request.models else None
    draft = options.draft or (request.draft_models[0] if request.draft_models else None)
    if engine == "transformers" and not options.model:
        model: str | None = defaults.REFERENCE_MODEL
        draft = defaults.REFERENCE_DRAFT
        if reported_model:
            choices.note(f"the reference engine runs a tiny random Llama built from a "
                         f"config in place of {reported_model}; its numbers answer the "
                         "same question on a stand-in, not on the reported model")
    else:
        model = options.model or reported_model
    if model is None and not standin:
        raise PlanRejected("the report names no model; pass model=ORG/NAME", field="model")
    # Checked here, in the order the fields were always checked, so that the first error
    # a bad report meets stays the same.
    model_id = _model_id(model, "model") if model else None
    draft_id = _model_id(draft, "draft") if draft else None
    base: dict[str, Any] = {
        "engine": engine,
        "version": version,
        # A stand-in replaces the model on the cpu runner (cpu_fields).
        "model": model_id,
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
    context = PlanContext(
        policy=policy,
        draft=draft_id,
        extra_spec=_inert({k: v for k, v in (request.speculative_config or {}).items()
                           if k not in _SPEC_KEYS}, "speculative_config"),
        stands_in_for=reported_model if model != reported_model else None,
    )
    if engine == "transformers":
        _reference_scale(base, options, choices)
    return base, context


def wants_spec(request: ReproRequest, options: ReproOptions) -> bool:
    if options.spec:
        return any(c.method is not None for c in options.spec)
    return request.spec_method is not None or bool(options.num_speculative_tokens)


def is_multimodal(request: ReproRequest, options: ReproOptions) -> bool:
    """Whether the report's question is about images or videos: its inputs, its
    `vllm bench mm-processor` runs or its arms' per-prompt media limits."""
    if options.workload not in (None, "mm_processor"):
        return False
    arms = any(arm.settings.get("modality") in ("image", "video")
               or isinstance(arm.settings.get("mm_limits"), dict) for arm in request.arms)
    return (request.workload.kind == "mm_processor" or request.modality in ("image", "video")
            or options.workload == "mm_processor" or arms)


def note_remote_code(request: ReproRequest, cells: list[Cell], choices: defaults.Choices) -> None:
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


def _sampling(request: ReproRequest, options: ReproOptions, choices: defaults.Choices) -> Sampling:
    temperature = options.temperature if options.temperature is not None else \
        request.temperature
    if temperature is None:
        temperature = defaults.TEMPERATURE[0]
        choices.default("temperature", temperature, defaults.TEMPERATURE[1])
    max_tokens = options.max_tokens or request.max_tokens or request.workload.output_len
    if max_tokens is None:
        max_tokens = defaults.MAX_TOKENS[0]
        choices.default("max_tokens", max_tokens, defaults.MAX_TOKENS[1])
    ignore_eos = request.workload.ignore_eos
    if ignore_eos is None:
        ignore_eos = defaults.IGNORE_EOS[0]
        choices.default("ignore_eos", ignore_eos, defaults.IGNORE_EOS[1])
    return Sampling(temperature=temperature, top_p=request.top_p or 1.0,
                    max_tokens=max_tokens, ignore_eos=ignore_eos)


def _workload(request: ReproRequest, options: ReproOptions, engine: str,
              version: str | None, choices: defaults.Choices) -> CellWorkload:
    offered = adapter(engine).TEMPLATES
    kind = options.workload or _reported_kind(request)
    if kind is None:
        kind = "offline" if "offline" in offered else next(iter(offered))
        choices.default("workload", kind, "the report does not say how it ran")
    if (kind == "mm_processor" and engine == "vllm" and version
            and not vllm_catalog.has_mm_processor_bench(version)):
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
        num_prompts = defaults.NUM_PROMPTS[kind]
        choices.default("num_prompts", num_prompts, defaults.NUM_PROMPTS_WHY[kind])
    input_len = request.workload.input_len
    if input_len is None:
        input_len = defaults.INPUT_LEN[kind]
        choices.default("input_len", input_len, "the report does not give prompt lengths")
    concurrency = options.concurrency or request.concurrency
    if concurrency is None and kind == "serve":
        concurrency = defaults.SERVE_CONCURRENCY
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
        # The reporter's image size where it states one (arms set the modality later):
        # the encoder's work grows with it.
        image_size=request.workload.image_size,
    )


def _reported_kind(request: ReproRequest) -> str | None:
    kind = request.workload.kind
    return "offline" if kind in ("latency", "throughput") else kind


def _reference_scale(base: dict[str, Any], options: ReproOptions,
                     choices: defaults.Choices) -> None:
    """Shrink the workload to what the tiny reference model needs, and say so; a value the
    command set (prompts=, max_tokens=) is kept as asked."""
    caps = defaults.REFERENCE_CAPS
    w: CellWorkload = base["workload"]
    s: Sampling = base["sampling"]
    # Every run generates for the same few prompts: enough tokens per run to average out
    # a CPU's jitter, few enough that a plan takes minutes.
    update_w: dict[str, object] = (
        {} if options.prompts is not None else {"num_prompts": caps["num_prompts"]})
    if w.input_len > caps["input_len"]:
        update_w["input_len"] = caps["input_len"]
    if w.api == "chat":
        update_w["api"] = "generate"
        choices.note("the reference engine feeds token ids, not chat messages")
    if update_w:
        base["workload"] = w.model_copy(update=update_w)
    if s.max_tokens > caps["max_tokens"] and options.max_tokens is None:
        base["sampling"] = s.model_copy(update={"max_tokens": caps["max_tokens"]})
    prompts = w.num_prompts if options.prompts is not None else caps["num_prompts"]
    tokens = (f"{s.max_tokens} new tokens as asked" if options.max_tokens is not None
              else f"at most {caps['max_tokens']} new tokens")
    choices.note(f"the reference engine runs {prompts} prompts per run, of at most "
                 f"{caps['input_len']} tokens, and {tokens}, so the whole plan runs in "
                 "minutes on a CPU")
