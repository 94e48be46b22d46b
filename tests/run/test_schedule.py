"""Run order: reproducible shuffles, replicas kept apart from their originals, rounds."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from triagebot.plan_model import Budget, Cell, CellWorkload, Comparison, Plan, Sampling
from triagebot.run.schedule import (
    Slot,
    aa_pairs,
    balanced_turn,
    initial_schedule,
    mirror_round,
    mirrored_rounds,
    round_order,
    round_seed,
    schedule_round,
    split_runs,
)


def _cell(n: int, replica: int = 0) -> Cell:
    return Cell(cell_id=f"c{n:010x}", label=f"arm {n}", engine="transformers",
                template="transformers/generate.py.j2", model="tiny/model",
                sampling=Sampling(temperature=0.0, max_tokens=8),
                workload=CellWorkload(kind="offline", num_prompts=1, input_len=8),
                replica=replica)


def _plan(n_cells: int, runs: int = 5) -> Plan:
    cells = [_cell(i) for i in range(n_cells - 1)] + [_cell(99, replica=1)]
    noise = Comparison(name="A/A arm 0", kind="noise", numerator=[cells[-1].cell_id],
                       denominator=[cells[0].cell_id])
    return Plan(plan_hash="0123abcd4567", engine="transformers", gpu_kind="cpu",
                question="q", cells=cells, comparisons=[noise], budget=Budget(runs=runs))


def _adjacent(order: list[str], a: str, b: str) -> bool:
    return any({x, y} == {a, b} for x, y in itertools.pairwise(order))


def test_seed_depends_on_plan_and_round_only() -> None:
    assert round_seed("abc", 0) == round_seed("abc", 0)
    assert len({round_seed("abc", r) for r in range(5)} | {round_seed("abd", 0)}) == 6


def test_order_is_a_reproducible_permutation_that_varies_by_round() -> None:
    cells = [f"c{i:010x}" for i in range(6)]
    orders = [round_order(cells, plan_hash="h", round_index=r) for r in range(8)]
    assert all(sorted(o) == cells for o in orders)
    assert orders == [round_order(cells, plan_hash="h", round_index=r) for r in range(8)]
    assert len({tuple(o) for o in orders}) > 1


@pytest.mark.parametrize("n_cells", [3, 4, 5, 8])
def test_replica_is_never_next_to_its_original(n_cells: int) -> None:
    plan = _plan(n_cells)
    (orig, rep), = aa_pairs(plan)
    ids = [c.cell_id for c in plan.cells]
    for r in range(60):
        order = round_order(ids, plan_hash=plan.plan_hash, round_index=r,
                            pairs=aa_pairs(plan), previous=orig)
        assert sorted(order) == sorted(ids)
        assert not _adjacent(order, orig, rep)
        assert order[0] != rep  # `previous` counts as a neighbour


def test_two_cells_may_touch() -> None:
    order = round_order(["c0000000001", "c0000000002"], plan_hash="h", round_index=0,
                        pairs=[("c0000000001", "c0000000002")])
    assert sorted(order) == ["c0000000001", "c0000000002"]


def test_dense_pairs_fall_back_to_search() -> None:
    cells = ["a", "b", "c", "d"]
    pairs = [("a", "b"), ("b", "c"), ("c", "d")]
    for r in range(20):
        order = round_order(cells, plan_hash="x", round_index=r, pairs=pairs)
        assert not any(_adjacent(order, a, b) for a, b in pairs)


@pytest.mark.parametrize(("total", "rounds", "want"), [
    (5, 1, [5]), (5, 2, [3, 2]), (2, 5, [1, 1]), (0, 3, []), (6, 3, [2, 2, 2]),
])
def test_split_runs(total: int, rounds: int, want: list[int]) -> None:
    assert split_runs(total, rounds) == want


def test_a_round_holds_only_cells_that_still_need_runs() -> None:
    plan = _plan(4)
    ids = [c.cell_id for c in plan.cells]
    slots = schedule_round(plan, 3, {ids[0]: 2, ids[1]: 0, ids[2]: 7}, runs_per_slot=5)
    assert {s.cell_id: s.runs for s in slots} == {ids[0]: 2, ids[2]: 5}
    assert {s.round for s in slots} == {3}
    # The order depends on the plan, not on the order of `needs`.
    again = schedule_round(plan, 3, {ids[2]: 7, ids[0]: 2}, runs_per_slot=5)
    assert again == slots


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_initial_schedule_covers_the_budget_and_keeps_pairs_apart(rounds: int) -> None:
    plan = _plan(4, runs=5)
    slots = initial_schedule(plan, rounds=rounds)
    per_cell = Counter()  # type: Counter[str]
    for s in slots:
        per_cell[s.cell_id] += s.runs
    assert set(per_cell.values()) == {5}
    assert len({s.round for s in slots}) == rounds
    (orig, rep), = aa_pairs(plan)
    assert not _adjacent([s.cell_id for s in slots], orig, rep)
    assert slots == initial_schedule(plan, rounds=rounds)


def test_default_schedule_is_two_mirrored_rounds() -> None:
    plan = _plan(6, runs=5)
    slots = initial_schedule(plan)
    first = [s.cell_id for s in slots if s.round == 0]
    second = [s.cell_id for s in slots if s.round == 1]
    assert second == first[::-1]
    assert {s.runs for s in slots if s.round == 0} == {3}
    assert {s.runs for s in slots if s.round == 1} == {2}
    # A B | B A: every cell's mean position over the pair is the same, so a steady drift
    # of the machine shifts every arm alike.
    position = {cid: first.index(cid) + len(first) + second.index(cid) for cid in first}
    assert len(set(position.values())) == 1


def test_escalation_rounds_mirror_and_split_odd_counts() -> None:
    plan = _plan(4)
    ids = [c.cell_id for c in plan.cells]
    slots = mirrored_rounds(plan, 6, {ids[0]: 3, ids[1]: 3, ids[2]: 0}, previous=ids[1])
    assert [(s.round, s.runs) for s in slots[:2]] == [(6, 2), (6, 2)]
    assert [s.cell_id for s in slots[2:]] == [s.cell_id for s in slots[:2]][::-1]
    assert [(s.round, s.runs) for s in slots[2:]] == [(7, 1), (7, 1)]
    one = mirrored_rounds(plan, 2, {ids[0]: 1})
    assert [(s.cell_id, s.round, s.runs) for s in one] == [(ids[0], 2, 1)]
    assert mirrored_rounds(plan, 2, {ids[0]: 0}) == []


def test_an_escalation_round_reverses_the_round_before() -> None:
    plan = _plan(4)
    ids = [c.cell_id for c in plan.cells]
    before = [ids[2], ids[0], ids[1]]
    slots = mirror_round(plan, 5, {ids[0]: 2, ids[1]: 3, ids[2]: 0}, before=before)
    assert [(s.cell_id, s.round, s.runs) for s in slots] == [(ids[1], 5, 3), (ids[0], 5, 2)]
    # A cell that did not run in the round before goes first.
    fresh = mirror_round(plan, 5, {ids[0]: 2, ids[2]: 2}, before=[ids[0]])
    assert [s.cell_id for s in fresh] == [ids[2], ids[0]]
    assert mirror_round(plan, 5, {ids[0]: 0}, before=before) == []


def test_an_escalation_round_can_repeat_the_order_of_the_round_before() -> None:
    plan = _plan(4)
    ids = [c.cell_id for c in plan.cells]
    before = [ids[2], ids[0], ids[1]]
    slots = mirror_round(plan, 5, {ids[0]: 2, ids[1]: 2, ids[2]: 2}, before=before,
                         turn=False)
    assert [s.cell_id for s in slots] == before


def _rounds(*rounds: tuple[list[str], int]) -> list[Slot]:
    return [Slot(cell_id=cid, runs=runs, round=r)
            for r, (order, runs) in enumerate(rounds) for cid in order]


def test_turns_even_out_the_runs_each_order_has_had() -> None:
    ab, ba = ["a", "b"], ["b", "a"]
    assert balanced_turn([]) is True
    # After the plan's 3 + 2: the last order (B A) is behind, so it runs again.
    assert balanced_turn(_rounds((ab, 3), (ba, 2))) is False
    # Then A B has 9 against 4 + 9: turn back to it, and so on.
    assert balanced_turn(_rounds((ab, 3), (ba, 2), (ba, 3))) is True
    # Equal runs: plain mirroring (a tie turns).
    assert balanced_turn(_rounds((ab, 2), (ba, 2))) is True
    assert balanced_turn(_rounds((ab, 2), (ba, 2), (ab, 2))) is True
    # Strict alternation after 3 + 2 would keep A B ahead at every odd look; balancing
    # keeps the lean within one round of 2 runs.
    order, lean = ab, 0
    history = [(ab, 3), (ba, 2)]
    for _ in range(10):
        last = history[-1][0]
        order = last[::-1] if balanced_turn(_rounds(*history)) else last
        history.append((order, 2))
        lean = sum((1 if o == ab else -1) * m * m for o, m in history)
        assert abs(lean) <= 5


def test_a_fresh_order_or_a_lone_cell_does_not_lean() -> None:
    # c b a is neither a b c nor its reverse restricted to the last round's cells.
    assert balanced_turn(_rounds((["c", "a", "b"], 5), (["a", "b", "c"], 2))) is True
    assert balanced_turn(_rounds((["a", "b"], 5), (["a"], 2))) is True


def test_an_escalation_round_keeps_a_replica_apart_from_its_original() -> None:
    plan = _plan(4)
    ids = [c.cell_id for c in plan.cells]  # ids[-1] replicates ids[0]
    before = [ids[0], ids[1], ids[-1], ids[2]]
    needs = {ids[0]: 2, ids[-1]: 2, ids[2]: 2}  # reversed: ids[2], replica, original
    order = [s.cell_id for s in mirror_round(plan, 3, needs, before=before)]
    assert sorted(order) == sorted(needs)
    assert not _adjacent(order, ids[0], ids[-1])
