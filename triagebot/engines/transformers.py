"""transformers: the reference engine, plain `generate` against assisted generation.

It runs the matrix's semantics on any CPU or GPU: a speculative cell becomes assisted
generation (a small draft model proposes, the target verifies) or prompt lookup decoding
(candidates copied from earlier in the sequence), and the graph axis becomes eager against
`torch.compile` of the target's forward. Acceptance is counted from the target's forward
passes, so it needs no engine metrics.

Facts measured with transformers 5.23 / torch 2.13 (CPU) that shaped the choices here:

- assisted generation refuses a static cache ("not supported with Static cache classes"),
  and transformers compiles `generate` by itself only with a static cache; so a compiled
  cell compiles the target's `forward` with dynamic shapes over the dynamic cache, for
  spec and no-spec cells alike, which keeps `spec / no_spec @ compiled` like for like.
- the draft's own `generate` starts from `num_assistant_tokens=20`, a confidence
  threshold of 0.4 that stops drafting early, and `num_assistant_tokens_schedule`; the
  script sets k, threshold 0 and "constant" on the draft so k drafted tokens means k.
- compiling the draft as well roughly doubles compile time on a CPU, so the draft is
  compiled only when the cell says `spec.draft_enforce_eager=false` outright.

On CUDA the graph axis is CUDA graphs for real: every cell (eager too, so that graphs are
the one difference) decodes over one static KV cache reused across prompts, and a graph
cell compiles the target's forward with `mode="reduce-overhead"` and static shapes, so
inductor captures each decode and verify width once and replays it. Assisted generation
takes a static cache from transformers 5.24 on. The script reads how many CUDA graphs a
profiled generate launched (torch.profiler) and dynamo's cudagraph-skip counter, and
reports them; the analysis holds a graph cell that launched none as not having run graphs.
"""

from __future__ import annotations

import re
from typing import Any

from triagebot.engines import (
    VLLM_ONLY,
    require_one_device,
    require_template,
    require_unset,
    standins,
)
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell

NAME = "transformers"
TEMPLATES = {"offline": "transformers/generate.py.j2"}

TINY_TARGET = "tiny-random-llama"
TINY_DRAFT = "tiny-random-llama-draft"
# Rotary positions cost nothing to extend, but attention over longer prompts on a CPU
# would blow any budget long before it taught anything.
TINY_MAX_POSITIONS = 16384
# The template passes `dtype=` to from_pretrained, which transformers took in 4.56.
MIN_VERSION = (4, 56)

# torch's intra-op threads on the CPU. The tiny models' matmuls gain nothing from a second
# thread, and on a shared 2-core machine two threads spin against the neighbour: measured
# here with one core busy, 2 threads ran at 31-90 tok/s (CV 26%), 1 thread at 403-527 tok/s
# (CV 9%). A cell's OMP_NUM_THREADS overrides it.
_CPU_THREADS = 1

# Methods that need model-free candidates (copied from the sequence itself) and those
# that a small draft model stands in for.
_LOOKUP_METHODS = ("ngram", "suffix")
_DRAFT_METHODS = ("draft_model", "eagle", "eagle3", "mtp", "medusa", "dflash")
# Transformers' own prompt lookup window when the cell does not give one.
_DEFAULT_NGRAM_MAX = 2

# Per device the script finds at run time. A CPU has no CUDA graphs: there `graph` is
# torch.compile with dynamic shapes over the dynamic cache. On CUDA static shapes over a
# static cache let inductor capture and replay CUDA graphs ("reduce-overhead").
_COMPILE_MODES = {"cuda": "reduce-overhead", "cpu": "default"}
_COMPILE_DYNAMIC = {"cuda": False, "cpu": True}
_CACHES = {"cuda": "static", "cpu": "dynamic"}
# The first release whose assisted generation verifies over a static cache.
STATIC_ASSISTED_SINCE = (5, 24)

_ENV_NAMES = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM", "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
    "HF_HUB_DISABLE_TELEMETRY",
)
_ENV_PREFIXES = ("TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PYTORCH_")

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)")


def resolve_version(version: str | None) -> str | None:
    """`version` itself: the script runs whatever transformers is installed and records it.

    There is no per-release table; only releases older than the API the template uses
    are refused.
    """
    if version is None:
        return None
    match = _VERSION_RE.match(version)
    if match is None:
        raise PlanRejected(f"transformers version {version!r} is not a version number",
                           field="version", accepted=["X.Y[.Z]", "unset (installed)"])
    if (int(match.group(1)), int(match.group(2))) < MIN_VERSION:
        floor = ".".join(map(str, MIN_VERSION))
        raise PlanRejected(
            f"transformers {version} predates the from_pretrained(dtype=...) API the "
            f"template uses (first in {floor})",
            field="version", accepted=[f">={floor}", "unset (installed)"],
        )
    return version


def engine_args(cell: Cell) -> dict[str, Any]:
    """What the template prints: generation, assistant and compile settings."""
    resolve_version(cell.version)
    _reject_unsupported(cell)
    sampling = cell.sampling
    args: dict[str, Any] = {
        "tiny": cell.model == TINY_TARGET,
        "dtype": "float32" if cell.model == TINY_TARGET else "auto",
        "max_new_tokens": sampling.max_tokens,
        "do_sample": sampling.temperature > 0,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seed": sampling.seed,
        "ignore_eos": sampling.ignore_eos,
        # Assisted generation verifies one sequence at a time.
        "batch_size": 1,
        "cache_implementation": dict(_CACHES),
        "static_assisted_since": list(STATIC_ASSISTED_SINCE),
        "cpu_threads": _CPU_THREADS,
        "compile": not cell.enforce_eager,
        "compile_draft": False,
        "compile_dynamic": dict(_COMPILE_DYNAMIC),
        "compile_mode": dict(_COMPILE_MODES),
        **_assistant_args(cell),
    }
    if cell.enforce_eager is False and cell.spec is not None:
        args["compile_draft"] = (args["assistant"] == "draft"
                                 and cell.spec.draft_enforce_eager is False)
    return args


def _assistant_args(cell: Cell) -> dict[str, Any]:
    none: dict[str, Any] = {
        "assistant": None, "assistant_model": None, "stands_in_for": None,
        "num_assistant_tokens": None, "num_assistant_tokens_schedule": None,
        "assistant_confidence_threshold": None, "prompt_lookup_num_tokens": None,
        "max_matching_ngram_size": None,
    }
    spec = cell.spec
    if spec is None:
        return none
    k = spec.num_speculative_tokens
    stands_in = None if spec.method in ("draft_model", "ngram") else spec.method
    if spec.method in _LOOKUP_METHODS:
        return {**none, "assistant": "prompt_lookup", "stands_in_for": stands_in,
                "prompt_lookup_num_tokens": k,
                "max_matching_ngram_size": spec.prompt_lookup_max or _DEFAULT_NGRAM_MAX}
    return {**none, "assistant": "draft", "assistant_model": _draft_model(cell),
            "stands_in_for": stands_in, "num_assistant_tokens": k,
            "num_assistant_tokens_schedule": "constant",
            "assistant_confidence_threshold": 0.0}


def _draft_model(cell: Cell) -> str:
    spec = cell.spec
    assert spec is not None
    # The tiny target, and a trained stand-in target, each come with the one draft that
    # shares their vocabulary.
    paired = TINY_DRAFT if cell.model == TINY_TARGET else standins.draft_for(cell.model)
    if paired is not None:
        if spec.draft_model not in (None, paired) and spec.method == "draft_model":
            raise PlanRejected(
                f"spec.draft_model={spec.draft_model}: {cell.model} shares its vocabulary "
                f"only with {paired}", field="spec.draft_model", accepted=[paired],
            )
        # An EAGLE/MTP/... head of a real model cannot pair with it; its draft stands in
        # for the head (recorded in `stands_in_for`).
        return paired
    if spec.method == "draft_model" and spec.draft_model not in (None, TINY_DRAFT):
        return spec.draft_model
    raise PlanRejected(
        f"spec.method={spec.method} on {cell.model}: transformers stands in for it with "
        "assisted generation, which needs a standalone small causal LM sharing the "
        "target's tokenizer",
        field="spec.method",
        accepted=["draft_model with spec.draft_model set", "ngram", f"model {TINY_TARGET}",
                  "a triagebot stand-in target"],
    )


def _reject_unsupported(cell: Cell) -> None:
    if cell.cudagraph_mode is not None:
        raise PlanRejected(
            f"cudagraph_mode={cell.cudagraph_mode}: transformers has no cudagraph modes; "
            "eager vs torch.compile only (enforce_eager=true/false)",
            field="cudagraph_mode", accepted=["unset"],
        )
    require_unset(cell, (*VLLM_ONLY, "commit"), "has no transformers equivalent")
    require_one_device(cell, "the transformers template runs on one device")
    for field, config, instead in (
        ("compilation_config", cell.compilation_config, "enforce_eager=true|false"),
        ("extra_speculative_config", cell.extra_speculative_config, "spec fields"),
    ):
        if config:
            key = sorted(config)[0]
            raise PlanRejected(f"{field}.{key} has no transformers equivalent",
                               field=f"{field}.{key}", accepted=[f"empty ({instead} only)"])
    _reject_workload(cell)
    _reject_spec(cell)


def _reject_workload(cell: Cell) -> None:
    wl = cell.workload
    require_template(cell, TEMPLATES, "transformers")
    checks: tuple[tuple[str, object, list[object]], ...] = (
        ("workload.api", wl.api, ["generate"]),
        ("workload.dataset", wl.dataset, ["random", "synthetic"]),
        ("workload.modality", wl.modality, ["text"]),
        ("workload.images_per_prompt", wl.images_per_prompt, [0]),
        ("workload.videos_per_prompt", wl.videos_per_prompt, [0]),
        ("workload.concurrency", wl.concurrency, [None, 1]),
    )
    for field, value, accepted in checks:
        if value not in accepted:
            raise PlanRejected(
                f"{field}={value}: the transformers template feeds token-id prompts one at "
                "a time", field=field, accepted=[str(a) for a in accepted],
            )
    if cell.model == TINY_TARGET and wl.input_len + cell.sampling.max_tokens > TINY_MAX_POSITIONS:
        raise PlanRejected(
            f"workload.input_len + sampling.max_tokens = "
            f"{wl.input_len + cell.sampling.max_tokens} is too long for {TINY_TARGET}",
            field="workload.input_len", accepted=[f"<= {TINY_MAX_POSITIONS} in total"],
        )


def _reject_spec(cell: Cell) -> None:
    spec = cell.spec
    if spec is None:
        return
    if spec.rejection_sample_method is not None:
        raise PlanRejected(
            f"spec.rejection_sample_method={spec.rejection_sample_method}: transformers "
            "verifies greedily, or by speculative sampling when temperature > 0; neither "
            "is selectable", field="spec.rejection_sample_method", accepted=["unset"],
        )
    if spec.method not in _LOOKUP_METHODS + _DRAFT_METHODS:
        raise PlanRejected(f"spec.method={spec.method} has no transformers stand-in",
                           field="spec.method", accepted=[*_LOOKUP_METHODS, *_DRAFT_METHODS])
    lookup = spec.method in _LOOKUP_METHODS
    if spec.prompt_lookup_min not in (None, 1):
        raise PlanRejected(
            f"spec.prompt_lookup_min={spec.prompt_lookup_min}: transformers prompt lookup "
            "always falls back to 1-gram matches", field="spec.prompt_lookup_min",
            accepted=["unset", "1"],
        )
    if not lookup and spec.prompt_lookup_max is not None:
        raise PlanRejected(
            f"spec.prompt_lookup_max applies to prompt lookup, not spec.method={spec.method}",
            field="spec.prompt_lookup_max", accepted=["unset"],
        )
    if lookup and spec.draft_model is not None:
        raise PlanRejected(
            f"spec.draft_model={spec.draft_model}: spec.method={spec.method} uses no draft "
            "model", field="spec.draft_model", accepted=["unset"],
        )


def engine_env(cell: Cell) -> dict[str, str]:
    """`cell.env`, limited to the torch, thread and hub settings the script may honour."""
    for name in cell.env:
        if name not in _ENV_NAMES and not name.startswith(_ENV_PREFIXES):
            raise PlanRejected(
                f"env.{name} is not a torch, thread or hub setting a transformers cell takes",
                field=f"env.{name}", accepted=[*_ENV_NAMES, *(p + "*" for p in _ENV_PREFIXES)],
            )
    return dict(cell.env)


def template_context(cell: Cell) -> dict[str, Any]:
    notes: list[str] = []
    stands_in = cell.engine_args.get("stands_in_for")
    if stands_in:
        notes.append(f"spec.method={stands_in} is stood in for by "
                     f"{cell.engine_args.get('assistant')} decoding")
    return {"notes": notes, "tiny_target": TINY_TARGET, "tiny_draft": TINY_DRAFT}


def estimate_seconds(cell: Cell, budget: Budget) -> float:
    """Start-up, compile and runs, at a slow 20 ms per generated token on a CPU.

    Measured on 2 CPU cores: a first compile of the tiny target takes 20-50 s (twice
    that with the draft compiled too); a warm inductor cache cuts it to about 15 s.
    """
    seconds = 30.0
    if not cell.enforce_eager:
        seconds += 60.0
        if cell.spec is not None and cell.spec.draft_enforce_eager is False:
            seconds += 60.0
    if cell.model != TINY_TARGET:
        seconds += 300.0  # loading real weights
    wl = cell.workload
    per_run = wl.num_prompts * (cell.sampling.max_tokens * 0.02 + wl.input_len * 0.0005)
    return seconds + (budget.warmups + budget.runs) * per_run
