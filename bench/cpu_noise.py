"""Run-to-run noise of one vLLM CPU cell on the `cpu` runner, and what cuts it.

Run from the repository root: `.venv/bin/python bench/cpu_noise.py [--version 0.32.0]
[--runs 12] [--starts 3]`. One cell (no speculation, eager, the runner's CPU workload) is
started `--starts` times under each setting below, settings interleaved (1 2 3 | 3 2 1 |
...) so that a change of the machine's load falls on every setting alike. Per setting it
prints:

* within CV: the spread of tok/s between the runs of one start (pooled over starts), the
  noise the verdict's t test sees inside a round;
* between CV: the spread of the starts' mean tok/s beyond what the within CV explains,
  the offset a process start adds (the verdict's rounds are blocks, so it cancels in a
  comparison, but it is what an A/A pair of separate processes measures);
* median tok/s, and the 1-minute load average seen at each start: the machine is shared
  with other work, so these are figures of a busy machine, not of an idle one.

Settings: vLLM binding its worker to one core (`VLLM_CPU_OMP_THREADS_BIND=auto`) or not
(`nobind`: the OS places and moves threads), each with 2 or 6 warm-ups.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.vllm_cpu import plan_for, run_cell
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE

SETTINGS: dict[str, tuple[dict[str, str], int]] = {
    "bind auto, 2 warm-ups": ({}, 2),
    "bind auto, 6 warm-ups": ({}, 6),
    "nobind, 2 warm-ups": ({"VLLM_CPU_OMP_THREADS_BIND": "nobind"}, 2),
    "nobind, 6 warm-ups": ({"VLLM_CPU_OMP_THREADS_BIND": "nobind"}, 6),
}


def _log_cv(values: list[float]) -> float:
    """CV from the sd of log values (what the verdict works on)."""
    return math.expm1(statistics.stdev(math.log(v) for v in values)) if len(values) > 1 else 0.0


def figures(starts: list[list[float]]) -> tuple[float, float, float]:
    """(within CV, between CV, median) of per-start tok/s lists (one-way random effects)."""
    logs = [[math.log(v) for v in s] for s in starts if len(s) > 1]
    within_ss = sum(sum((x - statistics.mean(s)) ** 2 for x in s) for s in logs)
    within_df = sum(len(s) - 1 for s in logs)
    within_var = within_ss / within_df if within_df else 0.0
    means = [statistics.mean(s) for s in logs]
    n_bar = statistics.mean(len(s) for s in logs) if logs else 1.0
    between_var = (statistics.variance(means) - within_var / n_bar) if len(means) > 1 else 0.0
    flat = [v for s in starts for v in s]
    return (math.expm1(math.sqrt(within_var)), math.expm1(math.sqrt(max(between_var, 0.0))),
            statistics.median(flat) if flat else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.32.0")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--settings", default=",".join(str(i) for i in range(len(SETTINGS))),
                    help="which settings, by position in the list above (default: all)")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="triagebot-bench-cpu-noise-"))
    names = [list(SETTINGS)[int(i)] for i in args.settings.split(",")]
    base = plan_for("vllm", args.version, args.runs, 2)
    env, runner_env = vllm_cpu.prepare(args.version, {c.model for c in base.cells}, out,
                                       cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE)
    rates: dict[str, list[list[float]]] = {n: [] for n in names}
    loads: dict[str, list[float]] = {n: [] for n in names}
    for start in range(args.starts):
        for name in names if start % 2 == 0 else reversed(names):
            extra, warmups = SETTINGS[name]
            plan = plan_for("vllm", args.version, args.runs, warmups)
            loads[name].append(os.getloadavg()[0])
            result, _ = run_cell(plan, env.python, runner_env, out,
                                 f"{len(rates[name])}-{name.replace(' ', '_')}", cell_env=extra)
            log = (out / f"vllm-{len(rates[name])}-{name.replace(' ', '_')}.log").read_text()
            bind = extra.get("VLLM_CPU_OMP_THREADS_BIND", "auto")
            if f"VLLM_CPU_OMP_THREADS_BIND={bind!r}" not in log:
                sys.exit(f"{name}: vLLM did not report VLLM_CPU_OMP_THREADS_BIND={bind!r}")
            rates[name].append([r.tok_s for r in result.runs])
            print(f"  start {start + 1}: {name}: "
                  f"{', '.join(f'{r:.0f}' for r in rates[name][-1])} tok/s", flush=True)
    print(f"\nvLLM {args.version} on the cpu runner, one cell, {args.runs} runs x {args.starts} "
          f"starts per setting, {os.cpu_count()} cores shared with other jobs; logs in {out}")
    print(f"{'setting':<24} {'within CV':>9} {'between CV':>10} {'all CV':>7} "
          f"{'median tok/s':>12} {'load at starts':>16}")
    for name in names:
        within, between, median = figures(rates[name])
        every = [v for s in rates[name] for v in s]
        load = "/".join(f"{x:.1f}" for x in loads[name])
        print(f"{name:<24} {within:>9.1%} {between:>10.1%} {_log_cv(every):>7.1%} "
              f"{median:>12.1f} {load:>16}")


if __name__ == "__main__":
    main()
