"""The step logic: which point to test next, what a verdict does to the range, and when
it is over.

Indices are positions in `BisectRange.points`: index 0 holds the old behaviour and the
last index the new one. A step's verdict is good, bad or skip (UNKNOWN after escalation,
or a build/install failure, as `git bisect skip`): in the regress direction good is the
old behaviour and bad the new; with regress=success the other way round. Only points
strictly between the last old and the first new are ever tested, so verdicts cannot
contradict each other; a skipped point is never tested again and the probe moves to the
untested point nearest the middle. With no skips the search takes ceil(log2 N) steps for
N candidates; the ends are taken as given (as `git bisect` does) and their own repro runs
are the check a maintainer can ask for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.bisect.ranges import BisectRange, Direction

StepVerdict = Literal["good", "bad", "skip"]
State = Literal["old", "new", "skip"]


class Step(BaseModel):
    """One finished step: the point, its three-way verdict and what it rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    point: str
    verdict: StepVerdict
    reason: str = ""
    measure: str = ""  # e.g. "spec/no_spec 0.82x [0.78, 0.86] (12 v 12 runs): DIFFERENT"
    runs: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0.0)


class Outcome(BaseModel):
    """Where a search stands: the bracket, what was skipped inside it, and whether the
    first changed point is known exactly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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


def _bounds(rng: BisectRange, steps: list[Step]) -> tuple[int, int, set[int]]:
    index = {p: k for k, p in enumerate(rng.points)}
    lo, hi, skipped = 0, len(rng.points) - 1, set()
    for step in steps:
        k = index.get(step.point)
        if k is None:
            raise ValueError(f"step point {step.point!r} is not in the range")
        s = state(step.verdict, rng.direction)
        if s == "skip":
            skipped.add(k)
        elif s == "old" and lo < k < hi:
            lo = k
        elif s == "new" and lo < k < hi:
            hi = k
        elif not lo < k < hi:
            # A verdict outside the bracket (a resumed store from another range): refuse
            # rather than bisect a range the steps do not describe.
            raise ValueError(f"step at {step.point} lies outside the bracket "
                             f"{rng.points[lo]}..{rng.points[hi]}")
    return lo, hi, skipped


def next_index(rng: BisectRange, steps: list[Step]) -> int | None:
    """The index to test next, or None when no untested point is left in the bracket."""
    lo, hi, skipped = _bounds(rng, steps)
    pool = [k for k in range(lo + 1, hi) if k not in skipped]
    if not pool:
        return None
    mid = (lo + hi) // 2
    return min(pool, key=lambda k: (abs(k - mid), k))


def next_point(rng: BisectRange, steps: list[Step]) -> str | None:
    k = next_index(rng, steps)
    return None if k is None else rng.points[k]


def outcome(rng: BisectRange, steps: list[Step]) -> Outcome:
    lo, hi, skipped = _bounds(rng, steps)
    inside = range(lo + 1, hi)
    skip_in = [rng.points[k] for k in inside if k in skipped]
    untested = [rng.points[k] for k in inside if k not in skipped]
    return Outcome(last_old=rng.points[lo], first_new=rng.points[hi], skipped=skip_in,
                   untested=untested, done=not untested, exact=not untested and not skip_in,
                   steps=len(steps))


def clean_steps_bound(candidates: int) -> int:
    """The most steps a search with a clean predicate (no skips) takes: ceil(log2 N)."""
    return max(0, (candidates - 1).bit_length())
