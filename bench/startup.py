"""How fast the CLI answers: `--version`, `--help` and `parse` beside a bare interpreter.

Run from the repository root: `.venv/bin/python bench/startup.py [--rounds 10]`. Each
round runs every command once, in turn, so a neighbour's burst touches them alike; the
table gives each command's median wall time, its ratio to `python -c pass` (the floor no
Python CLI can beat) and its target. `--importtime` adds the modules that cost most at
start-up, from `python -X importtime`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SEED = ROOT.parent / "shared" / "seeds" / "000_cbee03676dbc1509.txt"
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"

# label, argv, target in seconds (None: the floor itself)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("triagebot --version", [str(BIN / "triagebot"), "--version"], 0.15),
    ("triagebot --help", [str(BIN / "triagebot"), "--help"], 0.15),
    ("triagebot parse <seed 000> --json",
     [str(BIN / "triagebot"), "parse", str(SEED if SEED.exists() else SAMPLE), "--json"], 0.4),
]


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _costliest(argv: list[str], top: int) -> list[tuple[int, str]]:
    """The top-level imports that cost most, in microseconds, from -X importtime."""
    run = subprocess.run([sys.executable, "-X", "importtime", str(BIN / "triagebot"), *argv],
                         capture_output=True, text=True, check=False)
    rows = []
    for line in run.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            if len(name) - len(name.lstrip()) <= 2:  # imported by the program itself
                rows.append((int(parts[1]), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    for _, argv, _ in COMMANDS:  # warm the page cache and the .pyc files
        _wall(argv)
    times: dict[str, list[float]] = {label: [] for label, _, _ in COMMANDS}
    for _ in range(args.rounds):
        for label, argv, _ in COMMANDS:
            times[label].append(_wall(argv))
    floor = statistics.median(times[COMMANDS[0][0]])
    print(f"{args.rounds} rounds, load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{'command':36} {'median s':>9} {'x floor':>8} {'target s':>9}  verdict")
    for label, _, target in COMMANDS:
        median = statistics.median(times[label])
        verdict = "" if target is None else ("met" if median <= target else "NOT MET")
        shown = "" if target is None else f"{target:.2f}"
        print(f"{label:36} {median:9.3f} {median / floor:8.1f} {shown:>9}  {verdict}")
    if args.importtime:
        for label, argv, _ in COMMANDS[1:]:
            costly = ", ".join(f"{name} {us / 1000:.0f} ms"
                               for us, name in _costliest(argv[1:], 5))
            print(f"{label}: {costly}")


if __name__ == "__main__":
    main()
