"""Time to verdict on the `cpu` runner: wall time from the command to the report, per seed.

Run from the repository root: `.venv/bin/python bench/time_to_verdict.py [--seeds DIR]
[--cold] [--only 000,002] [--demo] [--repeat N]`. Each seed report (`../shared/seeds/*.txt`
by default; with `--demo` the demo's sample, `samples/glm-ocr-mtp-graph.md`, which is
what `./dev demo` runs) is run as a user runs it, `triagebot repro SEED --engine vllm
--runner cpu --out DIR`, one after another (`--repeat` times each), and the progress
lines it prints (one per step when not on a terminal, `triagebot/progress.py`) are timed
as they arrive, so the table splits each run into:

* prepare: from the command to the first engine start: installing the locked vLLM
  release and building the stand-ins where missing, else a few seconds;
* measure: from there to the report: engine starts, runs, escalation, analysis;
* total: command to report, the figure a user waits; `total - prepare` is the time to
  verdict with the install excluded.

Without `--cold` the environments and stand-ins cached under `~/.cache/triagebot` are
used (install excluded, as on a runner that has run a plan of the release before). With
`--cold` each seed runs with an empty HOME, so the release's environment, uv's download
cache and the stand-ins are all built afresh, as on a fresh machine (install included;
several GB from PyPI per release, tens of minutes). Seeds the cpu runner refuses (exit
3: a question only a GPU answers) are listed with their exit code and take a second.

It also prints, per seed, the engine starts, the runs per cell, how many of the plan's
comparisons were decided (SAME or DIFFERENT) rather than left UNKNOWN, the A/A pair's
ratio (a perfect runner gives 1.000) and the largest run-to-run CV of a cell, of
wall-clock tok/s (what the verdicts use) and of CPU tok/s: the figures issue 26's
done-when names (A/A within +-3 %, cell CV <= 3 % quiet, time to verdict).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from triagebot.run.shutdown import run_until_stopped

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
DEMO = ROOT / "samples" / "glm-ocr-mtp-graph.md"
EXITS = {0: "reproduced", 1: "not reproduced", 2: "bad input", 3: "refused",
         4: "inconclusive", 5: "runs failed"}
# The progress lines that mean the plan has started measuring (an engine starts).
MEASURING = ("starting the engine", "round ")


def _name(seed: Path) -> str:
    return "demo" if seed == DEMO else seed.name[:3]


def run_seed(seed: Path, out: Path, cold: bool) -> dict[str, object]:
    env = dict(os.environ)
    if cold:
        home = Path(tempfile.mkdtemp(prefix="triagebot-cold-home-"))
        env["HOME"] = str(home)
        env.setdefault("PYENV_ROOT", str(Path.home() / ".pyenv"))
    argv = [str(ROOT / ".venv" / "bin" / "triagebot"), "repro", str(seed), "--engine", "vllm",
            "--runner", "cpu", "--out", str(out)]
    began = time.monotonic()
    prepared: float | None = None
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          text=True, cwd=ROOT) as proc:
        assert proc.stderr is not None
        with (out.parent / f"{out.name}.progress.log").open("w", buffering=1) as log:
            for line in proc.stderr:
                log.write(f"{time.monotonic() - began:8.1f} {line}")
                text = line.split("] ", 1)[-1]
                if prepared is None and text.startswith(MEASURING):
                    prepared = time.monotonic() - began
    total = time.monotonic() - began
    row: dict[str, object] = {"seed": _name(seed), "exit": proc.returncode,
                              "outcome": EXITS.get(proc.returncode, "?"), "total_s": total,
                              "prepare_s": prepared if prepared is not None else total}
    row.update(_findings(out))
    return row


def _findings(out: Path) -> dict[str, object]:
    try:
        findings = json.loads((out / "findings.json").read_text())
        outcomes = json.loads((out / "outcomes.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    comps = [c for c in findings.get("comparisons", []) if c.get("kind") != "noise"]
    decided = sum(1 for c in comps
                  if (c.get("result") or {}).get("verdict") in ("SAME", "DIFFERENT"))
    logs = {o.get("log_path") for outs in outcomes.values() for o in outs}
    cells = findings.get("cells", [])
    runs = [(c.get("throughput") or {}).get("n", 0) for c in cells]
    # The A/A pair's ratio as the report gives it (the noise comparison, round-blocked).
    aa = next(((c.get("result") or {}).get("ratio") for c in findings.get("comparisons", [])
               if c.get("kind") == "noise"), None)
    return {"cells": len(cells), "starts": len(logs),
            "runs": "/".join(str(r) for r in runs), "decided": f"{decided}/{len(comps)}",
            "aa": f"{aa:.3f}" if aa else "-",
            "cv": _largest_cv(cells, "throughput"), "cpu_cv": _largest_cv(cells, "cpu_throughput")}


def _largest_cv(cells: list[dict[str, object]], key: str) -> str:
    cvs = [float(s["cv"]) for c in cells
           if isinstance(s := c.get(key), dict) and s.get("cv") is not None]
    return f"{max(cvs):.1%}" if cvs else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=Path, default=SEEDS)
    ap.add_argument("--only", default="", help="seed prefixes, e.g. 000,002 (default all)")
    ap.add_argument("--cold", action="store_true",
                    help="an empty HOME per seed: install and stand-ins included")
    ap.add_argument("--demo", action="store_true",
                    help=f"run the demo's sample ({DEMO.relative_to(ROOT)}) instead of the seeds")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each seed (default 1)")
    args = ap.parse_args()
    seeds = [DEMO] if args.demo else sorted(args.seeds.glob("*.txt"))
    if args.only and not args.demo:
        seeds = [s for s in seeds if s.name[:3] in args.only.split(",")]
    if not seeds:
        sys.exit(f"no seeds in {args.seeds}")
    work = Path(tempfile.mkdtemp(prefix="triagebot-bench-ttv-"))
    load = os.getloadavg()[0]
    rows = []
    for seed in seeds:
        for n in range(args.repeat):
            row = run_seed(seed, work / f"{_name(seed)}-{n}", args.cold)
            rows.append(row)
        print(f"  {row['seed']}: {row['outcome']} in {row['total_s']:.0f} s", flush=True)
    print(f"\ntime to verdict, `triagebot repro SEED --engine vllm --runner cpu`, "
          f"{'cold (empty HOME: install included)' if args.cold else 'warm caches'}; "
          f"{os.cpu_count()} cores, load {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; output in {work}")
    print(f"{'seed':<5} {'outcome':<15} {'prepare s':>9} {'measure s':>9} {'total s':>8} "
          f"{'cells':>5} {'starts':>6} {'decided':>7} {'A/A':>6} {'cell CV':>7} "
          f"{'CPU CV':>7}  runs per cell")
    for r in rows:
        total, prepare = float(r["total_s"]), float(r["prepare_s"])  # type: ignore[arg-type]
        print(f"{r['seed']:<5} {r['outcome']!s:<15} {prepare:>9.0f} {total - prepare:>9.0f} "
              f"{total:>8.0f} {r.get('cells', '-')!s:>5} {r.get('starts', '-')!s:>6} "
              f"{r.get('decided', '-')!s:>7} {r.get('aa', '-')!s:>6} {r.get('cv', '-')!s:>7} "
              f"{r.get('cpu_cv', '-')!s:>7}  {r.get('runs', '-')}")


if __name__ == "__main__":
    # Killed or interrupted, it stops the engines it started (a live one may be paused,
    # SIGSTOPped, which no signal but SIGKILL ends) instead of leaving them behind.
    run_until_stopped(main)
