"""Where each cell of a plan runs: its release's environment and the variables its
scripts get.

A plan runs one release, `Plan.engine_version` (a nightly or commit step renders its
cells with the nearest release's keys and still installs the point itself). A watch step
is the exception: it measures the new release against the last one in the same job
(`triagebot/watch/`), so its cells name two releases, and each release is provisioned
once and runs the cells that name it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from triagebot.model import Cell, Plan
from triagebot.run import standins, vllm_cpu, vllm_mlx
from triagebot.run.provision import ProvisionedEnv, provision

Log = Callable[[str], None]


@dataclass(frozen=True)
class CellEnv:
    """An environment and the variables every script run in it gets."""

    env: ProvisionedEnv
    vars: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CellEnvs:
    """The environment of each release a plan runs, keyed by release (None: the plan's
    single release, or this interpreter)."""

    by_release: dict[str | None, CellEnv]
    per_cell: bool = False

    def of(self, cell: Cell) -> CellEnv:
        if self.per_cell:
            return self.by_release[cell.version]
        return next(iter(self.by_release.values()))

    @property
    def first(self) -> ProvisionedEnv:
        return next(iter(self.by_release.values())).env

    @property
    def has_vars(self) -> bool:
        """Whether the runner set variables of its own (the cpu runners do)."""
        return all(e.vars for e in self.by_release.values())

    def adding(self, extra: dict[str, str]) -> CellEnvs:
        return CellEnvs({k: CellEnv(e.env, {**e.vars, **extra})
                         for k, e in self.by_release.items()}, self.per_cell)


def releases_of(plan: Plan) -> list[str | None]:
    """The releases the plan's cells run, first named first: each cell's own where the
    cells name more than one (a watch step), else the plan's."""
    named = list(dict.fromkeys(c.version for c in plan.cells))
    if len(named) > 1:
        return named
    return [plan.engine_version]


@dataclass(frozen=True)
class Where:
    """The caches and sources provisioning reads (RunSettings' own, handed down)."""

    cache_dir: Path
    standins_dir: Path
    wheels: Path | None
    local: bool


def prepare(plan: Plan, out: Path, where: Where, log: Log) -> CellEnvs:
    """Every release of the plan provisioned (stand-ins built and linked as its runner
    needs), or ProvisionError from the first that fails."""
    releases = releases_of(plan)
    return CellEnvs({r: _prepare_one(plan, r, out, where, log) for r in releases},
                    per_cell=len(releases) > 1)


def _prepare_one(plan: Plan, release: str | None, out: Path, where: Where,
                 log: Log) -> CellEnv:
    if vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind):
        assert release is not None
        models = {c.model for c in plan.cells} | {
            c.spec.draft_model for c in plan.cells if c.spec and c.spec.draft_model}
        env, variables = vllm_cpu.prepare(
            release, models, out, cache_dir=where.cache_dir,
            standins_dir=where.standins_dir, wheels=where.wheels,
            multimodal=vllm_cpu.is_multimodal(plan), log=log)
        return CellEnv(env, variables)
    if vllm_mlx.is_cpu_plan(plan.engine, plan.gpu_kind):
        assert release is not None
        env, variables = vllm_mlx.prepare(
            release, out, cache_dir=where.cache_dir, standins_dir=where.standins_dir,
            models={c.model for c in plan.cells}, log=log)
        return CellEnv(env, variables)
    env = provision(plan.engine, release, cache_dir=where.cache_dir, local=where.local)
    # Stand-in ids (e.g. the GPU check's transformers plan) open as local folders.
    if wanted := standins.loaded_by(plan):
        standins.ensure(wanted, where.standins_dir, log=log)
        standins.link_into(out, where.standins_dir)
    return CellEnv(env)
