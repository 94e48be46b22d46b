"""Escalation stays inside the plan's time limit: a round is priced before it starts; an
A/A pair that came out DIFFERENT gets more rounds within the budget's most runs per cell."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.report import load_fixture
from triagebot.plan_model import Plan
from triagebot.progress import Pace
from triagebot.run.cell_envs import CellEnv, CellEnvs
from triagebot.run.provision import ProvisionedEnv
from triagebot.run.rounds import RunSettings, Session, escalation
from triagebot.run.schedule import Slot
from triagebot.run_result import RunResult


def _session(plan: Plan, results: Mapping[str, Sequence[RunResult]], tmp_path: Path,
             started: float, *, ran: list[Slot], walls: dict[str, float]) -> Session:
    """The state `escalation` reads after two rounds of `results`."""
    return Session(plan=plan, request=None, paths={},
                   envs=CellEnvs({None: CellEnv(ProvisionedEnv(
                       python="python", engine="vllm", version="0", kind="local",
                       path="/"))}),
                   settings=RunSettings(out_dir=tmp_path),
                   emit=lambda _e: None, started=started,
                   results={k: list(v) for k, v in results.items()}, outcomes={},
                   store=None, stop=None, pool=None, scratch=contextlib.ExitStack(),
                   pace=Pace(60.0, len(plan.cells)), ran=ran, round_index=2, walls=walls)


def _escalate(walls: dict[str, float], tmp_path: Path, limit_s: int = 600) -> int:
    plan, results = load_fixture("noisy_unknown")
    plan = plan.model_copy(update={"budget": plan.budget.model_copy(
        update={"time_limit_s": limit_s, "max_runs": 30})})
    started = time.monotonic() - 300  # five minutes spent
    slots = escalation(_session(plan, results, tmp_path, started, ran=[], walls=walls))
    return len(slots)


def test_a_round_that_fits_the_time_left_is_started(tmp_path: Path) -> None:
    plan, _ = load_fixture("noisy_unknown")
    assert _escalate({c.cell_id: 20.0 for c in plan.cells}, tmp_path) > 0


def test_a_round_that_would_overrun_the_time_limit_is_not_started(tmp_path: Path) -> None:
    plan, _ = load_fixture("noisy_unknown")
    # Five minutes spent and each start took two: a round of several starts cannot fit.
    assert _escalate({c.cell_id: 120.0 for c in plan.cells}, tmp_path) == 0


def _ran(order: list[str], *runs: int) -> list[Slot]:
    """Rounds of `order` and its reverse in turn, each measuring `runs[r]` runs."""
    return [Slot(cell_id=cid, runs=n, round=r)
            for r, n in enumerate(runs) for cid in (order if r % 2 == 0 else order[::-1])]


def _escalate_after(ran: list[Slot], tmp_path: Path) -> list[str]:
    plan, results = load_fixture("noisy_unknown")
    slots = escalation(_session(plan, results, tmp_path, time.monotonic(), ran=ran,
                                walls={c.cell_id: 1.0 for c in plan.cells}))
    assert slots and {s.round for s in slots} == {2}
    return [s.cell_id for s in slots]


def test_an_escalation_is_one_round_mirroring_the_round_before(tmp_path: Path) -> None:
    plan, _ = load_fixture("noisy_unknown")
    first = [c.cell_id for c in plan.cells]
    order = _escalate_after(_ran(first, 2, 2), tmp_path)  # the last round: `first` reversed
    assert order == [cid for cid in first if cid in order]


def test_after_3_then_2_runs_an_escalation_repeats_the_shorter_order(tmp_path: Path) -> None:
    # The first round's order had 3 runs and its mirror 2: mirroring again would put the
    # first order 3 + runs ahead; repeating the mirror's order evens them out.
    plan, _ = load_fixture("noisy_unknown")
    first = [c.cell_id for c in plan.cells]
    order = _escalate_after(_ran(first, 3, 2), tmp_path)
    assert order == [cid for cid in reversed(first) if cid in order]


def _slowdown(aa_scale: float, max_runs: int) -> tuple[Plan, dict[str, list[RunResult]]]:
    """The recorded reproduced slowdown (every comparison decided), its A/A replica's
    throughput times `aa_scale`."""
    plan, results = load_fixture("reproduced_slowdown")
    plan = plan.model_copy(update={"budget": plan.budget.model_copy(
        update={"max_runs": max_runs})})
    replica = next(c.cell_id for c in plan.cells if c.replica)
    results[replica] = [r.model_copy(update={"runs": [
        m.model_copy(update={"tok_s": m.tok_s * aa_scale}) for m in r.runs]})
        for r in results[replica]]
    return plan, results


def _escalated_cells(plan: Plan, results: dict[str, list[RunResult]],
                     tmp_path: Path) -> list[str]:
    slots = escalation(_session(plan, results, tmp_path, time.monotonic(), ran=[],
                                walls={c.cell_id: 1.0 for c in plan.cells}))
    return sorted(s.cell_id for s in slots)


def test_a_different_a_a_pair_gets_another_round_of_its_two_cells(tmp_path: Path) -> None:
    plan, results = _slowdown(1.0, max_runs=20)
    assert _escalated_cells(plan, results, tmp_path) == []  # decided, and the pair agrees
    plan, results = _slowdown(0.8, max_runs=20)
    pair = next(c for c in plan.comparisons if c.kind == "noise")
    assert _escalated_cells(plan, results, tmp_path) == sorted([*pair.numerator,
                                                                *pair.denominator])


def test_the_pair_gets_no_round_past_the_most_runs_per_cell(tmp_path: Path) -> None:
    plan, results = _slowdown(0.8, max_runs=5)
    assert _escalated_cells(plan, results, tmp_path) == []


def test_a_new_phase_counts_a_cells_runs_from_its_first_round(tmp_path: Path) -> None:
    """A no-spec cell that spent its max_runs in the plan's rounds still runs beside an arm
    added after them (rounds 4 on): the budget counts the runs of the current phase."""
    plan, results = load_fixture("noisy_unknown")
    comp = next(c for c in plan.comparisons if c.kind == "ratio")
    [arm], [base] = comp.numerator, comp.denominator
    rounds = {k: [] for k in results}
    rounds[base] = [r.model_copy(update={"round": i})
                    for i, r in enumerate([*results[base], *results[base], *results[base]])]
    rounds[arm] = [r.model_copy(update={"round": 4 + i}) for i, r in enumerate(results[arm])]
    plan = plan.model_copy(update={
        "comparisons": [comp], "budget": plan.budget.model_copy(update={"max_runs": 20})})
    walls = {c.cell_id: 1.0 for c in plan.cells}
    session = _session(plan, rounds, tmp_path, time.monotonic(), ran=[], walls=walls)
    session.round_index = 6
    assert base not in {sl.cell_id for sl in escalation(session)}  # 30 runs made, of 20
    session.phase_start = 4
    assert {sl.cell_id for sl in escalation(session)} == {arm, base}
