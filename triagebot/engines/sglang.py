"""SGLang: `sgl.Engine(**kwargs)` offline, `sglang.launch_server` + `bench_serving` served.

Both templates take the same keyword set: `Engine(**kwargs)` builds `ServerArgs(**kwargs)`
and the server's CLI flags are the same names spelled `--x-y`, so one `engine_args` dict
serves both. Which names a release takes comes from the small table below, read from
the release wheels listed in engines.md §9 (0.4.10.post2 ... 0.5.23).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from triagebot.engines import VLLM_ONLY, require_template, require_unset
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell

NAME = "sglang"
TEMPLATES = {"offline": "sglang/offline.py.j2", "serve": "sglang/serve.py.j2"}

# Releases whose sources were read, oldest first. A version between two of them is
# described by the lower one: flags appear in a release and stay (or stay as aliases).
KNOWN = (
    "0.4.10.post2", "0.5.2", "0.5.5", "0.5.8", "0.5.10", "0.5.12",
    "0.5.14", "0.5.16", "0.5.18", "0.5.20", "0.5.22", "0.5.23",
)
LATEST = "0.5.23"

# speculative_algorithm values and the release each first appears in.
_ALGORITHMS = {
    "EAGLE": "0.4.10.post2", "EAGLE3": "0.4.10.post2", "NEXTN": "0.4.10.post2",
    "STANDALONE": "0.5.2", "NGRAM": "0.5.5", "DFLASH": "0.5.14", "DSPARK": "0.5.16",
    "UNO": "0.5.20",
}
# Neutral method -> algorithm. `mtp` is NEXTN, which 0.5.23 documents as a pure alias
# of EAGLE (it registers NEXTN as a reserved alias); there we print the resolved name.
_METHODS = {
    "mtp": "NEXTN", "eagle": "EAGLE", "eagle3": "EAGLE3", "ngram": "NGRAM",
    "draft_model": "STANDALONE", "dflash": "DFLASH",
}
_NEEDS_DRAFT = frozenset({"eagle", "eagle3", "draft_model", "dflash"})
_MTP_AS_EAGLE_FROM = "0.5.23"

# CUDA-graph batch-size arguments: one set up to 0.5.12, per-phase names from 0.5.14
# (where the old CLI spellings became deprecated aliases and later went away).
# `disable_cuda_graph` is taken by Engine(...) in every release read, and on the CLI as
# `--disable-cuda-graph` (a deprecated spelling from 0.5.14, still parsed in 0.5.23).
_GRAPH_FLAT = {"cuda_graph_max_bs": "cuda_graph_max_bs", "cuda_graph_bs": "cuda_graph_bs"}
_GRAPH_PER_PHASE = {
    "cuda_graph_max_bs": "cuda_graph_max_bs_decode", "cuda_graph_bs": "cuda_graph_bs_decode",
    "cuda_graph_max_bs_decode": "cuda_graph_max_bs_decode",
    "cuda_graph_bs_decode": "cuda_graph_bs_decode",
    "cuda_graph_max_bs_prefill": "cuda_graph_max_bs_prefill",
    "cuda_graph_bs_prefill": "cuda_graph_bs_prefill",
}
_PER_PHASE_FROM = "0.5.14"
# `bench_serving --temperature/--top-p` exist from 0.5.14; before that the sglang backend
# always sends temperature 0 and no top_p.
_BENCH_SAMPLING_FROM = "0.5.14"
# 0.5.23 keeps `sglang.bench_serving` only as a shim that warns; the module moved.
_BENCH_MODULE_MOVED_IN = "0.5.23"

# Environment variables a cell may set: SGLang's own plus the runtime's.
_ENV_PREFIXES = ("SGLANG_", "SGL_", "CUDA_", "NCCL_", "TORCH_", "PYTORCH_", "HF_", "TRITON_",
                 "FLASHINFER_", "NVIDIA_", "OMP_", "TOKENIZERS_")


@dataclass(frozen=True)
class Release:
    """What one known release accepts, as far as these templates care."""

    name: str
    algorithms: tuple[str, ...]
    graph_args: dict[str, str]
    mtp_algorithm: str
    bench_sampling: bool
    bench_module: str


_VERSION_RE = re.compile(r"^v?(\d+(?:\.\d+)*)(.*)$")


def _key(version: str) -> tuple[int, ...]:
    match = _VERSION_RE.match(version.strip())
    if match is None:
        raise PlanRejected(f"sglang version {version!r} is not a version number",
                           field="version", accepted=[_range()])
    nums = [int(p) for p in match.group(1).split(".")]
    return tuple([*nums, 0, 0, 0][:3])


def _is_prerelease(version: str) -> bool:
    match = _VERSION_RE.match(version.strip())
    rest = match.group(2).lstrip(".-_").lower() if match else ""
    return rest.startswith(("a", "b", "rc", "dev", "pre"))


def _range() -> str:
    return f"{KNOWN[0]} to {KNOWN[-1]}"


def resolve_version(version: str | None) -> str:
    """The known release that describes `version`: the nearest one at or below it, or
    the oldest known for an older one (the plan says which ran); only text that is not a
    version is refused."""
    if version is None:
        return LATEST
    key = _key(version)
    strict = _is_prerelease(version)
    below = [v for v in KNOWN if _key(v) < key or (not strict and _key(v) == key)]
    return below[-1] if below else KNOWN[0]


def release(version: str | None) -> Release:
    name = resolve_version(version)
    key = _key(name)
    return Release(
        name=name,
        algorithms=tuple(a for a, first in _ALGORITHMS.items() if _key(first) <= key),
        graph_args=_GRAPH_PER_PHASE if key >= _key(_PER_PHASE_FROM) else _GRAPH_FLAT,
        mtp_algorithm="EAGLE" if key >= _key(_MTP_AS_EAGLE_FROM) else "NEXTN",
        bench_sampling=key >= _key(_BENCH_SAMPLING_FROM),
        bench_module=("sglang.benchmark.serving" if key >= _key(_BENCH_MODULE_MOVED_IN)
                      else "sglang.bench_serving"),
    )


# --- engine_args -------------------------------------------------------------------------


def engine_args(cell: Cell) -> dict[str, Any]:
    """`sgl.Engine` keyword arguments (= `launch_server` flags) for the cell's release."""
    rel = release(cell.version)
    _reject_unsupported(cell)
    if cell.workload.kind == "serve":
        bench_args(cell, rel)  # refuse at plan time what the bench client cannot send
    args: dict[str, Any] = {"model_path": cell.model}
    if cell.revision is not None:
        args["revision"] = cell.revision
    if cell.trust_remote_code:
        args["trust_remote_code"] = True
    args["tp_size"] = cell.tensor_parallel_size
    if cell.data_parallel_size > 1:
        args["dp_size"] = cell.data_parallel_size
    if cell.expert_parallel:
        # vLLM's boolean puts experts across the TP group; SGLang says so with ep_size.
        args["ep_size"] = cell.tensor_parallel_size
    args["random_seed"] = cell.sampling.seed
    if cell.enforce_eager:
        args["disable_cuda_graph"] = True
    args.update(_graph_args(cell, rel))
    if cell.spec is not None:
        args.update(_spec_args(cell, rel))
    return args


# What a refusal says after `field=value` for each setting only vLLM reads.
_VLLM_ONLY_REFUSALS = {field: "cannot be run on sglang: " + why for field, why in (
    ("cudagraph_mode", "SGLang has no cudagraph_mode; use enforce_eager for no graphs"),
    ("model_runner", "SGLang has no model runner choice"),
    ("encoder_cudagraph", "the SGLang templates have no encoder graph setting"),
    ("mm_encoder_tp_mode", "the SGLang templates have no encoder TP mode"),
)}


def _reject_unsupported(cell: Cell) -> None:
    require_unset(cell, VLLM_ONLY, _VLLM_ONLY_REFUSALS)
    require_template(cell, TEMPLATES, "sglang")
    if cell.workload.modality != "text":
        raise PlanRejected(
            f"workload.modality={cell.workload.modality}: the sglang templates send text only",
            field="workload.modality", accepted=["text"],
        )
    if cell.extra_speculative_config:
        key = next(iter(cell.extra_speculative_config))
        raise PlanRejected(
            f"extra_speculative_config.{key} has no sglang translation",
            field=f"extra_speculative_config.{key}", accepted=[],
        )


def _graph_args(cell: Cell, rel: Release) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in cell.compilation_config.items():
        name = rel.graph_args.get(key)
        if name is None:
            raise PlanRejected(
                f"compilation_config.{key} has no sglang {rel.name} argument",
                field=f"compilation_config.{key}", accepted=sorted(rel.graph_args),
            )
        # *_max_bs* take one batch size, the others a list of them.
        out[name] = _batch_sizes(key, value, listy="max_bs" not in name)
    return out


def _batch_sizes(key: str, value: Any, *, listy: bool) -> Any:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 4096
                            for v in items):
        raise PlanRejected(f"compilation_config.{key}={value!r} is not a batch size",
                           field=f"compilation_config.{key}", accepted=["integers 1..4096"])
    if listy:
        return list(items)
    if len(items) != 1:
        raise PlanRejected(f"compilation_config.{key} takes one number",
                           field=f"compilation_config.{key}", accepted=["one integer"])
    return items[0]


def _spec_args(cell: Cell, rel: Release) -> dict[str, Any]:
    spec = cell.spec
    assert spec is not None
    algo = rel.mtp_algorithm if spec.method == "mtp" else _METHODS.get(spec.method)
    if algo is None or algo not in rel.algorithms:
        accepted = sorted(m for m, a in _METHODS.items() if a in rel.algorithms)
        raise PlanRejected(
            f"spec.method={spec.method} is not available in sglang {rel.name}",
            field="spec.method", accepted=accepted,
        )
    for field in ("rejection_sample_method", "prompt_lookup_min", "prompt_lookup_max",
                  "draft_enforce_eager"):
        if getattr(spec, field) is not None:
            raise PlanRejected(f"spec.{field} has no sglang {rel.name} argument",
                               field=f"spec.{field}", accepted=["unset"])
    k = spec.num_speculative_tokens
    args: dict[str, Any] = {"speculative_algorithm": algo}
    if spec.method in _NEEDS_DRAFT and spec.draft_model is None:
        raise PlanRejected(f"spec.method={spec.method} needs spec.draft_model on sglang",
                               field="spec.draft_model", accepted=["a model id"])
    if spec.draft_model is not None:
        if algo == "NGRAM":
            raise PlanRejected("spec.draft_model is meaningless for ngram",
                               field="spec.draft_model", accepted=["unset"])
        args["speculative_draft_model_path"] = spec.draft_model
    if algo == "NGRAM":
        # A chain of k guesses: breadth 1 so k means what it means elsewhere.
        args["speculative_num_draft_tokens"] = k + 1
        args["speculative_ngram_max_bfs_breadth"] = 1
        return args
    # Steps, top-k and draft tokens go together: leaving any unset makes SGLang pick
    # all three itself, and setting only some fails its own check.
    args["speculative_num_steps"] = 1 if algo == "DFLASH" else k
    args["speculative_eagle_topk"] = 1
    args["speculative_num_draft_tokens"] = k + 1
    return args


# --- env, context, estimate ----------------------------------------------------------


def engine_env(cell: Cell) -> dict[str, str]:
    for name in cell.env:
        if not name.startswith(_ENV_PREFIXES):
            raise PlanRejected(
                f"env.{name} is not read by sglang or its runtime",
                field=f"env.{name}", accepted=[p + "*" for p in _ENV_PREFIXES],
            )
    return dict(cell.env)


def template_context(cell: Cell) -> dict[str, Any]:
    rel = release(cell.version)
    ctx: dict[str, Any] = {
        "release": rel.name,
        "bench_module": rel.bench_module,
        "bench_args": bench_args(cell, rel) if cell.workload.kind == "serve" else [],
        "ready_timeout_s": 1800,
        "num_speculative_tokens": cell.spec.num_speculative_tokens if cell.spec else None,
    }
    return ctx


def bench_args(cell: Cell, rel: Release) -> list[str]:
    """`bench_serving` arguments apart from host, port and output file (set at run time)."""
    wl, sp = cell.workload, cell.sampling
    argv = [
        "--backend", "sglang", "--model", cell.model,
        "--dataset-name", "random",
        "--num-prompts", str(wl.num_prompts),
        "--random-input-len", str(wl.input_len),
        "--random-output-len", str(sp.max_tokens),
        # 1.0 pins every request to exactly these lengths (lower ratios draw shorter ones).
        "--random-range-ratio", "1.0",
        "--seed", str(sp.seed),
        "--disable-tqdm",
    ]
    if wl.concurrency is not None:
        argv += ["--max-concurrency", str(wl.concurrency)]
    if not sp.ignore_eos:
        argv.append("--disable-ignore-eos")
    if rel.bench_sampling:
        argv += ["--temperature", repr(sp.temperature), "--top-p", repr(sp.top_p)]
    elif sp.temperature != 0.0 or sp.top_p != 1.0:
        raise PlanRejected(
            f"sglang {rel.name} bench_serving always samples greedily; "
            f"sampling.temperature={sp.temperature} top_p={sp.top_p} needs {_BENCH_SAMPLING_FROM}+",
            field="sampling.temperature", accepted=["0.0 with top_p 1.0"],
        )
    return argv


def estimate_seconds(cell: Cell, budget: Budget) -> float:
    """Start-up plus warm-ups plus runs, assuming a slow 30 tok/s per stream."""
    wl = cell.workload
    startup = 240.0 + 60.0 * (cell.tensor_parallel_size - 1)
    if cell.spec is not None:
        startup += 120.0  # draft load and extra graph captures
    streams = min(wl.num_prompts, wl.concurrency or wl.num_prompts, 256)
    waves = math.ceil(wl.num_prompts / streams)
    per_run = 10.0 + waves * (cell.sampling.max_tokens / 30.0 + wl.input_len / 2000.0)
    return startup + (budget.warmups + budget.runs) * per_run
