"""The order cells run in, so that compared cells share the machine's conditions.

Work is done in rounds. In a round, every cell that still needs runs is started once and
measures some runs (its script reads TRIAGEBOT_RUNS; its own warm-ups are discarded).
Rounds come in mirrored pairs (ABBA): the first of a pair is shuffled with a seed taken
from the plan hash and the round number, the second runs the same cells in reverse. Every
cell's runs then sit, on average, at the same moment of the pair, so a machine that drifts
steadily (clocks, temperature, a neighbour's load) shifts all arms alike instead of
favouring whichever ran first, and the analysis treats each round as a block
(`triagebot/analyze/blocks.py`). A rerun of the same plan runs in the same order.

An A/A replica never runs right after or right before its original when the round holds
more than two cells: back to back, the two share more conditions than the pairs they are
the yardstick for, and the noise it measures would come out too small.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Mapping, Sequence

from triagebot.frozen import Frozen
from triagebot.plan_model import Plan

_SHUFFLE_TRIES = 200


class Slot(Frozen):
    """One script start: `cell_id` measures `runs` runs in round `round`."""

    cell_id: str
    runs: int
    round: int


def round_seed(plan_hash: str, round_index: int) -> int:
    digest = hashlib.sha256(f"{plan_hash}:{round_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def aa_pairs(plan: Plan) -> list[tuple[str, str]]:
    """(original, replica) for every A/A comparison of the plan."""
    pairs = []
    for comp in plan.comparisons:
        if comp.kind == "noise" and comp.numerator and comp.denominator:
            pairs.append((comp.denominator[0], comp.numerator[0]))
    return pairs


def split_runs(total: int, rounds: int) -> list[int]:
    """`total` runs spread over at most `rounds` rounds, larger shares first."""
    if total <= 0:
        return []
    rounds = max(1, min(rounds, total))
    share, extra = divmod(total, rounds)
    return [share + (1 if i < extra else 0) for i in range(rounds)]


def round_order(
    cell_ids: Sequence[str],
    *,
    plan_hash: str,
    round_index: int,
    pairs: Sequence[tuple[str, str]] = (),
    previous: str | None = None,
) -> list[str]:
    """The cells of one round in a reproducible shuffled order.

    `previous` is the cell that ran last in the round before; it counts as a neighbour of
    this round's first cell.
    """
    cells = list(dict.fromkeys(cell_ids))
    if len(cells) <= 2:
        # Adjacency cannot be avoided; the shuffle still varies which arm goes first.
        random.Random(round_seed(plan_hash, round_index)).shuffle(cells)
        return cells
    apart = _apart(pairs, set(cells))
    rng = random.Random(round_seed(plan_hash, round_index))
    for _ in range(_SHUFFLE_TRIES):
        rng.shuffle(cells)
        if not _clashes(cells, apart, previous):
            return cells
    return _arrange(cells, apart, previous) or cells


def schedule_round(
    plan: Plan,
    round_index: int,
    needs: Mapping[str, int],
    *,
    runs_per_slot: int,
    previous: str | None = None,
) -> list[Slot]:
    """The slots of one round: each cell with runs still owed measures up to
    `runs_per_slot` of them. Cells keep the plan's order before the shuffle, so the
    result depends on the plan, not on how `needs` was built.
    """
    wanted = [c.cell_id for c in plan.cells if needs.get(c.cell_id, 0) > 0]
    order = round_order(wanted, plan_hash=plan.plan_hash, round_index=round_index,
                        pairs=aa_pairs(plan), previous=previous)
    return [Slot(cell_id=cid, runs=min(runs_per_slot, needs[cid]), round=round_index)
            for cid in order]


def mirrored_rounds(
    plan: Plan,
    round_index: int,
    needs: Mapping[str, int],
    *,
    previous: str | None = None,
) -> list[Slot]:
    """`needs` (runs per cell) split over two rounds, the second in the first's reverse
    order: A B | B A. The first round takes the larger half of an odd count."""
    first = {cid: n - n // 2 for cid, n in needs.items() if n > 0}
    second = {cid: n // 2 for cid, n in needs.items() if n > 0}
    if not first:
        return []
    batch = schedule_round(plan, round_index, first, runs_per_slot=max(first.values()),
                           previous=previous)
    back = [Slot(cell_id=s.cell_id, runs=second[s.cell_id], round=round_index + 1)
            for s in reversed(batch) if second[s.cell_id] > 0]
    return batch + back


def mirror_round(
    plan: Plan,
    round_index: int,
    needs: Mapping[str, int],
    *,
    before: Sequence[str],
    turn: bool = True,
) -> list[Slot]:
    """One round for `needs` (runs per cell), in the reverse of the order the round
    before ran its cells (or, with `turn` False, in the same order; `balanced_turn`
    decides): the escalation adds a round per look, each mirroring the last
    (A B | B A | A B ...), so a steady drift cancels over every two rounds as in
    `mirrored_rounds`. Cells that did not run in the round before come first, shuffled;
    an order that would put an A/A replica beside its original is shuffled afresh."""
    wanted = {cid: n for cid, n in needs.items() if n > 0}
    if not wanted:
        return []
    back = [cid for cid in (reversed(before) if turn else before) if cid in wanted]
    new = [c.cell_id for c in plan.cells if c.cell_id in wanted and c.cell_id not in back]
    order = [*round_order(new, plan_hash=plan.plan_hash, round_index=round_index), *back]
    pairs = aa_pairs(plan)
    if _clashes(order, _apart(pairs, set(order)), None):
        order = round_order(order, plan_hash=plan.plan_hash, round_index=round_index,
                            pairs=pairs)
    return [Slot(cell_id=cid, runs=wanted[cid], round=round_index) for cid in order]


def last_round(ran: Sequence[Slot]) -> list[str]:
    """The cells of the latest round in `ran`, in the order they ran."""
    last = max((s.round for s in ran), default=-1)
    return [s.cell_id for s in ran if s.round == last]


def balanced_turn(ran: Sequence[Slot]) -> bool:
    """Whether the next round should reverse the last round's order (True) or repeat it.

    In a round the cells that run first gain (or lose) whatever a steady drift moves over
    the round, and that gain grows with the runs each start measures. Mirrored rounds
    cancel it only when they measure as many runs: the plan's first 5 runs come as 3 then
    2, so strict alternation would leave the first round's order ahead at every later
    look. So every earlier round counts, by the square of its runs per start (the spread
    in time times the weight of its runs in the estimate), for the order it ran in
    relative to the last round's: the same (+), reversed (-) or neither (a fresh shuffle,
    0). The next round takes the orientation that is behind, and on a tie it mirrors.
    """
    ref = last_round(ran)
    lean = 0
    for r in sorted({s.round for s in ran}):
        slots = [s for s in ran if s.round == r]
        order = [s.cell_id for s in slots if s.cell_id in ref]
        common = [c for c in ref if c in order]
        if len(common) < 2:
            continue
        runs = max(s.runs for s in slots)
        if order == common:
            lean += runs * runs
        elif order == common[::-1]:
            lean -= runs * runs
    return lean >= 0


def initial_schedule(plan: Plan, *, runs: int | None = None, rounds: int = 2) -> list[Slot]:
    """Every cell measured `runs` times (the plan's budget by default) over `rounds` rounds.

    Rounds are taken in mirrored pairs (`mirrored_rounds`); an odd last round runs alone.
    Each round costs every cell a start and its warm-ups, so two is the default: the
    fewest that cancel a steady drift.
    """
    total = plan.budget.runs if runs is None else runs
    slots: list[Slot] = []
    previous: str | None = None
    shares = split_runs(total, rounds)
    for index in range(0, len(shares), 2):
        pair = shares[index:index + 2]
        needs = {c.cell_id: sum(pair) for c in plan.cells}
        batch = (mirrored_rounds(plan, index, needs, previous=previous) if len(pair) == 2
                 else schedule_round(plan, index, needs, runs_per_slot=pair[0],
                                     previous=previous))
        slots.extend(batch)
        previous = batch[-1].cell_id if batch else previous
    return slots


# --- keeping replicas apart --------------------------------------------------------------


def _apart(pairs: Sequence[tuple[str, str]], present: set[str]) -> dict[str, set[str]]:
    apart: dict[str, set[str]] = {}
    for a, b in pairs:
        if a in present and b in present and a != b:
            apart.setdefault(a, set()).add(b)
            apart.setdefault(b, set()).add(a)
    return apart


def _clashes(order: Sequence[str], apart: Mapping[str, set[str]], previous: str | None) -> bool:
    chain = [previous, *order] if previous is not None else list(order)
    return any(b in apart.get(a, ()) for a, b in itertools.pairwise(chain))


def _arrange(cells: list[str], apart: Mapping[str, set[str]],
             previous: str | None) -> list[str] | None:
    """A depth-first search for an order without clashes, taking cells in the given order.

    Only reached when many shuffles in a row clashed (many pairs, few cells).
    """
    order: list[str] = []
    left = list(cells)

    def extend(last: str | None) -> bool:
        if not left:
            return True
        for i, cell in enumerate(list(left)):
            if last is not None and cell in apart.get(last, ()):
                continue
            order.append(left.pop(i))
            if extend(cell):
                return True
            left.insert(i, order.pop())
        return False

    return order if extend(previous) else None
