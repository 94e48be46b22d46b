"""Plan-time choices for vllm-mlx on the `cpu` runner: MLX's Linux CPU build, a stand-in.

vllm-mlx runs here on MLX's CPU backend (`triagebot.run.vllm_mlx`) and serves a tiny
model with one MTP layer (`triagebot.engines.mlx_standin`): a Qwen3-Next through its text
path, or, for a report about its multimodal (MLLM) path, a Qwen3.5 vision-language model
sent images. What is real: vllm-mlx's own scheduler, MTP install and verify path, and its
`/v1/status` counters (requested and effective draft tokens, attempts, acceptance, bypass
reasons), the MTP-on against MTP-off throughput ratio of this engine build, and whether
the release runs the configuration. What is not: the reporter's model, Apple silicon's
Metal kernels, and their tok/s.
"""

from __future__ import annotations

import math
from typing import Any

from triagebot.engines import mlx_standin
from triagebot.engines.vllm_catalog import version_key
from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan import cpu, defaults
from triagebot.plan.context import PlanContext
from triagebot.plan.mlx_mllm import about_mllm, mllm_workload
from triagebot.plan_model import Budget, Cell
from triagebot.request_model import ReproRequest

# A start (import, load, MTP install) takes seconds and a run a second or two, so a
# start measures many runs.
BUDGET = {"runs": 8, "warmups": 2, "max_runs": 16, "time_limit_s": 600}

CAN = ("vllm-mlx's own MTP counters from /v1/status (requested and effective draft "
       "tokens, attempts, acceptance, bypass reasons), whether this release installs and "
       "runs MTP, and the throughput of MTP on against off on this build")
CANNOT = ("the reported model's acceptance and tok/s, and anything of Apple silicon's "
          "Metal backend: the stand-in is tiny, trained for a minute or two on a "
          "synthetic language, and served by MLX's CPU backend")
_MLLM_STANDIN = ("the vision-language stand-in's vision tower has random weights, so what "
                 "it sees in the images is noise; only its text body and MTP layer are "
                 "trained")


def choose_release(asked: str, locked: list[str], choices: defaults.Choices) -> str:
    """The locked vllm-mlx release nearest to `asked`, named in a note where it differs."""
    if not locked:
        raise PlanRejected("no vllm-mlx release is locked for the cpu runner", field="runner")
    if asked in locked:
        return asked
    nearest = min(locked, key=lambda v: (abs(_ordinal(v) - _ordinal(asked)), v))
    choices.note(f"vllm-mlx {asked} has no lock on the cpu runner (locked: "
                 f"{', '.join(locked)}); the plan runs {nearest}")
    return nearest


def _ordinal(version: str) -> int:
    major, minor, patch = (*version_key(version), 0, 0, 0)[:3]
    return major * 10000 + minor * 100 + patch


def cpu_fields(request: ReproRequest, options: ReproOptions, base: dict[str, Any],
               context: PlanContext, choices: defaults.Choices) -> None:
    """The stand-in in place of the reported model (or the one named with model=), and a
    CPU-sized workload."""
    reported = options.model or (request.models[0] if request.models else None)
    mllm = about_mllm(request)
    standin, words = ((mlx_standin.VL_STANDIN, mlx_standin.VL_FAMILY_WORDS) if mllm else
                      (mlx_standin.STANDIN, mlx_standin.FAMILY_WORDS))
    base["model"] = standin.model_id
    context.stands_in_for = reported
    choices.note(f"vllm-mlx serves {words} ({standin.model_id}) in place of "
                 f"{reported or 'the reported model'}: built locally from a config, trained "
                 "for a few minutes on a synthetic language, never downloaded")
    base["workload"], base["sampling"] = cpu.scale(
        base["workload"], base["sampling"], choices,
        starts="each cell starts its own server every round (seconds here)")
    if mllm:
        base["workload"] = mllm_workload(base["workload"], request, choices,
                                         side=math.isqrt(mlx_standin.VL_STANDIN.max_pixels))
        choices.note(_MLLM_STANDIN)
    choices.note(f"what this CPU run answers for real: {CAN}")
    choices.note(f"what it cannot answer: {CANNOT}")


def budget(base: Budget, runs_set: bool, warmups_set: bool) -> Budget:
    return cpu.budget_from(base, BUDGET, runs_set, warmups_set)


def estimate_seconds(cell: Cell, budget_: Budget) -> float:
    """Start-up (import and load ~15 s on a shared 2-core machine) plus ~3 s a run."""
    return 20.0 + (budget_.warmups + budget_.runs) * 3.0
