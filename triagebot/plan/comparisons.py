"""The comparisons that answer a plan's question, named the way a maintainer reads them."""

from __future__ import annotations

import itertools

from triagebot.plan.axes import Axis, Level
from triagebot.plan_model import Comparison

# cells keyed by the level names along every axis, in axis order
Grid = dict[tuple[str, ...], str]


def _where(axes: list[Axis], skip: set[int], combo: tuple[Level, ...]) -> str:
    names = [lv.name for i, lv in enumerate(combo) if i not in skip]
    return f" @ {' '.join(names)}" if names else ""


def _key(axes: list[Axis], fixed: dict[int, Level], rest: tuple[Level, ...]) -> tuple[str, ...]:
    return tuple(lv.name for lv in _key_levels(axes, fixed, rest))


def _others(axes: list[Axis], skip: set[int]) -> list[tuple[Level, ...]]:
    return list(itertools.product(*(a.levels for i, a in enumerate(axes) if i not in skip)))


def build_comparisons(axes: list[Axis], grid: Grid, primary: int) -> list[Comparison]:
    """Ratios along every axis in every context, and the ratio of ratios when the
    primary axis crosses one two-level axis."""
    out: list[Comparison] = []
    if not axes:
        return out
    p = axes[primary]
    # The primary axis first: its comparisons are the report's main question.
    order = [primary, *(j for j in range(len(axes)) if j != primary)]
    for j in order:
        axis = axes[j]
        for level in axis.levels[1:]:
            for rest in _others(axes, {j}):
                num = grid[_key(axes, {j: level}, rest)]
                den = grid[_key(axes, {j: axis.baseline}, rest)]
                where = _where(axes, {j}, _key_levels(axes, {j: level}, rest))
                out.append(Comparison(
                    name=f"{level.name}/{axis.baseline.name}{where}", numerator=[num],
                    denominator=[den],
                    question=f"{level.name} vs {axis.baseline.name}"
                             f"{where.replace(' @ ', ' under ')}"))
    if len(axes) == 2 and len(p.levels) >= 2 and len(axes[1 - primary].levels) == 2:
        other = axes[1 - primary]
        for level in p.levels[1:]:
            top = f"{level.name}/{p.baseline.name} @ {other.treatment.name}"
            bottom = f"{level.name}/{p.baseline.name} @ {other.baseline.name}"
            out.append(Comparison(
                name=f"({top}) / ({bottom})", kind="interaction", of=[top, bottom],
                question=f"does {other.treatment.name} change what {level.name} is worth "
                         f"relative to {other.baseline.name}"))
    return out


def _key_levels(axes: list[Axis], fixed: dict[int, Level],
                rest: tuple[Level, ...]) -> tuple[Level, ...]:
    it = iter(rest)
    return tuple(fixed[i] if i in fixed else next(it) for i in range(len(axes)))


def noise_comparison(first: str, replica: str, label: str) -> Comparison:
    return Comparison(name=f"A/A {label}", kind="noise", numerator=[replica],
                      denominator=[first],
                      question="how far apart two runs of one configuration land: the "
                               "noise band every verdict is judged against")
