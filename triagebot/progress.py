"""Where a long command stands, as one model for every display.

`triagebot repro`, `bisect` and `runner setup`, the runner in the App and the demo all
emit the same `Event`s: installing an engine (with its size so far), building a stand-in,
starting an engine, cell k of n with its runs, escalation rounds, the estimated time
left. `describe` turns one into the line people read, the same line on a terminal's
progress bar, in a CI log (one line per step), on the App's job page and in the sticky
comment's "Now:" line. `Pace` estimates the time left from what the runs so far took.
"""

from __future__ import annotations

import math

from pydantic import BaseModel


class Event(BaseModel):
    """Progress for a UI: what just started or finished, and where the plan stands."""

    # provision (environment, stand-ins; `message` says which) | engine (an engine starts)
    # | start | done (one cell's round) | round | analyse
    kind: str
    cell_id: str | None = None
    label: str = ""
    round: int = 0
    runs: int = 0
    status: str | None = None
    runs_done: int = 0
    runs_planned: int = 0
    elapsed_s: float = 0.0
    eta_s: float | None = None
    message: str = ""
    # 1-based position of the cell in the plan, and how many cells the plan has.
    cell_index: int = 0
    cells: int = 0
    # 0 for the plan's own rounds; n for the n-th round added while a verdict is UNKNOWN.
    escalation: int = 0


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "unknown"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe(event: Event) -> str:
    """One line saying what is happening now and, where known, how long is left."""
    cell = f"cell {event.cell_index} of {event.cells}: " if event.cells else ""
    rounds = f"round {event.round + 1}" + (
        f" (escalation {event.escalation})" if event.escalation else "")
    share = (f"{event.runs_done}/{event.runs_planned} runs"
             if event.runs_planned else "")
    left = f"about {duration(event.eta_s)} left" if event.eta_s is not None else ""
    if event.kind == "provision":
        return event.message.strip() or "preparing the environment"
    if event.kind == "engine":
        return _join(f"starting the engine of {cell}{event.label}", share, left)
    if event.kind == "start":
        runs = f"{event.runs} run{'' if event.runs == 1 else 's'}"
        return _join(f"{rounds} · {cell}{event.label}", runs, share, left)
    if event.kind == "done":
        return _join(f"{rounds} · {cell}{event.label}: {event.status or 'done'}", share, left)
    if event.kind == "round":
        return _join(rounds, share, left)
    if event.kind == "analyse":
        return "analysing the runs"
    return event.message or event.kind


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


class Pace:
    """The time left, from what the rounds so far took. A round that started an engine
    and a round on an engine already running are priced apart: a live engine starts once
    and then runs for seconds, and pricing every round alike would charge each remaining
    round a share of the starts."""

    def __init__(self, estimate_s: float, cells: int) -> None:
        # The plan's own estimate of a cell, until a start has been measured.
        self._per_cell = estimate_s / max(cells, 1)
        self._start_walls: list[float] = []
        self._run_s = 0.0
        self._runs = 0

    def add(self, wall_s: float, runs: int, started_engine: bool) -> None:
        if started_engine:
            self._start_walls.append(wall_s)
        else:
            self._run_s += wall_s
            self._runs += runs

    def left(self, starts: int, runs: int) -> float:
        """Seconds for `starts` rounds that start an engine and `runs` runs on live ones."""
        start = (sum(self._start_walls) / len(self._start_walls) if self._start_walls
                 else self._per_cell)
        # Until a round on a running engine has been timed, its runs are not priced: a
        # start's wall time cannot be split into the start and its runs.
        per_run = self._run_s / self._runs if self._runs else 0.0
        return starts * start + runs * per_run
