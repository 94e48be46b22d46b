"""Parser speed: a 100 KB report, a 5 MB report, each stage of the pipeline, and throughput
over the dev set.

Run from the repository root: `.venv/bin/python bench/parse_bench.py [--shared DIR]`. Each
case is parsed several times side by side in one run; medians are printed with their
targets. The 100 KB report is the seeds and dev texts run together (the first seed is a
scraped page, so most of it reads as other people's comments); the 100 KB markdown body is
the dev texts alone, all of it the reporter's post. Times are wall clock and CPU time: on
a machine other work shares, CPU time is the fairer figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from triagebot.parse import (  # noqa: E402
    commands,
    document,
    envdump,
    parse_report,
    python,
    results,
    runs,
)
from triagebot.parse.decide import Assembler, resolve  # noqa: E402
from triagebot.parse.document import MAX_CHARS  # noqa: E402

TITLE = "[Bug] MTP slower under CUDA graphs"
TARGET_S = 0.050  # a 100 KB report


def _texts(shared: Path, seeds: bool) -> list[str]:
    parts = [p.read_text(encoding="utf-8") for p in sorted((shared / "seeds").glob("*.txt"))] \
        if seeds else []
    parts += [json.loads(p.read_text())["text"]
              for p in sorted((shared / "parse-dev").glob("*.json"))
              if seeds or not p.name.startswith("seed-")]
    return parts or [(ROOT / "samples" / "glm-ocr-mtp-graph.md").read_text()]


def _of_size(parts: list[str], size: int) -> bytes:
    blob = "\n\n".join(parts)
    return (blob * (size // len(blob) + 1))[:size].encode("utf-8", errors="ignore")


def _median(data: bytes, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of parsing `data`."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        parse_report(data, title=TITLE)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def _stages(data: bytes, repeat: int) -> list[tuple[str, float]]:
    """Median CPU seconds of each stage of `parse_report` on `data`, in pipeline order."""
    passes = [_one_pass(data) for _ in range(repeat)]
    return [(name, statistics.median(p[name] for p in passes)) for name in passes[0]]


def _one_pass(data: bytes) -> dict[str, float]:
    cost: dict[str, float] = {}
    clock = time.process_time()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.process_time()
        cost[name] = now - clock
        clock = now

    doc = document.build(data, TITLE)
    lines = doc.body_lines
    lap("document (lines, zones)")
    layout = doc.layout
    lap("document (markdown layout)")
    scanned = commands.read_commands(lines, layout)
    lap("commands")
    py = python.extract_python(lines, layout)
    lap("python")
    dump = envdump.parse_environment(lines)
    lap("envdump")
    numbers = results.find_reported_numbers(lines, layout)
    lap("results")
    a = Assembler(doc, None)
    a.runs = runs.from_invocations(scanned.invocations, lines)
    py_runs, a.sampling = runs.from_python(py, lines)
    a.runs += py_runs
    a.env_assignments = scanned.env
    lap("runs")
    resolve(a, dump, numbers)
    lap("decide (prose extractors and fields)")
    return cost


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared",
                    help="where seeds/ and parse-dev/ are (default: ../shared)")
    args = ap.parse_args()
    mixed, markdown = _texts(args.shared, True), _texts(args.shared, False)
    cases = [("100 KB report", _of_size(mixed, 100_000), 15, TARGET_S),
             ("100 KB markdown body", _of_size(markdown, 100_000), 9, None),
             ("5 MB report", _of_size(mixed, 5_000_000), 5, 2.0)]
    print(f"{'case':<24}{'wall':>10}{'cpu':>10}{'target':>10}{'cpu/target':>12}")
    for name, data, repeat, target in cases:
        parse_report(data, title=TITLE)  # warm: compiled patterns, the markdown parser
        wall, cpu = _median(data, repeat)
        ratio = f"{cpu / target:>12.2f}" if target else f"{'':>12}"
        shown = f"{target * 1000:>8.0f}ms" if target else f"{'':>10}"
        print(f"{name:<24}{wall * 1000:>8.1f}ms{cpu * 1000:>8.1f}ms{shown}{ratio}")
    print(f"  (the parser reads the first {MAX_CHARS:,} characters of a report and says so in "
          "its warnings; GitHub caps a body at 65,536)")
    print("\nCPU per stage, 100 KB report / 100 KB markdown body:")
    for (stage, a), (_, b) in zip(_stages(cases[0][1], 9), _stages(cases[1][1], 5), strict=True):
        print(f"  {stage:<38}{a * 1000:>7.1f}ms{b * 1000:>9.1f}ms")
    items = [json.loads(p.read_text()) for p in sorted((args.shared / "parse-dev").glob("*.json"))]
    if items:
        rounds = 5
        start = time.perf_counter()
        for _ in range(rounds):
            for item in items:
                parse_report(item["text"], title=item["title"])
        rate = rounds * len(items) / (time.perf_counter() - start)
        print(f"\n{'parse-dev set':<24}{rate:>8.1f}/s  ({len(items)} reports x {rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
