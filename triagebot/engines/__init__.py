"""One module per engine; each turns a validated Cell into what its templates print.

An engine module provides (checked by `adapter()`):

- `NAME`: the engine's name in plans.
- `TEMPLATES`: workload kind -> template path under `repro_templates/`.
- `resolve_version(version: str | None) -> str | None`: the release to render for, or
  `PlanRejected` listing the known ones.
- `engine_args(cell) -> dict`: the version-correct arguments for the cell (e.g. vLLM's
  `speculative_config` as that release spells it); raises `PlanRejected` for what the
  release cannot do. Called at plan time, so a plan never holds a config its target
  version would crash on.
- `engine_env(cell) -> dict[str, str]`: the environment variables the cell runs with
  (its own `env` plus what fields such as `model_runner` mean for that release),
  checked against what the release reads.
- `template_context(cell) -> dict`: anything else its templates need; inert data only.
- `estimate_seconds(cell, budget) -> float`: a deliberately rough upper estimate of
  the cell's wall time (start-up plus warm-ups plus runs) for the budget check.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell

_MODULES = {
    "vllm": "triagebot.engines.vllm",
    "sglang": "triagebot.engines.sglang",
    "vllm-mlx": "triagebot.engines.vllm_mlx",
    "transformers": "triagebot.engines.transformers",
}

SUPPORTED = tuple(_MODULES)


class EngineAdapter(Protocol):
    NAME: str
    TEMPLATES: dict[str, str]

    def resolve_version(self, version: str | None) -> str | None: ...

    def engine_args(self, cell: Cell) -> dict[str, Any]: ...

    def engine_env(self, cell: Cell) -> dict[str, str]: ...

    def template_context(self, cell: Cell) -> dict[str, Any]: ...

    def estimate_seconds(self, cell: Cell, budget: Budget) -> float: ...


def adapter(engine: str) -> EngineAdapter:
    if engine not in _MODULES:
        raise PlanRejected(f"engine {engine!r} has no reproduction support",
                           field="engine", accepted=list(SUPPORTED))
    return cast(EngineAdapter, importlib.import_module(_MODULES[engine]))


# Cell settings only vLLM reads: another engine refuses a cell that sets one.
VLLM_ONLY = ("cudagraph_mode", "model_runner", "encoder_cudagraph", "mm_encoder_tp_mode")


def require_unset(cell: Cell, fields: Sequence[str], why: str | Mapping[str, str]) -> None:
    """Refuse the first of `fields` the cell sets; `why` (one for all, or one per field)
    is what the message says after `field=value`."""
    for field in fields:
        value = getattr(cell, field)
        if value is not None:
            reason = why if isinstance(why, str) else why[field]
            raise PlanRejected(f"{field}={value} {reason}", field=field, accepted=["unset"])


def require_one_device(cell: Cell, why: str) -> None:
    """Refuse parallelism on an engine that runs on one device; `why` ends the message."""
    multi: tuple[tuple[str, object, object], ...] = (
        ("tensor_parallel_size", cell.tensor_parallel_size, 1),
        ("data_parallel_size", cell.data_parallel_size, 1),
        ("expert_parallel", cell.expert_parallel, False),
    )
    for field, value, default in multi:
        if value != default:
            raise PlanRejected(f"{field}={value}: {why}", field=field, accepted=[str(default)])


def require_template(cell: Cell, templates: dict[str, str], engine: str) -> None:
    if cell.workload.kind not in templates:
        raise PlanRejected(f"workload.kind={cell.workload.kind} has no {engine} template",
                           field="workload.kind", accepted=list(templates))
