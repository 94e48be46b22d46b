"""Where each cell of a plan runs: its release's environment and the variables its
scripts get.

A plan runs one release, `Plan.engine_version` (a nightly or commit step renders its
cells with the nearest release's keys and still installs the point itself). A watch step
is the exception: it measures the new release against the last one in the same job
(`triagebot/watch/`), so its cells name two releases, and each release is provisioned
once and runs the cells that name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from triagebot.plan_model import Cell, Plan
from triagebot.run.provision import ProvisionedEnv
from triagebot.run.runners import run_profile
from triagebot.run.runners.base import CellEnv, Log, Preparing, Where

__all__ = ["CellEnv", "CellEnvs", "Where", "prepare", "releases_of"]


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


def prepare(plan: Plan, out: Path, where: Where, log: Log) -> CellEnvs:
    """Every release of the plan provisioned (stand-ins built and linked as its runner
    needs), or ProvisionError from the first that fails."""
    releases = releases_of(plan)
    runner = run_profile(plan)
    return CellEnvs({r: runner.prepare(Preparing(plan, r, out, where, log)) for r in releases},
                    per_cell=len(releases) > 1)
