"""vLLM: turn a Cell into `LLM(...)` kwargs, `vllm serve` / `vllm bench` argv and env for
one release, using the per-release key table in `vllm_catalog`.

Everything here runs at plan time. A key, value or feature the target release cannot take
raises `PlanRejected` with the catalog's message (which names it and lists what the
release accepts), so a plan never holds a config its release would crash on.

Flag facts checked against the release wheels 0.11.0, 0.17.1, 0.20.2 and 0.33.0:
- `vllm serve` takes every EngineArgs field as `--field-name`; bool fields are
  BooleanOptionalAction (`--x` / `--no-x`) except `--disable-log-stats` (store_true);
  dict fields take JSON text.
- `vllm bench serve` has `--temperature`, `--top-p`, `--seed`, `--ignore-eos`,
  `--percentile-metrics`, `--save-result --result-dir --result-filename` in all four;
  its default backend is `openai` (pass it anyway: 0.10.0 defaulted to `vllm`). From
  0.11.2 it forces ignore_eos for the random datasets; from 0.15.1 it no longer sends
  temperature 0 unless told. Spec-decode keys appear in the saved JSON from 0.14.1.
- `vllm bench mm-processor` (catalog: `has_mm_processor_bench`) takes EngineArgs flags
  (`--model`), the random-mm dataset flags and `--output-json`; it always samples
  greedily and its JSON has no duration or token counts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

from triagebot.engines import vllm_catalog as cat
from triagebot.engines import vllm_translate as tr
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell

NAME = "vllm"
TEMPLATES = {
    "offline": "vllm/offline.py.j2",
    "serve": "vllm/serve.py.j2",
    "mm_processor": "vllm/mm_processor.py.j2",
}

# First releases where a feature works. Features the catalog's key lists already cover
# (rejection_sample_method, encoder graphs, the V2 runner's env var, the mm-processor
# bench) are judged by the catalog instead.
DRAFT_MODEL_SINCE = (0, 15, 1)  # NotImplementedError before (engines.md §7)
BENCH_SPEC_KEYS_SINCE = (0, 14, 1)  # spec_decode_* in `vllm bench serve` JSON
BENCH_FORCES_IGNORE_EOS_SINCE = (0, 11, 2)  # random datasets always ignore EOS
BENCH_RANDOM_MM_VIDEO_SINCE = (0, 17, 1)  # 0.11.0 raises "Video sampling is WIP"

# Methods that cannot run without a draft checkpoint in `speculative_config.model`.
_NEEDS_DRAFT = {"eagle", "eagle3", "draft_model", "dflash", "medusa"}

# `store_true` flags: they have no `--no-` form, and False is their default.
_STORE_TRUE_FLAGS = {"disable_log_stats"}

RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
# Tells an offline script to profile one batch's step outside its runs
# (`repro_templates/vllm/step_profile.py.j2`); only the plan sets it.
PROFILE_ENV = "TRIAGEBOT_PROFILE_STEPS"

# Environment variables a cell may set besides the release's own VLLM_* names: CUDA
# device selection and debugging, NCCL and torch / inductor knobs. Anything else (loader
# paths, credentials, PYTHONPATH) is refused: issue text decides these values.
GENERIC_ENV_NAMES = frozenset({
    "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MODULE_LOADING", "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS",
    "TOKENIZERS_PARALLELISM", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
})
GENERIC_ENV_PREFIXES = ("NCCL_", "TORCH_", "TORCHINDUCTOR_", "TRITON_")
# VLLM_* names a release reads that a plan still may not set: credentials (an API key
# would lock out our own benchmark client), code or config loaded from a path, and
# switches that hide the logs the runner reads.
DENIED_VLLM_ENV = frozenset({
    "VLLM_API_KEY", "VLLM_PLUGINS", "VLLM_LOGGING_CONFIG_PATH", "VLLM_CONFIGURE_LOGGING",
    "VLLM_LOGGING_STREAM", "VLLM_TRACE_FUNCTION", "VLLM_USE_MODELSCOPE",
    "VLLM_USAGE_STATS_SERVER",
})

# Model ids whose HF model_type is unambiguous from the name, for releases that name
# the MTP method per model type (0.10.x). Checked in order on the lower-cased id.
_MODEL_TYPE_BY_ID: tuple[tuple[str, str], ...] = (
    (r"deepseek-(?:v3(?![.-]2)|r1)", "deepseek_v3"),
    (r"deepseek-v3[.-]2", "deepseek_v32"),
    (r"mimo-7b", "mimo"),
    (r"glm-4\.[5-7](?!v)", "glm4_moe"),
    (r"ernie-4\.5-\d+b-a\d+b", "ernie4_5_moe"),
    (r"qwen3-next", "qwen3_next"),
    (r"longcat-flash", "longcat_flash"),
)

# Synthetic media the serve and mm-processor benchmarks generate: one fixed size each so
# both arms of a comparison encode the same amount (H, W, frames).
IMAGE_BUCKET = (512, 512, 1)
VIDEO_BUCKET = (480, 640, 16)

T = TypeVar("T")


# --- versions ------------------------------------------------------------------------------


def resolve_version(version: str | None) -> str:
    """The table release that stands for `version`; an unknown one gets the nearest
    known release (the plan says so), only a non-version is refused."""
    if version is None:
        return cat.releases()[-1]
    return _catalog(cat.nearest_release, version)


def _version(cell: Cell) -> str:
    return resolve_version(cell.version)


def _at_least(version: str, since: tuple[int, ...]) -> bool:
    return cat.version_key(version) >= since


def _rejected(exc: cat.ConfigRejected) -> PlanRejected:
    """The catalog's refusal, message unchanged (it already names the key and lists the
    accepted ones), as the error a plan raises."""
    err = PlanRejected(str(exc), field=f"{exc.section}.{exc.key}".replace(" ", "_"))
    err.accepted = list(exc.accepted)
    return err


def _catalog(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a catalog function; its refusals become PlanRejected."""
    try:
        return fn(*args, **kwargs)
    except cat.ConfigRejected as exc:
        raise _rejected(exc) from None
    except cat.UnknownRelease as exc:
        message = str(exc).split("; known: ")[0]
        raise PlanRejected(message, field="version", accepted=cat.releases()) from None


# --- engine arguments ----------------------------------------------------------------------


def engine_args(cell: Cell) -> dict[str, Any]:
    """`LLM(**args)` kwargs for the cell's release; the serve/bench flags derive from them."""
    version = _version(cell)
    _check_workload(cell, version)
    args: dict[str, Any] = {"model": cell.model}
    if cell.revision:
        args["revision"] = cell.revision
    args["tensor_parallel_size"] = cell.tensor_parallel_size
    if cell.data_parallel_size > 1:
        args["data_parallel_size"] = cell.data_parallel_size
    if cell.expert_parallel:
        args["enable_expert_parallel"] = True
    args["enforce_eager"] = cell.enforce_eager
    args["seed"] = cell.sampling.seed
    # LLM(...) forces disable_log_stats=True unless told, and get_metrics() asserts on it.
    args["disable_log_stats"] = False
    if cell.trust_remote_code:
        args["trust_remote_code"] = True
    spec = speculative_config(cell, version)
    if spec is not None:
        args["speculative_config"] = spec
    compilation = compilation_config(cell, version)
    if compilation:
        args["compilation_config"] = compilation
    if cell.mm_encoder_tp_mode is not None:
        args["mm_encoder_tp_mode"] = cell.mm_encoder_tp_mode
    limits = _mm_limits(cell)
    if limits:
        args["limit_mm_per_prompt"] = limits
    max_len = _max_model_len(cell)
    if max_len is not None:
        args["max_model_len"] = max_len
    return _catalog(tr.check_engine_args, args, version)


def speculative_config(cell: Cell, version: str) -> dict[str, Any] | None:
    spec = cell.spec
    if spec is None:
        return None
    extra = dict(cell.extra_speculative_config)
    method: str = spec.method
    # A report may name the model-specific MTP method (glm_ocr_mtp); keep it, the catalog
    # maps it to "mtp" where the release wants that.
    extra_method = extra.pop("method", None)
    if spec.method == "mtp" and isinstance(extra_method, str) and extra_method.endswith("_mtp"):
        method = extra_method
    if method == "draft_model" and not _at_least(version, DRAFT_MODEL_SINCE):
        accepted = [m for m in cat.spec_methods(version) if m != "draft_model"]
        raise PlanRejected(
            f"vLLM {version} cannot run speculative_config method='draft_model' "
            f"(NotImplementedError before {_dotted(DRAFT_MODEL_SINCE)})",
            field="spec.method", accepted=accepted)
    cfg: dict[str, Any] = {"method": method, "num_speculative_tokens": spec.num_speculative_tokens}
    draft = spec.draft_model or extra.pop("model", None)
    if draft is not None:
        cfg["model"] = draft
    elif spec.method in _NEEDS_DRAFT:
        raise PlanRejected(f"speculative method {spec.method!r} needs a draft model "
                           "(spec.draft_model)", field="spec.draft_model")
    for key in ("prompt_lookup_min", "prompt_lookup_max", "rejection_sample_method"):
        value = getattr(spec, key)
        if value is not None:
            cfg[key] = value
    if spec.draft_enforce_eager is not None:
        cfg["enforce_eager"] = spec.draft_enforce_eager
    if spec.synthetic_acceptance_rates is not None:
        cfg["synthetic_acceptance_rates"] = list(spec.synthetic_acceptance_rates)
    for key, value in extra.items():
        cfg.setdefault(key, value)  # the cell's own fields win over the report's extras
    model_type = _model_type(cell.model)
    try:
        return tr.translate_speculative_config(cfg, version, model_type=model_type)
    except cat.ConfigRejected as exc:
        if exc.key == "method" and method.endswith("mtp") and model_type is None:
            raise PlanRejected(
                f"{exc}. The model type of {cell.model!r} cannot be told from its id; "
                "name the MTP method for it (e.g. speculative_config method=deepseek_mtp)",
                field="spec.method", accepted=list(exc.accepted)) from None
        raise _rejected(exc) from None


def _model_type(model: str) -> str | None:
    name = model.lower()
    for pattern, model_type in _MODEL_TYPE_BY_ID:
        if re.search(pattern, name):
            return model_type
    return None


def compilation_config(cell: Cell, version: str) -> dict[str, Any]:
    cfg = dict(cell.compilation_config)
    if cell.cudagraph_mode is not None:
        written = cfg.get("cudagraph_mode")
        if isinstance(written, str) and written.upper() != cell.cudagraph_mode:
            raise PlanRejected(
                f"cudagraph_mode={cell.cudagraph_mode!r} contradicts compilation_config "
                f"cudagraph_mode={written!r}", field="cudagraph_mode",
                accepted=[cell.cudagraph_mode])
        cfg["cudagraph_mode"] = cell.cudagraph_mode
    if cell.encoder_cudagraph is not None:
        has_key = "cudagraph_mm_encoder" in cat.compilation_config_keys(version)
        # Off is the only behaviour a release without encoder graphs has, so saying so is
        # left out there; asking for on is refused by the catalog with its key list.
        if cell.encoder_cudagraph or has_key:
            cfg["cudagraph_mm_encoder"] = cell.encoder_cudagraph
    if not cfg:
        return {}
    return _catalog(tr.translate_compilation_config, cfg, version)


def _mm_limits(cell: Cell) -> dict[str, int]:
    w = cell.workload
    if w.modality == "image":
        return {"image": max(w.images_per_prompt, 1)}
    if w.modality == "video":
        return {"video": max(w.videos_per_prompt, 1)}
    return {}


def _max_model_len(cell: Cell) -> int | None:
    """A context just long enough for the text workload.

    Left to the model's own maximum, a long-context checkpoint (128k-256k) may not fit
    its KV cache on one GPU and vLLM refuses to start. Multimodal prompts have a token
    count that depends on the processor, so they keep the model's default.
    """
    if cell.workload.modality != "text":
        return None
    need = cell.workload.input_len + cell.sampling.max_tokens
    # Headroom for chat templates and special tokens, rounded to a 256 multiple.
    return int(math.ceil((need + 128) / 256) * 256)


def _check_workload(cell: Cell, version: str) -> None:
    w = cell.workload
    if w.kind == "mm_processor":
        if not cat.has_mm_processor_bench(version):
            since = next(v for v in cat.releases() if cat.has_mm_processor_bench(v))
            raise PlanRejected(f"vLLM {version} has no `vllm bench mm-processor` "
                               f"(first in {since})", field="workload.kind",
                               accepted=["offline", "serve"])
        if w.modality == "text":
            raise PlanRejected("the mm-processor benchmark needs image or video inputs",
                               field="workload.modality", accepted=["image", "video"])
    if w.kind == "serve" and not cell.sampling.ignore_eos \
            and _at_least(version, BENCH_FORCES_IGNORE_EOS_SINCE):
        raise PlanRejected(
            f"`vllm bench serve` in {version} always ignores EOS for random datasets, so "
            "sampling.ignore_eos=False cannot be reproduced as a serve workload",
            field="sampling.ignore_eos", accepted=["True"])
    if w.kind in ("serve", "mm_processor") and w.modality == "video" \
            and not _at_least(version, BENCH_RANDOM_MM_VIDEO_SINCE):
        raise PlanRejected(
            f"the random-mm dataset of vLLM {version} cannot sample videos (checked: "
            f"0.11.0 cannot, {_dotted(BENCH_RANDOM_MM_VIDEO_SINCE)} can)",
            field="workload.modality", accepted=["text", "image"])


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


# --- environment ---------------------------------------------------------------------------


def engine_env(cell: Cell) -> dict[str, str]:
    version = _version(cell)
    env = dict(cell.env)
    profiles = profiles_steps(cell)
    for name, value in env.items():
        if not (name == PROFILE_ENV and value == "1" and profiles):  # set by the plan
            _check_env_name(name, version)
    runner = _runner_value(cell, version)
    if runner is not None:
        if env.get(RUNNER_ENV, runner) != runner:
            raise PlanRejected(
                f"env {RUNNER_ENV}={env[RUNNER_ENV]} contradicts model_runner="
                f"{cell.model_runner}", field="env", accepted=[f"{RUNNER_ENV}={runner}"])
        env[RUNNER_ENV] = runner
    if profiles:
        env[PROFILE_ENV] = "1"
    return env


def profiles_steps(cell: Cell) -> bool:
    """An offline cell that speculates, or the no-spec arm of a spec axis (the step it is
    compared with): its script splits one profiled batch's step into its parts."""
    return cell.workload.kind == "offline" and (cell.spec is not None or "spec" in cell.varies)


def _runner_value(cell: Cell, version: str) -> str | None:
    if cell.model_runner is None:
        return None
    if cat.has_env_var(RUNNER_ENV, version):
        return "1" if cell.model_runner == "v2" else "0"
    if cell.model_runner == "v1":
        return None  # the only runner this release has
    since = next(v for v in cat.releases() if cat.has_env_var(RUNNER_ENV, v))
    raise PlanRejected(f"vLLM {version} has no V2 model runner ({RUNNER_ENV} is read "
                       f"from {since})", field="model_runner", accepted=["v1"])


def _check_env_name(name: str, version: str) -> None:
    if name.startswith("VLLM_"):
        known = [n for n in cat.env_vars(version) if n.startswith("VLLM_")]
        if name in DENIED_VLLM_ENV:
            raise PlanRejected(f"env {name} may not be set by a plan (credentials, code "
                               "paths or logging the runner depends on)", field=f"env.{name}")
        if name not in known:
            raise PlanRejected(f"vLLM {version} does not read env {name}",
                               field=f"env.{name}",
                               accepted=[n for n in known if n not in DENIED_VLLM_ENV])
        return
    if name in GENERIC_ENV_NAMES or name.startswith(GENERIC_ENV_PREFIXES):
        return
    raise PlanRejected(f"env {name} is not one a plan may set", field=f"env.{name}",
                       accepted=["VLLM_* names the release reads", *sorted(GENERIC_ENV_NAMES),
                                 *(p + "*" for p in GENERIC_ENV_PREFIXES)])


# --- template context ----------------------------------------------------------------------


def template_context(cell: Cell) -> dict[str, Any]:
    version = _version(cell)
    args = dict(cell.engine_args) or engine_args(cell)
    w = cell.workload
    ctx: dict[str, Any] = {
        "version": version,
        "has_spec": "speculative_config" in args,
        "synthetic": (args.get("speculative_config") or {}).get("rejection_sample_method")
        == "synthetic",
        "bench_spec_keys": _at_least(version, BENCH_SPEC_KEYS_SINCE),
    }
    if w.kind == "serve":
        ctx["serve_args"] = argv_lines(serve_args(args, version))
        ctx["bench_args"] = argv_lines(bench_serve_args(cell, args))
        ctx["warmup_prompts"] = min(w.num_prompts, max(w.concurrency or 1, 8))
    if w.kind == "mm_processor":
        ctx["mm_bench_args"] = argv_lines(mm_processor_args(cell, args, version))
    return ctx


def argv_lines(argv: list[str]) -> list[list[str]]:
    """argv cut before each flag, so a template can print one flag and its value a line."""
    lines: list[list[str]] = []
    for arg in argv:
        if not lines or arg.startswith("--"):
            lines.append([])
        lines[-1].append(arg)
    return lines


def cli_flags(args: dict[str, Any], version: str) -> list[str]:
    """EngineArgs kwargs as `vllm serve` / `vllm bench` flags for release `version`."""
    accepted = set(cat.engine_cli_flags(version))
    argv: list[str] = []
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if flag not in accepted:
            raise PlanRejected(f"vLLM {version} has no CLI flag {flag}", field=key,
                               accepted=sorted(accepted))
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            elif key not in _STORE_TRUE_FLAGS:
                argv.append("--no-" + flag[2:])
            continue
        if isinstance(value, dict | list):
            argv += [flag, json.dumps(value, separators=(",", ":"))]
        else:
            argv += [flag, str(value)]
    return argv


def serve_args(args: dict[str, Any], version: str) -> list[str]:
    """`vllm serve` argv after the executable; the script adds --host/--port."""
    rest = {k: v for k, v in args.items() if k != "model"}
    return ["serve", str(args["model"]), *cli_flags(rest, version)]


def bench_serve_args(cell: Cell, args: dict[str, Any]) -> list[str]:
    """`vllm bench serve` argv after the executable, without --num-prompts, --base-url
    and the result file flags, which the script adds per run."""
    w, s = cell.workload, cell.sampling
    chat = w.api == "chat" or w.modality != "text"
    argv = ["bench", "serve",
            "--backend", "openai-chat" if chat else "openai",
            "--endpoint", "/v1/chat/completions" if chat else "/v1/completions",
            "--model", cell.model,
            "--dataset-name", "random" if w.modality == "text" else "random-mm",
            "--random-input-len", str(w.input_len),
            "--random-output-len", str(s.max_tokens),
            "--random-range-ratio", "0.0"]
    argv += _random_mm_flags(cell)
    if w.concurrency is not None:
        argv += ["--max-concurrency", str(w.concurrency)]
    # Sampling is always explicit: 0.15.1 stopped defaulting to greedy.
    argv += ["--temperature", str(s.temperature), "--top-p", str(s.top_p),
             "--seed", str(s.seed), "--percentile-metrics", "ttft,tpot,itl"]
    if s.ignore_eos:
        argv.append("--ignore-eos")
    if cell.trust_remote_code:
        argv.append("--trust-remote-code")
    return argv


def mm_processor_args(cell: Cell, args: dict[str, Any], version: str) -> list[str]:
    """`vllm bench mm-processor` argv after the executable, without --output-json."""
    w = cell.workload
    return ["bench", "mm-processor", *cli_flags(args, version),
            "--dataset-name", "random-mm",
            "--num-prompts", str(w.num_prompts),
            "--random-input-len", str(w.input_len),
            "--random-output-len", str(cell.sampling.max_tokens),
            *_random_mm_flags(cell),
            "--disable-tqdm"]


def _random_mm_flags(cell: Cell) -> list[str]:
    w = cell.workload
    if w.modality == "text":
        return []
    video = w.modality == "video"
    count = max(w.videos_per_prompt if video else w.images_per_prompt, 1)
    limits = {"image": 0 if video else count, "video": count if video else 0}
    h, wd, frames = VIDEO_BUCKET if video else (*(w.image_size or IMAGE_BUCKET[:2]), 1)
    return ["--random-mm-base-items-per-request", str(count),
            "--random-mm-num-mm-items-range-ratio", "0.0",
            "--random-mm-limit-mm-per-prompt", json.dumps(limits, separators=(",", ":")),
            # A Python dict literal with tuple keys is what this flag parses.
            "--random-mm-bucket-config", f"{{({h}, {wd}, {frames}): 1.0}}"]


# --- time ----------------------------------------------------------------------------------


def estimate_seconds(cell: Cell, budget: Budget) -> float:
    """Deliberately pessimistic: load, compile and graph capture, then each run decoding
    its batch in waves at ~30 ms a step plus prefill at ~20k tokens/s."""
    w, s = cell.workload, cell.sampling
    # Load ~1.5 min, torch.compile + graph capture ~1 min (later starts of the same
    # config hit the compile cache), a draft ~0.5 min, multi-GPU start-up ~0.5 min.
    startup = 90.0 + (0.0 if cell.enforce_eager else 60.0)
    startup += 30.0 if cell.spec is not None else 0.0
    startup += 30.0 * (cell.tensor_parallel_size * cell.data_parallel_size > 1)
    batch = min(w.num_prompts, w.concurrency or w.num_prompts, 256)
    waves = math.ceil(w.num_prompts / batch)
    run = waves * s.max_tokens * 0.03 + w.num_prompts * w.input_len / 20_000
    run += w.num_prompts * (w.images_per_prompt + 4 * w.videos_per_prompt) * 0.05
    runs = budget.warmups + budget.runs
    if w.kind == "mm_processor":
        return runs * (startup + run)  # every invocation starts its own engine
    if w.kind == "serve":
        startup += 30.0
    return startup + runs * run
