"""The step logic: which point to test next, what a verdict does to the range, and when
it is over.

Indices are positions in `BisectRange.points`: index 0 holds the old behaviour and the
last index the new one. A step's verdict is good, bad or skip (UNKNOWN after escalation,
or a build/install failure, as `git bisect skip`): in the regress direction good is the
old behaviour and bad the new; with regress=success the other way round. Only points
strictly between the last old and the first new are ever tested, so verdicts cannot
contradict each other; a skipped point is never tested again and the probe moves to the
untested point nearest the middle. The point a search ends on is run twice (a third time
when the two disagree) unless its verdict was overwhelming: a false "bad" from the 1 %
error budget of one step would otherwise be the answer. With no skips the search takes
ceil(log2 N) steps plus that one for N candidates; the ends are taken as given (as
`git bisect` does) and their own repro runs are the check a maintainer can ask for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from triagebot.bisect.ranges import BisectRange, Direction, Level
from triagebot.frozen import Frozen

StepVerdict = Literal["good", "bad", "skip"]
# A verdict this far past the step's own 1 % error budget needs no second run: a false
# one happens about once in 10,000 bisects.
STRONG_P = 1e-4
State = Literal["old", "new", "skip"]


class Step(Frozen):
    """One finished step: the point, its three-way verdict and what it rests on."""

    point: str
    verdict: StepVerdict
    level: Level = "release"
    reason: str = ""
    measure: str = ""  # e.g. "spec/no_spec 0.82x [0.78, 0.86] (12 v 12 runs): DIFFERENT"
    runs: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0.0)
    # The p-value of the main comparison where a statistical test decided the step.
    p_value: float | None = Field(default=None, ge=0.0, le=1.0)
    # An endpoint's own check before a search that starts at commits: outside the search.
    end: bool = False


class Outcome(Frozen):
    """Where a search stands: the bracket, what was skipped inside it, and whether the
    first changed point is known exactly."""

    last_old: str
    first_new: str
    # Points between last_old and first_new that were skipped: the change may be at any
    # of them or at first_new (git bisect's "only skipped commits left").
    skipped: list[str] = Field(default_factory=list)
    untested: list[str] = Field(default_factory=list)
    done: bool
    exact: bool
    steps: int


def state(verdict: StepVerdict, direction: Direction) -> State:
    if verdict == "skip":
        return "skip"
    old = "good" if direction == "regress" else "bad"
    return "old" if verdict == old else "new"


def _point_states(rng: BisectRange, steps: list[Step]) -> dict[int, str]:
    """Each tested index's state: the majority of its good/bad verdicts ("tie" while
    they disagree evenly), "skip" where it was only ever skipped."""
    index = {p: k for k, p in enumerate(rng.points)}
    votes: dict[int, list[State]] = {}
    for step in steps:
        k = index.get(step.point)
        if k is None:
            raise ValueError(f"step point {step.point!r} is not in the range")
        votes.setdefault(k, []).append(state(step.verdict, rng.direction))
    states: dict[int, str] = {}
    for k, vs in votes.items():
        old, new = vs.count("old"), vs.count("new")
        states[k] = ("skip" if old == new == 0 else "old" if old > new
                     else "new" if new > old else "tie")
    return states


def _bounds(rng: BisectRange, steps: list[Step]) -> tuple[int, int, dict[int, str]]:
    states = _point_states(rng, steps)
    end = len(rng.points) - 1
    olds = [k for k, s in states.items() if s == "old"]
    lo = max([0, *olds])
    news = [k for k, s in states.items() if s == "new" and k > lo]
    hi = min([end, *news])
    if any(s == "new" for k, s in states.items() if k < lo) or (
            any(s in ("old", "new") for k, s in states.items() if k in (0, end))):
        # Verdicts that contradict the bracket (a store from another range, or an end
        # judged against its given role): refuse rather than bisect a range they do not
        # describe.
        raise ValueError(f"the steps contradict the bracket {rng.points[lo]}.."
                         f"{rng.points[hi]}")
    return lo, hi, states


def _settled(steps: list[Step], point: str) -> bool:
    votes = [s for s in steps if s.point == point and s.verdict != "skip"]
    return len(votes) >= 2 or any(s.p_value is not None and s.p_value < STRONG_P
                                  for s in votes)


def next_index(rng: BisectRange, steps: list[Step], *, confirm: bool = True) -> int | None:
    """The index to test next, or None when the search is over.

    Inside the bracket, a point whose verdicts disagree evenly is tested again first;
    then the untested point nearest the middle. With `confirm`, the point the search
    ends on (the first new one, unless it is the given end) is run a second time unless
    its test was overwhelming (p < STRONG_P): a single false verdict there would
    otherwise be the answer, and a disagreement goes to a third run.
    """
    lo, hi, states = _bounds(rng, steps)
    ties = [k for k in range(lo + 1, hi + 1) if states.get(k) == "tie"]
    if ties:
        return ties[0]
    pool = [k for k in range(lo + 1, hi) if k not in states]
    if pool:
        mid = (lo + hi) // 2
        return min(pool, key=lambda k: (abs(k - mid), k))
    end = len(rng.points) - 1
    if confirm and hi != end and not _settled(steps, rng.points[hi]):
        return hi
    return None


def next_point(rng: BisectRange, steps: list[Step], *, confirm: bool = True) -> str | None:
    k = next_index(rng, steps, confirm=confirm)
    return None if k is None else rng.points[k]


def outcome(rng: BisectRange, steps: list[Step], *, confirm: bool = True) -> Outcome:
    lo, hi, states = _bounds(rng, steps)
    inside = range(lo + 1, hi)
    # A point whose runs disagree evenly is as undecided as a skipped one.
    skip_in = [rng.points[k] for k in inside if states.get(k) in ("skip", "tie")]
    untested = [rng.points[k] for k in inside if k not in states]
    done = next_index(rng, steps, confirm=confirm) is None
    return Outcome(last_old=rng.points[lo], first_new=rng.points[hi], skipped=skip_in,
                   untested=untested, done=done, exact=done and not skip_in,
                   steps=len(steps))


def clean_steps_bound(candidates: int) -> int:
    """The most steps a search with a clean predicate (no skips) takes: ceil(log2 N) to
    find the point, and one to confirm it."""
    return max(0, (candidates - 1).bit_length()) + (1 if candidates > 1 else 0)


def step_budget(candidates: int) -> int:
    """Steps a bisect may spend before it stops with the bracket it has: room for the
    skips and re-runs noise causes, without walking a whole range of unbuildable
    points one by one."""
    clean = clean_steps_bound(candidates)
    return clean + max(4, clean // 2)
