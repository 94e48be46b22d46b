"""How steady this machine's cores are, with no engine at all: the floor under any cell CV.

Run from the repository root: `.venv/bin/python bench/machine_floor.py [--seconds 10]`.
It times small fixed pieces of work, back to back, by the CPU time of the thread that
does them (so time the core spent on another task is not counted), and prints their
spread at three time scales: one piece (about 25 ms), a one-batch run of the demo's plan
(0.35 s) and a run of 2 s. Two phases, each `--seconds` long:

* `two cores`: the same interpreter loop on core 0 and core 1 at once. Their
  correlation says whether timing work on the other core could correct a run for the
  speed of its own (it could only where the two cores drift together).
* `one core`: the interpreter loop and a matrix product (one BLAS thread) time-sliced on
  core 0. Their correlation, and the spread left once one is fitted to the other, say how
  far a calibrating process beside the engine on its own core could correct it.

Then what the floor means for an A/A pair of `--runs` runs per side: the spread of the
ratio of its two means if every run were as steady as the floor at the run's time scale,
and the chance that one demo, and three in a row, land within +-3 %.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

SCALES_S = (0.0, 0.35, 2.0)  # 0: one piece of work
MARGIN = 0.03


_MATS: list[Any] = []  # the matrix product's operands, made once per process


def _work(kind: str) -> None:
    if kind == "loop":
        total = 0
        for i in range(60_000):
            total += i * i
    else:
        a, b = _MATS
        for _ in range(8):
            a @ b


def _record(kind: str, core: int, seconds: float, start_at: float,
            queue: mp.Queue) -> None:
    os.sched_setaffinity(0, {core})
    if kind == "matmul":
        import numpy as np
        rng = np.random.default_rng(0)
        _MATS.extend([rng.random((192, 192), dtype=np.float32),
                      rng.random((192, 192), dtype=np.float32)])
    rows: list[tuple[float, float]] = []
    while time.time() < start_at:
        _work(kind)  # warm, and wait for the other recorder
    end = start_at + seconds
    while (began := time.time()) < end:
        cpu = time.thread_time()
        _work(kind)
        rows.append((began, time.thread_time() - cpu))
    queue.put((kind, core, rows))


def record(pairs: Sequence[tuple[str, int]], seconds: float) -> list[list[tuple[float, float]]]:
    """Each (work, core) recorded in a process of its own, all over the same seconds."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start_at = time.time() + 3.0
    procs = [ctx.Process(target=_record, args=(kind, core, seconds, start_at, queue))
             for kind, core in pairs]
    for p in procs:
        p.start()
    got = {(kind, core): rows for kind, core, rows in (queue.get() for _ in procs)}
    for p in procs:
        p.join()
    return [got[pair] for pair in pairs]


def speeds(rows: list[tuple[float, float]], t0: float, scale: float) -> dict[int, float]:
    """Work per CPU second in each `scale`-second bin from t0 (each piece alone for 0)."""
    if scale == 0.0:
        return {i: 1.0 / cpu for i, (_, cpu) in enumerate(rows) if cpu > 0}
    bins: dict[int, list[float]] = {}
    for at, cpu in rows:
        bins.setdefault(int((at - t0) / scale), []).append(cpu)
    return {b: len(v) / sum(v) for b, v in bins.items() if len(v) >= 2 and sum(v) > 0}


def log_sd(values: Sequence[float]) -> float:
    """The sd of the logs: the CV for spreads this small, and what the verdicts work on."""
    return statistics.stdev(math.log(v) for v in values)


def paired(a: dict[int, float], b: dict[int, float]) -> tuple[list[float], list[float]]:
    keys = sorted(a.keys() & b.keys())
    return [math.log(a[k]) for k in keys], [math.log(b[k]) for k in keys]


def fitted_residual(y: list[float], x: list[float]) -> float:
    slope = statistics.covariance(x, y) / statistics.variance(x)
    return statistics.stdev(v - slope * u for v, u in zip(y, x, strict=True))


def within(sd: float, margin: float = MARGIN) -> float:
    """P(|N(0, sd)| <= log(1 + margin))."""
    return math.erf(math.log1p(margin) / (sd * math.sqrt(2)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=24, help="runs per side of the A/A pair")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("machine_floor: needs two cores")
    os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                       "MKL_NUM_THREADS": "1"})
    print(f"machine floor, {args.seconds:.0f} s per phase, load "
          f"{os.getloadavg()[0]:.1f} at the start", flush=True)

    core0, core1 = record([("loop", 0), ("loop", 1)], args.seconds)
    t0 = min(core0[0][0], core1[0][0])
    print("\ntwo cores at once (interpreter loop)")
    print(f"{'scale':>8} {'CV core 0':>10} {'CV core 1':>10} {'correlation':>12}")
    floor_at_run = 0.0
    for scale in SCALES_S:
        a, b = speeds(core0, t0, scale), speeds(core1, t0, scale)
        sd_a, sd_b = log_sd(list(a.values())), log_sd(list(b.values()))
        x, y = paired(a, b) if scale else ([], [])
        corr = f"{statistics.correlation(x, y):12.2f}" if len(x) > 2 else f"{'':>12}"
        name = f"{scale:.2f} s" if scale else "piece"
        print(f"{name:>8} {sd_a:>10.1%} {sd_b:>10.1%}{corr}")
        if scale == SCALES_S[1]:
            floor_at_run = (sd_a + sd_b) / 2

    loop, mat = record([("loop", 0), ("matmul", 0)], args.seconds)
    t0 = min(loop[0][0], mat[0][0])
    print("\none core, two kinds of work time-sliced (loop, matrix product)")
    print(f"{'scale':>8} {'CV loop':>10} {'CV matmul':>10} {'correlation':>12} "
          f"{'matmul left':>12}")
    for scale in SCALES_S[1:]:
        a, b = speeds(loop, t0, scale), speeds(mat, t0, scale)
        x, y = paired(a, b)
        if len(x) <= 2:
            continue
        print(f"{scale:>6.2f} s {log_sd(list(a.values())):>10.1%} "
              f"{log_sd(list(b.values())):>10.1%} {statistics.correlation(x, y):>12.2f} "
              f"{fitted_residual(y, x):>12.1%}")

    sd = floor_at_run * math.sqrt(2 / args.runs)
    one = within(sd)
    print(f"\nan A/A pair of {args.runs} v {args.runs} runs as steady as the floor at "
          f"{SCALES_S[1]} s ({floor_at_run:.1%}): its ratio spreads {sd:.1%}; within "
          f"+-{MARGIN:.0%} in one demo {one:.0%}, in three of three {one ** 3:.0%}")


if __name__ == "__main__":
    main()
