"""The step logic: probes, verdicts in both directions, skips, and the step bound."""

from __future__ import annotations

import math

import pytest

from triagebot.bisect import search
from triagebot.bisect.ranges import BisectRange
from triagebot.bisect.search import Step


def _range(n: int, direction: str = "regress") -> BisectRange:
    points = [f"1.{k}" for k in range(n + 1)]
    good, bad = (points[0], points[-1]) if direction == "regress" else (points[-1], points[0])
    return BisectRange(level="release", direction=direction, points=points,  # type: ignore[arg-type]
                       good=good, bad=bad)


def _drive(rng: BisectRange, first_new: int, broken: set[int] = frozenset()) -> list[Step]:
    """Answer every probe from a known change point; `broken` points are skips."""
    steps: list[Step] = []
    new_word = "bad" if rng.direction == "regress" else "good"
    old_word = "good" if rng.direction == "regress" else "bad"
    while (k := search.next_index(rng, steps)) is not None:
        verdict = "skip" if k in broken else (new_word if k >= first_new else old_word)
        steps.append(Step(point=rng.points[k], verdict=verdict))  # type: ignore[arg-type]
        assert len(steps) <= len(rng.points)
    return steps


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 13, 20, 64, 100])
@pytest.mark.parametrize("direction", ["regress", "success"])
def test_every_change_point_is_found_within_ceil_log2_steps(n: int, direction: str) -> None:
    rng = _range(n, direction)
    bound = math.ceil(math.log2(n)) + 1 if n > 1 else 0
    assert search.clean_steps_bound(n) == bound
    for first_new in range(1, n + 1):
        steps = _drive(rng, first_new)
        out = search.outcome(rng, steps)
        assert out.exact and out.first_new == rng.points[first_new]
        assert out.last_old == rng.points[first_new - 1]
        assert len(steps) <= bound


def test_skip_moves_to_the_nearest_untested_point_and_is_not_retried() -> None:
    rng = _range(8)
    steps = [Step(point="1.4", verdict="skip")]
    assert search.next_point(rng, steps) == "1.3"
    steps = _drive(rng, first_new=6, broken={4})
    assert [s.point for s in steps].count("1.4") == 1
    out = search.outcome(rng, steps)
    assert out.exact and out.first_new == "1.6"


def test_a_skip_next_to_the_change_leaves_an_honest_ambiguity() -> None:
    rng = _range(8)
    steps = _drive(rng, first_new=5, broken={4})
    out = search.outcome(rng, steps)
    assert out.done and not out.exact
    assert out.skipped == ["1.4"] and out.first_new == "1.5" and out.last_old == "1.3"


def test_all_skipped_is_done_but_unresolved() -> None:
    rng = _range(4)
    steps = _drive(rng, first_new=2, broken={1, 2, 3})
    out = search.outcome(rng, steps)
    assert out.done and not out.exact and out.skipped == ["1.1", "1.2", "1.3"]
    assert out.first_new == "1.4" and out.last_old == "1.0"


def test_steps_outside_the_bracket_are_refused() -> None:
    rng = _range(8)
    with pytest.raises(ValueError, match="not in the range"):
        search.next_point(rng, [Step(point="2.0", verdict="bad")])
    steps = [Step(point="1.4", verdict="bad"), Step(point="1.6", verdict="good")]
    with pytest.raises(ValueError, match="contradict the bracket"):
        search.outcome(rng, steps)


def test_state_follows_the_direction() -> None:
    assert search.state("good", "regress") == "old"
    assert search.state("good", "success") == "new"
    assert search.state("bad", "success") == "old"
    assert search.state("skip", "success") == "skip"


def test_the_answer_is_confirmed_and_a_false_bad_is_outvoted() -> None:
    rng = _range(8)
    # 1.4 is old, but its first run says bad (a false positive of the step's test).
    steps = [Step(point="1.4", verdict="bad"), Step(point="1.2", verdict="good"),
             Step(point="1.3", verdict="good")]
    assert search.next_point(rng, steps) == "1.4"  # confirm before answering
    assert not search.outcome(rng, steps).done
    steps.append(Step(point="1.4", verdict="good"))
    assert search.next_point(rng, steps) == "1.4"  # 1 v 1: a third run decides
    steps.append(Step(point="1.4", verdict="good"))
    rest = _drive(rng, first_new=6)
    assert search.next_point(rng, steps) in {s.point for s in rest} | {"1.6", "1.7", "1.5"}
    while (p := search.next_point(rng, steps)) is not None:
        steps.append(Step(point=p, verdict="bad" if int(p.split(".")[1]) >= 6 else "good"))
    out = search.outcome(rng, steps)
    assert out.exact and out.first_new == "1.6" and out.last_old == "1.5"


def test_step_budget_leaves_room_for_noise() -> None:
    assert search.step_budget(512) >= search.clean_steps_bound(512) + 4


def test_an_overwhelming_verdict_needs_no_confirmation() -> None:
    rng = _range(4)
    steps = [Step(point="1.2", verdict="bad", p_value=1e-6),
             Step(point="1.1", verdict="good", p_value=1e-6)]
    assert search.next_point(rng, steps) is None
    assert search.outcome(rng, steps).exact
    weak = [Step(point="1.2", verdict="bad", p_value=0.004),
            Step(point="1.1", verdict="good")]
    assert search.next_point(rng, weak) == "1.2"
