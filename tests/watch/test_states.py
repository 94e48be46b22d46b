"""judge(): each watch state from a step's reading and the rows before it."""

from __future__ import annotations

import pytest

from triagebot.watch.models import Ratio, Reading, WatchRow
from triagebot.watch.states import direction_of, judge, stop_after

SLOWER = Ratio(value=0.58, ci_low=0.55, ci_high=0.61, verdict="DIFFERENT", n_a=24, n_b=24)
MUCH_SLOWER = Ratio(value=0.40, ci_low=0.38, ci_high=0.42, verdict="DIFFERENT", n_a=24, n_b=24)
SAME = Ratio(value=1.01, ci_low=0.99, ci_high=1.02, verdict="SAME", n_a=24, n_b=24)
FASTER = Ratio(value=1.30, ci_low=1.25, ci_high=1.35, verdict="DIFFERENT", n_a=24, n_b=24)
UNKNOWN = Ratio(value=0.97, ci_low=0.90, ci_high=1.05, verdict="UNKNOWN",
                reason="the interval spans 1 and the margin")
WORSE_CHANGE = Ratio(value=0.69, ci_low=0.64, ci_high=0.74, verdict="DIFFERENT")
SMALL_CHANGE = Ratio(value=0.985, ci_low=0.96, ci_high=1.01, verdict="SAME")


def row(release: str, state: str) -> WatchRow:
    return WatchRow(release=release, state=state, reason="-")  # type: ignore[arg-type]


def reading(**kw: object) -> Reading:
    return Reading(release="0.32.0", against="0.25.1", comparison="spec/no_spec @ graph",
                   **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "earlier", "state", "words"), [
    ({"ratio": SLOWER, "change": SMALL_CHANGE}, ["reproduced"], "reproduced",
     "0.58x [0.55, 0.61] (24 v 24 runs): DIFFERENT below 1 as at 0.25.1"),
    ({"ratio": SAME}, ["reproduced"], "fixed", "SAME, within ±3% at 0.32.0"),
    ({"ratio": FASTER}, ["reproduced"], "fixed", "DIFFERENT above 1, reversed"),
    ({"ratio": MUCH_SLOWER, "change": WORSE_CHANGE}, ["reproduced"], "worse",
     "0.69x of 0.25.1's ratio"),
    ({"ratio": SLOWER, "change": SMALL_CHANGE}, ["reproduced", "fixed"], "back",
     "at 0.32.0, after 0.21.0 had fixed it"),
    # a release that could not tell in between does not hide the fixed one before it
    ({"ratio": SLOWER}, ["fixed", "broken", "inconclusive"], "back", "after 0.20.0 had"),
    ({"ratio": UNKNOWN}, ["reproduced"], "inconclusive", "the interval spans 1"),
    ({"crash": "TypeError: forward() got an unexpected keyword argument"}, [], "broken",
     "0.32.0 fails: TypeError: forward() got an unexpected keyword argument"),
    ({"invalid": "config no longer valid: vLLM 0.32.0 does not accept speculative_config "
                 "key 'disable_by_batch_size'"}, ["reproduced"], "config_invalid",
     "key 'disable_by_batch_size'"),
])
def test_each_state_has_its_reason(kw: dict[str, object], earlier: list[str], state: str,
                                   words: str) -> None:
    rows = [row(f"0.2{i}.0", s) for i, s in enumerate(earlier)]  # oldest first
    got, reason = judge(reading(**kw), rows, "below")
    assert got == state
    assert words in reason


def test_worse_needs_the_change_beyond_the_margin() -> None:
    # DIFFERENT, but only 2 % further from 1 than the last release: still reproduced
    slight = Ratio(value=0.98, ci_low=0.975, ci_high=0.985, verdict="DIFFERENT")
    assert judge(reading(ratio=SLOWER, change=slight), [], "below")[0] == "reproduced"


def test_a_first_release_has_nothing_to_be_worse_than() -> None:
    first = Reading(release="0.25.1", comparison="spec/no_spec @ graph", ratio=SLOWER)
    state, reason = judge(first, [], "below")
    assert (state, reason.endswith("DIFFERENT below 1")) == ("reproduced", True)


def test_a_report_of_a_ratio_too_high_is_fixed_when_it_falls() -> None:
    assert direction_of(None, FASTER) == "above"
    assert direction_of("spec_slower_than_baseline", FASTER) == "below"
    assert judge(reading(ratio=SLOWER), [], "above")[0] == "fixed"
    assert judge(reading(ratio=FASTER), [], "above")[0] == "reproduced"


def test_stop_after_counts_fixed_releases_in_a_row() -> None:
    rows = [row("a", "reproduced"), row("b", "fixed"), row("c", "broken"), row("d", "fixed")]
    assert stop_after(rows, 2)
    assert not stop_after(rows, 3)
    assert not stop_after([*rows, row("e", "back")], 1)
