"""One plan, start to finish on this machine: provision, run in rounds (`run/rounds.py`),
add pinned-acceptance arms where the first verdicts call for them, analyse.

Everything lands in the output folder: `plan.json`, `request.json`, `scripts/`,
`results/<cell>-r<round>.json`, `logs/` and `findings.json`, which `triagebot report DIR`
reads back.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from triagebot.analyze.findings import analyze
from triagebot.analyze.findings_models import Findings
from triagebot.analyze.synthetic import called_for
from triagebot.errors import PlanRejected
from triagebot.plan.synthetic import NOTE, add_arms
from triagebot.plan_model import Plan
from triagebot.progress import Event, Pace
from triagebot.render import RenderedScript, render_plan
from triagebot.request_model import ReproRequest
from triagebot.run import cell_envs, leftovers
from triagebot.run.live import LIVE_TEMPLATES, LivePool
from triagebot.run.provision import ProvisionedEnv, ProvisionError
from triagebot.run.rounds import (
    DEFAULT_CACHE,
    PARALLEL_STARTS,
    Progress,
    RunCancelled,
    RunSettings,
    Session,
    SlotStore,
    live_rounds,
    run_rounds,
    time_left,
)
from triagebot.run.runners import run_profile
from triagebot.run.schedule import initial_schedule
from triagebot.run.supervise import CellOutcome
from triagebot.run_result import RunResult

# The fewest runs a pinned arm starts with: two mirrored pairs of rounds on a live engine.
MIN_PINNED_RUNS = 4
# The pinned arms' own time allowance, as a share of the plan's time limit: a plan that
# spent its limit answering the report's question still gets them.
PINNED_TIME_SHARE = 1.0

__all__ = ["DEFAULT_CACHE", "Execution", "RunCancelled", "RunSettings", "SlotStore",
           "execute", "load_results"]


class Execution(BaseModel):
    """What a repro produced: the findings and everything they were computed from."""

    findings: Findings
    results: dict[str, list[RunResult]] = Field(default_factory=dict)
    outcomes: dict[str, list[CellOutcome]] = Field(default_factory=dict)
    env: ProvisionedEnv | None = None
    rounds: int = 0


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
    try:
        envs = cell_envs.prepare(plan, out, cell_envs.Where(
            cache_dir=settings.cache_dir, standins_dir=settings.standins_dir,
            wheels=settings.wheels, local=settings.local),
            log=lambda m: emit(Event(kind="provision", message=m)))
    except ProvisionError as exc:
        for cell in plan.cells:
            results[cell.cell_id].append(_failed(plan, cell.cell_id,
                                                 f"provisioning failed: {exc}"))
        return _finish(Ran(plan, request, results, outcomes, None, 0), settings, emit, started)

    live = settings.live and envs.has_vars and all(
        c.template in LIVE_TEMPLATES for c in plan.cells)
    envs = envs.adding({leftovers.OWNER_VAR: leftovers.owner_tag(scope)})
    pool = LivePool() if live else None
    # vLLM's sockets and temp files of every live engine, removed once all have ended.
    with contextlib.ExitStack() as scratch:
        session = Session(plan=plan, request=request, paths=paths, envs=envs,
                          settings=settings, emit=emit,
                          started=started, results=results, outcomes=outcomes, store=store,
                          stop=stop, pool=pool, scratch=scratch,
                          pace=Pace(plan.estimated_seconds, len(plan.cells)))
        try:
            # A live engine's round costs seconds, not a start: many small mirrored rounds
            # put the compared cells' runs close together in time.
            run_rounds(session, initial_schedule(
                plan, rounds=live_rounds(plan.budget.runs) if pool else 2))
            if settings.pinned:
                _pinned_arms(session)
            if session.plan is not plan:  # arms added, or a note on why none were
                (out / "plan.json").write_text(session.plan.model_dump_json(indent=2) + "\n")
            return _finish(Ran(session.plan, request, results, outcomes, envs.first,
                               session.round_index), settings, emit, started)
        finally:
            if session.pool is not None:  # the arms' pool, where they brought their own
                session.pool.close_all()
            if pool is not None and pool is not session.pool:
                pool.close_all()


def _pinned_arms(s: Session) -> None:
    """Add and run pinned-acceptance arms where the first verdicts call for them
    (`analyze/synthetic.py`): each against the no-spec cell of its mode, in rounds of
    their own after the plan's. Engines the new rounds do not use are closed first."""
    plan, settings = s.plan, s.settings
    findings = analyze(plan, s.results, request=s.request, margin=settings.margin,
                       negligible=settings.negligible)
    cells = {c.cell_id: c for c in findings.cells}
    call = called_for(plan, findings.comparisons, cells, s.request)
    if call is None:
        return
    if isinstance(call, str):
        s.plan = _noted(plan, f"{NOTE} were called for, but {call}: the "
                              "step cost comes from the acceptance counters alone.")
        return
    # Served cells on the cpu runner start a server every round: there the arms, and the
    # cells they are set against, run through the offline API on live engines instead.
    offline = (s.pool is None and settings.live and s.envs.has_vars
               and run_profile(plan).offline_arms)
    try:
        grown = add_arms(plan, call.requests, call.pins, offline=offline)
    except PlanRejected as exc:
        s.plan = _noted(plan, f"{NOTE} were called for ({call.reason}) "
                              f"but could not be planned: {exc}")
        return
    new = [c for c in grown.cells if c.cell_id not in s.results]
    # Every cell a new comparison reads runs in the new rounds: the arms, their no-spec
    # partners, and the spec cells whose partner is new.
    used = {cid for c in grown.comparisons if c not in plan.comparisons
            for cid in (*c.numerator, *c.denominator)}
    arms = plan.model_copy(update={"cells": [c for c in grown.cells if c.cell_id in used]})
    # Half the plan's runs to start with: a pinned arm is usually far from its partner,
    # and escalation adds rounds where the verdict needs them.
    runs = max(MIN_PINNED_RUNS, plan.budget.runs // 2)
    pool = LivePool() if offline else s.pool
    slots = [sl.model_copy(update={"round": sl.round + s.round_index})
             for sl in initial_schedule(arms, runs=runs,
                                        rounds=live_rounds(runs) if pool else 2)]
    limit = plan.budget.time_limit_s * PINNED_TIME_SHARE
    # Offline copies start their engines two at a time, each priced at a start so far.
    cost = (s.pace.left(math.ceil(len(arms.cells) / PARALLEL_STARTS), 0) if offline
            else time_left(s.pace, slots, pool))
    if cost > limit:
        s.plan = _noted(plan, f"{NOTE} were called for ({call.reason}) but "
                              f"would take about {cost:.0f} s, past their share of the plan's "
                              "time limit: the step cost comes from the acceptance counters.")
        return
    note = (f"{NOTE} added after the first verdicts ({call.reason}): "
            + "; ".join(f"{p.name} acceptance from {p.source}" for p in call.pins) + ".")
    s.plan = _noted(grown, note)
    for script in render_plan(s.plan, [c.cell_id for c in new])[:-1]:
        path = settings.out_dir / "scripts" / script.filename
        path.write_text(script.text)
        path.chmod(0o755)
        s.paths[script.cell_id or ""] = path
    for c in new:
        s.results[c.cell_id] = []
        s.outcomes[c.cell_id] = []
    # Before the arms run: a run stopped in them still reads back with their cells.
    (settings.out_dir / "plan.json").write_text(s.plan.model_dump_json(indent=2) + "\n")
    s.emit(Event(kind="provision", message=note))
    if s.pool is not None:
        keep = {c.cell_id for c in arms.cells}
        s.pool.close([cid for cid in s.results if cid not in keep])
    s.pool = pool
    s.phase_start = s.round_index
    s.phase_began, s.phase_limit_s = time.monotonic(), limit
    run_rounds(s, slots, only={c.name for c in grown.comparisons if c not in plan.comparisons})


def _noted(plan: Plan, note: str) -> Plan:
    return plan.model_copy(update={"notes": [*plan.notes, note]})


@dataclass(frozen=True)
class Ran:
    """What a plan's run leaves to analyse: the plan as it ended (arms added), its
    results and outcomes by cell, its environment and the rounds it took."""

    plan: Plan
    request: ReproRequest | None
    results: dict[str, list[RunResult]]
    outcomes: dict[str, list[CellOutcome]]
    env: ProvisionedEnv | None
    rounds: int


def _finish(ran: Ran, settings: RunSettings, emit: Progress, started: float) -> Execution:
    plan, request, results, outcomes, env = (ran.plan, ran.request, ran.results,
                                             ran.outcomes, ran.env)
    out = settings.out_dir
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
                     rounds=ran.rounds)


def _read_log(outcome: CellOutcome) -> str:
    try:
        return Path(outcome.log_path).read_text(errors="replace")
    except OSError:
        return outcome.log_head + outcome.log_tail


def _failed(plan: Plan, cell_id: str, error: str) -> RunResult:
    cell = plan.cell(cell_id)
    return RunResult(cell_id=cell_id, engine=cell.engine, engine_version=cell.version,
                     status="failed", error=error)


def load_results(folder: Path) -> dict[str, list[RunResult]]:
    """The RunResults a previous `execute` left in `folder/results`, by cell, in round
    order (numeric: r10 comes after r9), each with the round its file name gives."""
    out: dict[str, list[RunResult]] = {}
    for path in sorted((folder / "results").glob("c*-r*.json"), key=_round_key):
        cell_id, round_ = _round_key(path)
        result = RunResult.model_validate_json(path.read_text())
        if round_ >= 0:
            result = result.model_copy(update={"round": round_})
        out.setdefault(cell_id, []).append(result)
    return out


def _round_key(path: Path) -> tuple[str, int]:
    cell_id, _, rest = path.stem.partition("-r")
    return cell_id, int(rest) if rest.isdigit() else -1
