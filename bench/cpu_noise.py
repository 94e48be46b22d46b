"""Run-to-run noise of vLLM CPU cells on the `cpu` runner, and what cuts it, side by side.

Run from the repository root: `.venv/bin/python bench/cpu_noise.py [--version 0.25.1]
[--rounds 4] [--runs 3] [--min-run-s 2]`. One configuration (no speculation, eager, the
plan's CPU workload) is measured as an A/A pair, two engines of the same cell, under three
ways of running, interleaved round by round (the options' order mirrored every round) so
that the machine's load falls on all of them alike:

* `restart, 1 batch`: what the runner did before: every round starts each engine afresh,
  and a measured run is one batch (4 prompts of 96 tokens, a fraction of a second);
* `live, 1 batch`: each engine started once and kept between rounds, paused while the
  other runs (`triagebot/run/live.py`), runs still one batch;
* `live, >= N s`: live engines, each run repeating its batch for at least `--min-run-s`
  seconds of decoding (`TRIAGEBOT_MIN_RUN_S`, what the runner does now).

Within a round the two engines run back to back (A B, the next round B A). For each way
and each metric, wall-clock tok/s and CPU tok/s (output tokens per CPU second of the
engine's whole process tree, every thread), it prints the within-cell CV (of all runs of
a cell, the two cells averaged, as the report's per-cell CV), the within-round CV (the
spread the verdict's blocked t test sees) and the A/A difference (ratio of the two cells'
medians, less 1; a perfect runner gives 0), then the engine starts and the wall time each
way cost. The 1-minute load average at the start and end is printed: on a shared machine
the figures are those of that load.

It takes about `rounds x (2 restarts + 2 x runs x (min-run-s + 1 s))` plus four engine
starts: some 8 minutes on two quiet cores at the defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.vllm_cpu import plan_for
from triagebot.model import Plan, RunMeasurement
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.live import LiveScript
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.shutdown import run_until_stopped
from triagebot.run.supervise import CellOutcome, run_script

WAYS = ("restart, 1 batch", "live, 1 batch", "live, >= {s:g} s")
METRICS = ("wall", "cpu")


def rate(run: RunMeasurement, metric: str) -> float | None:
    if metric == "wall":
        return run.tok_s
    return run.output_tokens / run.cpu_s if run.cpu_s else None


def log_cv(values: list[float]) -> float:
    """CV from the sd of log values (what the verdict works on)."""
    if len(values) < 2:
        return float("nan")
    return math.expm1(statistics.stdev(math.log(v) for v in values))


def within_round_cv(rounds: list[list[float]]) -> float:
    """Pooled CV of the runs about their own round's mean (log scale)."""
    ss = sum(sum((math.log(v) - statistics.mean(map(math.log, r))) ** 2 for v in r)
             for r in rounds if len(r) > 1)
    df = sum(len(r) - 1 for r in rounds if len(r) > 1)
    return math.expm1(math.sqrt(ss / df)) if df else float("nan")


class Way:
    """One way of running the A/A pair: its engines, its results per cell and round."""

    def __init__(self, name: str, plan: Plan, script: Path, python: str,
                 runner_env: dict[str, str], out: Path, *, live: bool, min_run_s: float):
        self.name, self.plan, self.script, self.python = name, plan, script, python
        self.env = {**plan.cells[0].env, **runner_env, "TRIAGEBOT_MIN_RUN_S": str(min_run_s)}
        self.cwd = out  # where the stand-ins are linked (`vllm_cpu.prepare`)
        self.out = out / name.replace(" ", "_").replace(",", "").replace(">=", "ge")
        self.out.mkdir(parents=True, exist_ok=True)
        self.live = live
        self.engines: dict[str, LiveScript] = {}
        self.runs: dict[str, list[list[RunMeasurement]]] = {"A": [], "A'": []}
        self.starts = 0
        self.seconds = 0.0
        self._scratch = contextlib.ExitStack()  # vLLM's sockets, one folder per engine

    def measure(self, cell: str, round_: int, runs: int) -> None:
        began = time.monotonic()
        result = self.out / f"{cell.replace(chr(39), 'p')}-r{round_}.json"
        if self.live:
            outcome = self._live(cell, runs, result)
        else:
            self.starts += 1
            with vllm_cpu.per_run_dirs() as dirs:
                outcome = run_script(self.script, python=self.python,
                                     env={**self.env, **dirs, "TRIAGEBOT_RUNS": str(runs)},
                                     result_path=result,
                                     log_path=result.with_suffix(".log"), wall_limit_s=1800,
                                     silence_limit_s=900, cwd=self.cwd, gpu_settle_s=0)
        self.seconds += time.monotonic() - began
        if outcome.result is None or outcome.result.status != "ok":
            sys.exit(f"{self.name} {cell} round {round_}: "
                     f"{outcome.error or outcome.log_tail[-2000:]}")
        self.runs[cell].append(outcome.result.runs)
        walls = ", ".join(f"{r.tok_s:.0f}" for r in outcome.result.runs)
        print(f"  round {round_} {self.name:<16} {cell:<2}: {walls} tok/s", flush=True)

    def _live(self, cell: str, runs: int, result: Path) -> CellOutcome:
        engine = self.engines.get(cell)
        if engine is None:
            self.starts += 1
            dirs = self._scratch.enter_context(vllm_cpu.per_run_dirs())
            engine = LiveScript(self.script, python=self.python, env={**self.env, **dirs},
                                log_path=self.out / f"{cell.replace(chr(39), 'p')}.log",
                                cwd=self.cwd, silence_limit_s=900)
            self.engines[cell] = engine
        return engine.measure(runs, result, wall_limit_s=1800)

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()
        self._scratch.close()

    def figures(self, metric: str) -> tuple[float, float, float]:
        """(cell CV, within-round CV, A/A difference) for `metric`."""
        cells: dict[str, list[list[float]]] = {}
        for cell, rounds in self.runs.items():
            cells[cell] = [[x for r in rnd if (x := rate(r, metric))] for rnd in rounds]
        flat = {c: [x for rnd in rs for x in rnd] for c, rs in cells.items()}
        cell_cv = statistics.mean(log_cv(v) for v in flat.values())
        within = within_round_cv([r for rs in cells.values() for r in rs])
        aa = statistics.median(flat["A'"]) / statistics.median(flat["A"]) - 1.0
        return cell_cv, within, aa


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.25.1")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3, help="measured runs per engine per round")
    ap.add_argument("--min-run-s", type=float, default=2.0)
    ap.add_argument("--ways", default="0,1,2", help="which ways, by position (default all)")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="triagebot-bench-cpu-noise-"))
    plan = plan_for("vllm", args.version, args.runs, 2)
    env, runner_env = vllm_cpu.prepare(args.version, {c.model for c in plan.cells}, out,
                                       cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE)
    script = next(s for s in render_plan(plan) if s.cell_id)
    path = out / script.filename
    path.write_text(script.text)
    chosen = [int(i) for i in args.ways.split(",")]
    ways = [Way(WAYS[i].format(s=args.min_run_s), plan, path, env.python, runner_env, out,
                live=i > 0, min_run_s=args.min_run_s if i == 2 else 0.0) for i in chosen]
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    try:
        for r in range(args.rounds):
            order = ways if r % 2 == 0 else ways[::-1]
            cells = ("A", "A'") if r % 2 == 0 else ("A'", "A")
            for way in order:
                for cell in cells:
                    way.measure(cell, r, args.runs)
    finally:
        for way in ways:
            way.close()
    print(f"\nvLLM {args.version} on the cpu runner: one cell as an A/A pair, {args.rounds} "
          f"rounds x {args.runs} runs per engine, {os.cpu_count()} cores; load "
          f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{time.monotonic() - began:.0f} s in all; logs in {out}")
    print(f"{'way':<18} {'metric':<6} {'cell CV':>8} {'round CV':>9} {'A/A':>7} "
          f"{'median tok/s':>12} {'starts':>6} {'time s':>7}")
    for way in ways:
        for metric in METRICS:
            cell_cv, within, aa = way.figures(metric)
            every = [x for rs in way.runs.values() for rnd in rs for r in rnd
                     if (x := rate(r, metric))]
            median = statistics.median(every) if every else float("nan")
            print(f"{way.name:<18} {metric:<6} {cell_cv:>8.1%} {within:>9.1%} {aa:>+7.1%} "
                  f"{median:>12.1f} {way.starts:>6} {way.seconds:>7.0f}")


if __name__ == "__main__":
    # Killed or interrupted, it stops the engines it started (a live one may be paused,
    # SIGSTOPped, which no signal but SIGKILL ends) instead of leaving them behind.
    run_until_stopped(main)
