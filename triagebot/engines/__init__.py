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
from typing import Any, Protocol, cast

from triagebot.errors import PlanRejected
from triagebot.model import Budget, Cell

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


def require_unset(fields: dict[str, tuple[object, str]]) -> None:
    """Refuse the first field that is set: `{name: (value, "what to say after name=value")}`."""
    for field, (value, why) in fields.items():
        if value is not None:
            raise PlanRejected(f"{field}={value} {why}", field=field, accepted=["unset"])


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
