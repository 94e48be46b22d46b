"""A small text chart of one mode's step split: a bar per part, per cell, in ms per step.

Plain text in a fenced block reads the same in a terminal and on GitHub, and the cells'
bars share one scale, so a spec step sits beside the no-spec step it is compared with.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.analyze.step_split_models import CellSplit

WIDTH = 28
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, top: float, width: int = WIDTH) -> str:
    """`value` as a bar of `width` characters at full scale `top` (eighths of a cell)."""
    if top <= 0 or value <= 0:
        return ""
    eighths = round(min(value / top, 1.0) * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def step_chart(title: str, splits: Sequence[CellSplit]) -> str:
    """The chart's lines: per cell a header, a bar per measured part, and the step."""
    shown = [s for s in splits if s.step_s]
    top = max((s.step_s or 0.0) for s in shown) if shown else 0.0
    words = max((len(p.words) for s in shown for p in s.parts), default=4)
    lines = [f"{title} · ms per step" + (f" · {shown[0].profiler}" if shown else "")]
    for s in shown:
        step = s.step_s or 0.0
        lines.append(f"{s.cell_label} ({s.steps} steps)")
        for p in s.parts:
            if p.seconds == 0.0 and not s.speculates:
                continue  # no drafter and no rejection sampler without speculation
            if p.seconds is None:
                lines.append(f"  {p.words:<{words}}  {'':<{WIDTH}}  not measured")
                continue
            share = p.seconds / step if step else 0.0
            lines.append(f"  {p.words:<{words}}  {bar(p.seconds, top):<{WIDTH}}  "
                         f"{p.seconds * 1e3:7.2f}  {share:4.0%}")
        lines.append(f"  {'step':<{words}}  {bar(step, top):<{WIDTH}}  {step * 1e3:7.2f}")
    return "\n".join(lines)
