"""What `triagebot repro` costs on top of the work itself.

Run from the repository root: `.venv/bin/python bench/overhead.py`. It renders the
sample's plan for the transformers engine, warms torch.compile's cache once, then times,
alternately (direct, repro, repro, direct, ...), running the rendered `run_all.sh`
directly and running `triagebot repro` on the same report with escalation off. It prints
the median of each and their ratio (target: at most 1.05).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"
TRIAGEBOT = str(Path(sys.executable).parent / "triagebot")
ARGS = ["--engine", "transformers", "runs=5"]
PAIRS = 2
TARGET = 1.05


def _timed(argv: list[str], **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="triagebot-overhead-"))
    scripts = work / "scripts"
    subprocess.run([TRIAGEBOT, "render", str(SAMPLE), *ARGS, "--out", str(scripts)],
                   check=True, stdout=subprocess.DEVNULL)
    env = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    direct_cmd = ["bash", str(scripts / "run_all.sh")]
    print("warming the compile cache with one direct pass...", flush=True)
    _timed(direct_cmd, env=env)
    direct: list[float] = []
    repro: list[float] = []
    for i in range(PAIRS):
        order = ("direct", "repro") if i % 2 == 0 else ("repro", "direct")
        for which in order:
            if which == "direct":
                direct.append(_timed(direct_cmd, env=env))
            else:
                out = work / f"repro-{i}"
                repro.append(_timed([TRIAGEBOT, "repro", str(SAMPLE), *ARGS, "--max-runs", "5",
                                     "--out", str(out)]))
            print(f"  {which}: {(direct if which == 'direct' else repro)[-1]:.1f} s",
                  flush=True)
    d, r = statistics.median(direct), statistics.median(repro)
    print(f"| run | median wall time | runs |\n|---|---:|---:|\n"
          f"| scripts directly (run_all.sh) | {d:.1f} s | {len(direct)} |\n"
          f"| triagebot repro | {r:.1f} s | {len(repro)} |\n"
          f"| ratio repro / direct | {r / d:.3f} (target <= {TARGET}) | |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
