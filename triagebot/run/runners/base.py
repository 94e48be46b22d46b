"""The run side of a runner kind: how a plan's releases are provisioned, what each script
run gets of its own, and which ways of running the kind needs. This base is the GPU
runner's (and Apple silicon's): the engine installed as released, stand-ins only where a
plan names them. A kind that differs overrides it in a module of `triagebot.run.runners`
named after the kind (`vllm-cpu` -> `vllm_cpu.py`); the plan side of the same kind is
`triagebot.plan.runners`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from triagebot.plan_model import Plan
from triagebot.run import standins
from triagebot.run.provision import ProvisionedEnv, provision

Log = Callable[[str], None]


@dataclass(frozen=True)
class CellEnv:
    """An environment and the variables every script run in it gets."""

    env: ProvisionedEnv
    vars: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Where:
    """The caches and sources provisioning reads (RunSettings' own, handed down)."""

    cache_dir: Path
    standins_dir: Path
    wheels: Path | None
    local: bool


@dataclass(frozen=True)
class Preparing:
    """One release of a plan to provision, and where its scripts and logs go."""

    plan: Plan
    release: str | None
    out: Path
    where: Where
    log: Log


class RunProfile:
    """One runner kind's part in running a plan."""

    kind = "gpu"
    # Served cells start a server every round on this kind: added pinned-acceptance arms
    # (and the cells they are set against) run through the offline API on live engines.
    offline_arms = False
    # A watch step installs each release first, so that one that does not install reads
    # as broken rather than as a failed run.
    installs_before_watch = True

    def __init__(self, kind: str | None = None) -> None:
        if kind is not None:  # a kind that runs as the base does, under its own name
            self.kind = kind

    def prepare(self, job: Preparing) -> CellEnv:
        """The release's environment (stand-ins built and linked where the plan names
        them), or ProvisionError."""
        where = job.where
        env = provision(job.plan.engine, job.release, cache_dir=where.cache_dir,
                        local=where.local)
        # Stand-in ids (e.g. the GPU check's transformers plan) open as local folders.
        if wanted := standins.loaded_by(job.plan):
            standins.ensure(wanted, where.standins_dir, log=job.log)
            standins.link_into(job.out, where.standins_dir)
        return CellEnv(env)

    def per_run_dirs(self) -> AbstractContextManager[dict[str, str]]:
        """Folders one script run gets to itself, as variables, removed after it."""
        return contextlib.nullcontext({})
