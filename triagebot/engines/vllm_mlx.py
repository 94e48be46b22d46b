"""vllm-mlx: `vllm-mlx serve` on Apple silicon (or on MLX's Linux CPU build, the cpu
runner: triagebot/run/vllm_mlx.py), MTP counters read from `/v1/status`.

Facts from engines.md §10 (waybarrios/vllm-mlx 0.4.1) and the project's tags: the
`/v1/status` `mtp` counters for multimodal batching arrived in 0.4.0, those for the text
continuous-batching scheduler in 0.4.1. The batched MTP paths draft one token per verify
step whatever `--mtp-num-draft-tokens` asks for, so a plan keeps the requested number and
the script records the effective one the server reports.
"""

from __future__ import annotations

import math
import re
from typing import Any

from triagebot.engines import VLLM_ONLY, require_one_device, require_template, require_unset
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell

NAME = "vllm-mlx"
TEMPLATES = {"serve": "vllm_mlx/serve.py.j2"}

KNOWN = ("0.4.0", "0.4.1", "0.5.0", "0.6.0")
LATEST = "0.6.0"
# First release whose text scheduler reports MTP counters (#656); 0.4.0 reports them
# for the multimodal path only.
_TEXT_COUNTERS_FROM = "0.4.1"
# The server refuses larger `max_tokens` unless `--max-request-tokens` is raised.
_DEFAULT_MAX_REQUEST_TOKENS = 32768
_ENV_PREFIXES = ("VLLM_MLX_", "MLX_", "HF_", "TOKENIZERS_", "OMP_")
# Height and width of the generated images where a cell names none: a size every
# vision-language processor takes.
IMAGE_SIZE = (224, 224)

_VERSION_RE = re.compile(r"^v?(\d+(?:\.\d+)*)(.*)$")


def _key(version: str) -> tuple[int, ...]:
    match = _VERSION_RE.match(version.strip())
    if match is None:
        raise PlanRejected(f"vllm-mlx version {version!r} is not a version number",
                           field="version", accepted=list(KNOWN))
    nums = [int(p) for p in match.group(1).split(".")]
    return tuple([*nums, 0, 0, 0][:3])


def resolve_version(version: str | None) -> str:
    """The known release for `version`. Older releases have no MTP counters to read."""
    if version is None:
        return LATEST
    key = _key(version)
    if key < _key(KNOWN[0]):
        raise PlanRejected(
            f"vllm-mlx {version} predates the /v1/status MTP counters (first in 0.4.0), "
            "so acceptance could not be measured",
            field="version", accepted=list(KNOWN),
        )
    if key > _key(KNOWN[-1]):
        raise PlanRejected(
            f"vllm-mlx {version} is newer than the releases this tool knows",
            field="version", accepted=list(KNOWN),
        )
    return [v for v in KNOWN if _key(v) <= key][-1]


def engine_args(cell: Cell) -> dict[str, Any]:
    """`flags` for `vllm-mlx serve` plus the draft counts the result is compared with."""
    resolve_version(cell.version)
    _reject_unsupported(cell)
    flags: dict[str, Any] = {}
    batched = (cell.workload.concurrency or 1) > 1
    if batched:
        flags["continuous_batching"] = True
    if cell.trust_remote_code:
        flags["trust_remote_code"] = True
    if cell.workload.modality == "image":
        # Images go through vllm-mlx's multimodal (MLLM) engine, and MTP through its MLLM
        # path; the route is named rather than left to its guess from the model's name.
        flags["mllm"] = True
    if cell.sampling.max_tokens > _DEFAULT_MAX_REQUEST_TOKENS:
        flags["max_request_tokens"] = cell.sampling.max_tokens
    args: dict[str, Any] = {"flags": flags}
    if cell.spec is not None:
        k = cell.spec.num_speculative_tokens
        flags["enable_mtp"] = True
        flags["mtp_num_draft_tokens"] = k
        if cell.extra_speculative_config.get("optimistic") is True:
            flags["mtp_optimistic"] = True
        args["requested_draft_tokens"] = k
        # Batched MTP drafts one token per step; simple mode reports nothing to check.
        args["expected_effective_draft_tokens"] = 1 if batched else None
    return args


def _reject_unsupported(cell: Cell) -> None:
    require_unset(cell, VLLM_ONLY, "has no meaning on vllm-mlx (MLX, no CUDA)")
    if cell.enforce_eager:
        raise PlanRejected("enforce_eager has no meaning on vllm-mlx (MLX has no CUDA graphs)",
                           field="enforce_eager", accepted=["false"])
    require_one_device(cell, "vllm-mlx serves on one device")
    if cell.compilation_config:
        key = next(iter(cell.compilation_config))
        raise PlanRejected(f"compilation_config.{key} has no vllm-mlx flag",
                           field=f"compilation_config.{key}", accepted=[])
    extra = set(cell.extra_speculative_config) - {"optimistic"}
    if extra:
        key = sorted(extra)[0]
        raise PlanRejected(f"extra_speculative_config.{key} has no vllm-mlx flag",
                           field=f"extra_speculative_config.{key}", accepted=["optimistic"])
    require_template(cell, TEMPLATES, "vllm-mlx")
    if cell.workload.modality not in ("text", "image"):
        raise PlanRejected(
            f"workload.modality={cell.workload.modality}: the vllm-mlx template sends text "
            "or images", field="workload.modality", accepted=["text", "image"],
        )
    _reject_spec(cell)


def _reject_spec(cell: Cell) -> None:
    spec = cell.spec
    if spec is None:
        return
    if spec.method != "mtp":
        raise PlanRejected(
            f"spec.method={spec.method}: vllm-mlx serve speculates only with the model's own "
            "MTP heads", field="spec.method", accepted=["mtp"],
        )
    for field in ("draft_model", "rejection_sample_method", "prompt_lookup_min",
                  "prompt_lookup_max", "draft_enforce_eager"):
        if getattr(spec, field) is not None:
            raise PlanRejected(f"spec.{field} has no vllm-mlx MTP flag",
                               field=f"spec.{field}", accepted=["unset"])


def engine_env(cell: Cell) -> dict[str, str]:
    for name in cell.env:
        if not name.startswith(_ENV_PREFIXES):
            raise PlanRejected(f"env.{name} is not read by vllm-mlx or MLX",
                               field=f"env.{name}", accepted=[p + "*" for p in _ENV_PREFIXES])
    return dict(cell.env)


def template_context(cell: Cell) -> dict[str, Any]:
    release = resolve_version(cell.version)
    notes: list[str] = []
    if cell.spec is not None and (cell.workload.concurrency or 1) <= 1:
        notes.append("concurrency 1 runs vllm-mlx in simple mode, whose /v1/status reports "
                     "no MTP counters; spec will be null")
    if cell.spec is not None and _key(release) < _key(_TEXT_COUNTERS_FROM):
        notes.append(f"vllm-mlx {release} reports MTP counters only for multimodal "
                     f"batching; text counters arrived in {_TEXT_COUNTERS_FROM}")
    if cell.sampling.ignore_eos:
        notes.append("vllm-mlx's completions APIs have no ignore_eos: requests may stop "
                     "early, output tokens are counted from usage")
    height, width = cell.workload.image_size or IMAGE_SIZE
    if cell.workload.modality == "image":
        notes.append(f"each prompt is a chat message with {cell.workload.images_per_prompt} "
                     f"generated {height}x{width} image(s), served by vllm-mlx's MLLM engine "
                     "(--mllm)")
    return {"release": release, "ready_timeout_s": 1800, "notes": notes,
            "image_size": [height, width]}


def estimate_seconds(cell: Cell, budget: Budget) -> float:
    """Start-up plus warm-ups plus runs, assuming a slow 15 tok/s per stream."""
    wl = cell.workload
    streams = min(wl.num_prompts, wl.concurrency or 1, 64)
    waves = math.ceil(wl.num_prompts / streams)
    per_run = 5.0 + waves * (cell.sampling.max_tokens / 15.0 + wl.input_len / 500.0)
    return 180.0 + (budget.warmups + budget.runs) * per_run
