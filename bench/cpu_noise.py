"""Run-to-run noise of vLLM CPU cells on the `cpu` runner, and what cuts it, side by side.

Run from the repository root: `.venv/bin/python bench/cpu_noise.py [--version 0.25.1]
[--rounds 4] [--runs 3] [--ways live:0,workers:0] [--neighbour]`. One configuration (no
speculation, eager, the plan's CPU workload) is measured as an A/A pair, two engines of
the same cell, under each way of running named in `--ways`, interleaved round by round
(the ways' order mirrored every round) so that the machine's load falls on all of them
alike:

* `restart`: every round starts each engine afresh, and a measured run is one batch (4
  prompts of 96 tokens, a fraction of a second): how the runner worked before live
  engines;
* `live:S`: each engine started once, before the first round, and kept between rounds,
  paused while the other runs (`triagebot/run/live.py`), each run repeating its batch
  until S seconds have passed (`TRIAGEBOT_MIN_RUN_S`; `live:0` is one batch). The
  runner's own way, and the default, is `live:S` with S its `MIN_RUN_S`
  (`triagebot/plan/cpu.py`; 0 today: one batch per run): the engine in the script's own
  process, on one torch thread (`IN_PROCESS_ENV`);
* `workers:S`: as `live:S`, with the engine core and its worker in processes of their
  own, vLLM's default layout (and the runner's before `IN_PROCESS_ENV`);
* `/wW` after either, as in `live:2/w2`: warm-ups that repeat their batch for W seconds
  each (`TRIAGEBOT_WARMUP_S`) instead of the runner's one batch each;
* `/pN` after either, as in `live:0/p2`: each round measured as N blocks of one run per
  engine (A A' | A' A ...) instead of one block of `--runs` runs per engine.

Every round also times a fixed piece of work (a matrix product repeated for 2 s, on one
thread in a process of its own), the machine's floor: no way of running an engine is
steadier than the machine it runs on, and on a virtual machine whose host is shared the
floor is not zero.

`--neighbour` keeps one core busy beside the measurement (a process that only spins, as
a neighbour's job would), for the "busy neighbour core" figure.

Within a round the two engines run back to back (A A', the next round A' A). For each way
and each metric, wall-clock tok/s (what the verdicts use) and CPU tok/s (output tokens
per CPU second of the engine's whole process tree, every thread), it prints the
within-cell CV of each cell (A and its replica, headed A2: of all its runs, on the log
scale, as the verdict sees them), the within-round CV (the spread the verdict's blocked t
test sees) and the A/A ratio (A2 over A, the geometric-mean ratio within rounds, as the
report's A/A pair gives it; a perfect runner gives 1.000) with the half-width of its 95 %
interval from the blocks' differences (`+-`) and that half-width scaled to one minute of
measuring (`+- 1min`: what the way's time buys, whatever its runs' length), then the
engine starts and the wall time each way cost. The 1-minute load average at the start
and end is printed: on a shared machine the figures are those of that load.

It takes about `rounds x 2 x runs x (S + 0.5 s)` per live way plus two engine starts
(about 30 s each on two quiet cores), `rounds x 2` starts for `restart`: some 3 minutes
at the defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.vllm_cpu import plan_for
from triagebot.plan import cpu as cpu_plan
from triagebot.plan_model import Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.live import LiveScript
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.shutdown import run_until_stopped
from triagebot.run.supervise import CellOutcome, Limits, ScriptPaths, run_script
from triagebot.run_result import RunMeasurement

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


def block_diffs(a: list[list[float]], b: list[list[float]]) -> list[float]:
    """Per round (block) where both ran: B's mean log rate less A's."""
    return [statistics.mean(map(math.log, rb)) - statistics.mean(map(math.log, ra))
            for ra, rb in zip(a, b, strict=False) if ra and rb]


def aa_ratio(a: list[list[float]], b: list[list[float]]) -> float:
    """exp of the mean over rounds of the difference of the two cells' mean log rate (the
    round-blocked estimate the report's A/A pair uses), B over A."""
    diffs = block_diffs(a, b)
    return math.exp(statistics.mean(diffs)) if diffs else float("nan")


def within_round_cv(rounds: list[list[float]]) -> float:
    """Pooled CV of the runs about their own round's mean (log scale)."""
    ss = sum(sum((math.log(v) - statistics.mean(map(math.log, r))) ** 2 for v in r)
             for r in rounds if len(r) > 1)
    df = sum(len(r) - 1 for r in rounds if len(r) > 1)
    return math.expm1(math.sqrt(ss / df)) if df else float("nan")


class Way:
    """One way of running the A/A pair: its engines, its results per cell and round."""

    def __init__(self, name: str, plan: Plan, script: Path, python: str,
                 runner_env: dict[str, str], out: Path, *, live: bool, min_run_s: float,
                 warmup_s: float | None = None, pairs: int = 0):
        self.name, self.plan, self.script, self.python = name, plan, script, python
        self.env = {**plan.cells[0].env, **runner_env, "TRIAGEBOT_MIN_RUN_S": str(min_run_s)}
        if warmup_s is not None:
            self.env["TRIAGEBOT_WARMUP_S"] = str(warmup_s)
        self.cwd = out  # where the stand-ins are linked (`vllm_cpu.prepare`)
        self.out = out / name.replace(" ", "_").replace(",", "").replace(">=", "ge")
        self.out.mkdir(parents=True, exist_ok=True)
        self.live = live
        self.pairs = pairs
        self.measuring_s = 0.0
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
                                     paths=ScriptPaths(result, result.with_suffix(".log")),
                                     limits=Limits(wall_limit_s=1800, silence_limit_s=900,
                                                   gpu_settle_s=0), cwd=self.cwd)
        self.seconds += time.monotonic() - began
        self.measuring_s += time.monotonic() - began
        if outcome.result is None or outcome.result.status != "ok":
            sys.exit(f"{self.name} {cell} round {round_}: "
                     f"{outcome.error or outcome.log_tail[-2000:]}")
        self.runs[cell].append(outcome.result.runs)
        walls = ", ".join(f"{r.tok_s:.0f}" for r in outcome.result.runs)
        print(f"  round {round_} {self.name:<16} {cell:<2}: {walls} tok/s", flush=True)

    def start(self) -> None:
        """Start both engines and run their warm-ups before the first round, as the runner
        does (`rounds.start_engines`): a round is then a block of runs seconds apart."""
        for cell in self.runs:
            self.starts += 1
            dirs = self._scratch.enter_context(vllm_cpu.per_run_dirs())
            name = cell.replace(chr(39), "p")
            engine = LiveScript(self.script, python=self.python, env={**self.env, **dirs},
                                log_path=self.out / f"{name}.log", cwd=self.cwd,
                                silence_limit_s=900)
            self.engines[cell] = engine
            began = time.monotonic()
            outcome = engine.measure(0, self.out / f"{name}-start.json", wall_limit_s=1800)
            self.seconds += time.monotonic() - began
            if outcome.status != "ok":
                sys.exit(f"{self.name} {cell}: {outcome.error or outcome.log_tail[-2000:]}")

    def _live(self, cell: str, runs: int, result: Path) -> CellOutcome:
        return self.engines[cell].measure(runs, result, wall_limit_s=1800)

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()
        self._scratch.close()

    def rates(self, metric: str) -> dict[str, list[list[float]]]:
        """Each cell's `metric` per round."""
        return {cell: [[x for r in rnd if (x := rate(r, metric))] for rnd in rounds]
                for cell, rounds in self.runs.items()}

    def figures(self, metric: str) -> tuple[float, float, float, float]:
        """(CV of A, CV of A', within-round CV, A/A ratio) for `metric`."""
        cells = self.rates(metric)
        flat = {c: [x for rnd in rs for x in rnd] for c, rs in cells.items()}
        within = within_round_cv([r for rs in cells.values() for r in rs])
        return (log_cv(flat["A"]), log_cv(flat["A'"]), within,
                aa_ratio(cells["A"], cells["A'"]))

    def aa_precision(self, metric: str) -> tuple[float, float]:
        """(half-width of the A/A ratio's 95 % interval from its blocks' differences, the
        same scaled to one minute of measuring): what the pair's time bought."""
        cells = self.rates(metric)
        diffs = block_diffs(cells["A"], cells["A'"])
        if len(diffs) < 2:
            return float("nan"), float("nan")
        half = math.expm1(2 * statistics.stdev(diffs) / math.sqrt(len(diffs)))
        return half, half * math.sqrt(self.measuring_s / 60)


def parse_way(text: str) -> tuple[str, bool, float, bool, float | None, int]:
    """(name, live, min run seconds, engine in its own processes, warm-up seconds or None
    for the runs', pairs per round or 0) of a `--ways` item: `restart`, `live:S` or
    `workers:S`, either of the last two with `/wW` for warm-ups of W seconds (`/w0`: one
    batch each) or `/pN` for N blocks of one run per engine each round instead of one
    block of `--runs` (A A' | A' A ..., each pair a block)."""
    if text == "restart":
        return "restart, 1 batch", False, 0.0, False, None, 0
    kind, _, rest = text.partition(":")
    secs, _, opt = rest.partition("/")
    try:
        value = float(secs)
        warmup = float(opt[1:]) if opt.startswith("w") else None
        pairs = int(opt[1:]) if opt.startswith("p") else 0
    except ValueError:
        value, warmup, pairs = -1.0, None, 0
    if (kind not in ("live", "workers") or value < 0 or (warmup or 0) < 0 or pairs < 0
            or (opt and opt[0] not in "wp")):
        sys.exit(f"--ways: {text!r} is none of `restart`, `live:S[/wW|/pN]` and "
                 "`workers:S[/wW|/pN]` (S and W seconds, >= 0; N pairs)")
    run = f">= {value:g} s" if value else "1 batch"
    if warmup is not None:
        run += f", warm-ups {f'>= {warmup:g} s' if warmup else '1 batch'}"
    if pairs:
        run += f", {pairs} pairs"
    return (f"{kind}, {run}"), True, value, kind == "workers", warmup, pairs


# The floor's work, in a process of its own so that its BLAS runs on one thread: a matrix
# product repeated for 2 s, `runs` times, each time's products per second on a line.
_FLOOR = """
import sys, time
import numpy as np
a = np.random.default_rng(0).standard_normal((192, 192)).astype(np.float32)
for _ in range(int(sys.argv[1])):
    done, began = 0, time.perf_counter()
    while time.perf_counter() - began < 2.0:
        for _ in range(20):
            a @ a
        done += 20
    print(done / (time.perf_counter() - began), flush=True)
"""
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def floor_rates(runs: int) -> list[float]:
    """Matrix products per second of one thread, `runs` times 2 s: fixed work, no engine."""
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(runs)], check=True,
                         capture_output=True, text=True, env={**os.environ, **_ONE_THREAD})
    return [float(line) for line in out.stdout.split()]


def in_workers(plan: Plan) -> Plan:
    """`plan` with its cell's engine in processes of its own, vLLM's default layout."""
    cell = plan.cells[0]
    env = {k: v for k, v in cell.env.items() if k not in cpu_plan.IN_PROCESS_ENV}
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "1"
    return plan.model_copy(update={"cells": [cell.model_copy(update={"env": env})]})


def spin() -> subprocess.Popen[bytes]:
    """A neighbour's job: one process that keeps one core busy until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.25.1")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3, help="measured runs per engine per round")
    runners_way = f"live:{cpu_plan.MIN_RUN_S:g}"
    ap.add_argument("--ways", default=runners_way,
                    help=f"comma-separated: restart, live:S (default {runners_way}, the runner's), "
                         "workers:S")
    ap.add_argument("--neighbour", action="store_true",
                    help="keep one core busy beside the measurement")
    args = ap.parse_args()
    chosen = [parse_way(w.strip()) for w in args.ways.split(",") if w.strip()]
    out = Path(tempfile.mkdtemp(prefix="triagebot-bench-cpu-noise-"))
    plan = plan_for("vllm", args.version, args.runs, 2)
    env, runner_env = vllm_cpu.prepare(args.version, {c.model for c in plan.cells}, out,
                                       cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE)
    scripts: dict[bool, tuple[Plan, Path]] = {}
    for workers in sorted({c[3] for c in chosen}):
        variant = in_workers(plan) if workers else plan
        script = next(s for s in render_plan(variant) if s.cell_id)
        path = out / (("workers-" if workers else "") + script.filename)
        path.write_text(script.text)
        scripts[workers] = (variant, path)
    ways = [Way(name, *scripts[workers], env.python, runner_env, out, live=live,
                min_run_s=secs, warmup_s=warm, pairs=pairs)
            for name, live, secs, workers, warm, pairs in chosen]
    floor: list[list[float]] = []
    neighbour = spin() if args.neighbour else None
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    try:
        for way in ways:
            if way.live:
                way.start()
        for r in range(args.rounds):
            order = ways if r % 2 == 0 else ways[::-1]
            cells = ("A", "A'") if r % 2 == 0 else ("A'", "A")
            for way in order:
                if way.pairs:
                    for j in range(way.pairs):
                        for cell in (cells if j % 2 == 0 else cells[::-1]):
                            way.measure(cell, r * 100 + j, 1)
                    continue
                for cell in cells:
                    way.measure(cell, r, args.runs)
            floor.append(floor_rates(args.runs))
            print(f"  round {r} floor (fixed work): "
                  + ", ".join(f"{x:.0f}" for x in floor[-1]) + " products/s", flush=True)
    finally:
        for way in ways:
            way.close()
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    print(f"\nvLLM {args.version} on the cpu runner: one cell as an A/A pair, {args.rounds} "
          f"rounds x {args.runs} runs per engine, {os.cpu_count()} cores"
          f"{', one core kept busy by a neighbour' if args.neighbour else ''}; load "
          f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{time.monotonic() - began:.0f} s in all; logs in {out}")
    print(f"{'way':<28} {'metric':<6} {'CV A':>6} {'CV A2':>6} {'round CV':>9} {'A/A':>6} "
          f"{'+-':>6} {'+- 1min':>7} {'median tok/s':>12} {'starts':>6} {'time s':>7}")
    for way in ways:
        for metric in METRICS:
            every = [x for rs in way.runs.values() for rnd in rs for r in rnd
                     if (x := rate(r, metric))]
            if not every:
                continue
            cv_a, cv_b, within, aa = way.figures(metric)
            half, per_minute = way.aa_precision(metric)
            print(f"{way.name:<28} {metric:<6} {cv_a:>6.1%} {cv_b:>6.1%} {within:>9.1%} "
                  f"{aa:>6.3f} {half:>6.1%} {per_minute:>7.1%} {statistics.median(every):>12.1f} "
                  f"{way.starts:>6} {way.seconds:>7.0f}")
    every = [x for rnd in floor for x in rnd]
    if every:
        print(f"{'floor (fixed work)':<28} {'wall':<6} {log_cv(every):>6.1%} {'':>6} "
              f"{within_round_cv(floor):>9.1%} {'':>22} {statistics.median(every):>12.1f}")


if __name__ == "__main__":
    # Killed or interrupted, it stops the engines it started (a live one may be paused,
    # SIGSTOPped, which no signal but SIGKILL ends) instead of leaving them behind.
    run_until_stopped(main)
