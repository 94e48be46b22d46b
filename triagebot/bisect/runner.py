"""Run a bisect: each step is the report's repro plan at one point, run to a verdict.

A step plans the report at exactly that version (`build_plan(exact_version=True)`),
provisions its environment first (a lock or install that fails is a skip, never a
measured crash), runs the plan through the same orchestrator as `triagebot repro`
(rounds, ABBA order, escalation of UNKNOWN), and reads the outcome with
`predicate.step_verdict`. Finished steps go to a `StepStore` before the next starts, so
a bisect that was interrupted resumes from the last finished step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from triagebot.bisect import envs, predicate, search
from triagebot.bisect.ranges import BisectRange
from triagebot.bisect.search import Outcome, Step
from triagebot.errors import PlanRejected
from triagebot.model import Budget, PlanPolicy, ReproRequest
from triagebot.overrides import ReproOptions
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE, Event, RunCancelled, RunSettings, execute
from triagebot.run.provision import ProvisionError, provision

Log = Callable[[str], None]


class BisectSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: Path
    cache_dir: Path = DEFAULT_CACHE
    standins_dir: Path = standins.DEFAULT_CACHE
    wheels: Path | None = None
    # Where a non-cpu engine's releases are installed from without an index (tests).
    find_links: Path | None = None
    max_env_gb: float = Field(default=40.0, gt=0)
    max_steps: int = Field(default=16, ge=1, le=64)
    # A step escalates UNKNOWN further than a repro does (Pinpoint's extra repeats): every
    # UNKNOWN left is a skip. bench/bisect_sim.py shows what 40 buys at CV 3 %.
    step_max_runs: int = Field(default=40, ge=1, le=200)
    escalate: bool = True


class BisectRun(BaseModel):
    """Everything the report section needs: the range, the steps and where it ended."""

    model_config = ConfigDict(extra="forbid")

    package: str
    range: BisectRange
    question: str = ""
    predicate: str = ""
    notes: list[str] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome | None = None
    stopped: str = ""  # why it ended before resolving (step budget), else empty
    command: str = ""


class StepStore(Protocol):
    """Finished steps, kept across a crash: `load` at start, `save` after each step."""

    def load(self) -> list[Step]: ...

    def save(self, step: Step) -> None: ...


class FileStore:
    """Steps as JSON lines in the output folder (the CLI's resume)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[Step]:
        if not self.path.exists():
            return []
        lines = self.path.read_text().splitlines()
        return [Step.model_validate_json(line) for line in lines if line.strip()]

    def save(self, step: Step) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(step.model_dump_json() + "\n")


def _skip(point: str, why: str, started: float) -> Step:
    return Step(point=point, verdict="skip", reason=why,
                seconds=round(time.monotonic() - started, 1))


def run_step(point: str, request: ReproRequest, options: ReproOptions, errors: list[str],
             settings: BisectSettings, *, policy: PlanPolicy | None = None,
             budget: Budget | None = None, log: Log = print,
             stop: Callable[[], bool] | None = None, number: int = 1) -> Step:
    """One step: plan, provision, run, judge. Never raises for a bad build."""
    from triagebot.plan import build_plan
    from triagebot.render import RenderError, render_plan

    started = time.monotonic()
    opts = options.model_copy(update={"version": point})
    try:
        plan = build_plan(request, opts, budget=budget, policy=policy, exact_version=True)
        more = max(plan.budget.max_runs, settings.step_max_runs)
        plan = plan.model_copy(update={"budget": plan.budget.model_copy(
            update={"max_runs": more})})
        scripts = render_plan(plan)
    except (PlanRejected, RenderError) as exc:
        return _skip(point, f"cannot plan {point}: {exc}", started)
    on_cpu = vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind)
    try:
        if on_cpu:
            envs.ensure_lock(point, settings.cache_dir, log=log)
            envs.bound_cache(settings.cache_dir, settings.max_env_gb, keep={point}, log=log)
            log(f"{point}: provisioning")
            env = vllm_cpu.provision(point, cache_dir=settings.cache_dir,
                                     wheels=settings.wheels)
            envs.touch(Path(env.path or ""))
        else:
            provision(plan.engine, point, cache_dir=settings.cache_dir, local=False,
                      find_links=settings.find_links)
    except (ProvisionError, OSError) as exc:
        return _skip(point, f"build/install failed: {str(exc)[:300]}", started)
    out = settings.out_dir / f"step{number:02d}-{point}"
    run_settings = RunSettings(out_dir=out, cache_dir=settings.cache_dir, local=False,
                               standins_dir=settings.standins_dir, wheels=settings.wheels,
                               escalate=settings.escalate)

    def progress(event: Event) -> None:
        if event.kind in ("done", "analyse"):
            log(f"{point}: {event.kind} {event.label} {event.status or ''}".rstrip())

    execution = execute(plan, scripts, request, run_settings, progress, stop=stop)
    logs = {cid: "\n".join(_read(o.log_path) for o in outs)
            for cid, outs in execution.outcomes.items()}
    verdict, why = predicate.step_verdict(execution.findings, errors=errors, logs=logs)
    return Step(point=point, verdict=verdict, reason=why,
                measure=predicate.measure(execution.findings),
                runs=predicate.runs_of(execution.findings),
                p_value=predicate.p_value(execution.findings),
                seconds=round(time.monotonic() - started, 1))


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")[-20000:]
    except OSError:
        return ""


def bisect(run: BisectRun, request: ReproRequest, options: ReproOptions, errors: list[str],
           settings: BisectSettings, *, store: StepStore | None = None,
           policy: PlanPolicy | None = None, budget: Budget | None = None,
           log: Log = print, on_step: Callable[[BisectRun], None] | None = None,
           stop: Callable[[], bool] | None = None) -> BisectRun:
    """Step until the bracket holds no untested point, or the step budget is spent."""
    steps = list(store.load()) if store is not None else []
    if steps:
        log(f"resuming after {len(steps)} finished step(s)")
    run = run.model_copy(update={"steps": steps,
                                 "outcome": search.outcome(run.range, steps)})
    limit = min(settings.max_steps, search.step_budget(run.range.candidates))
    while True:
        if stop is not None and stop():
            raise RunCancelled(f"stopped after {len(steps)} bisect step(s)")
        point = search.next_point(run.range, steps)
        if point is None:
            break
        if len(steps) >= limit:
            run = run.model_copy(update={"stopped": f"step budget ({limit}) spent"})
            break
        log(f"step {len(steps) + 1}: {point}")
        step = run_step(point, request, options, errors, settings, policy=policy,
                        budget=budget, log=log, stop=stop, number=len(steps) + 1)
        log(f"step {len(steps) + 1}: {point} -> {step.verdict} ({step.reason})")
        steps.append(step)
        if store is not None:
            store.save(step)
        run = run.model_copy(update={"steps": list(steps),
                                     "outcome": search.outcome(run.range, steps)})
        if on_step is not None:
            on_step(run)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    (settings.out_dir / "bisect.json").write_text(
        json.dumps(run.model_dump(mode="json"), indent=2) + "\n")
    return run
