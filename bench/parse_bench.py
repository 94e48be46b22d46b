"""Parser speed: a 100 KB report, a 5 MB report, and throughput over the dev set.

Run from the repository root: `.venv/bin/python bench/parse_bench.py`. Each size is
parsed several times side by side in one run; medians are printed with their targets.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from triagebot.parse import parse_report  # noqa: E402
from triagebot.parse.document import MAX_CHARS  # noqa: E402

SHARED = ROOT.parent / "shared"


def _report_of_size(size: int) -> bytes:
    """A realistic report grown to `size` bytes: the seeds and dev texts repeated."""
    parts = [p.read_text(encoding="utf-8") for p in sorted((SHARED / "seeds").glob("*.txt"))]
    parts += [
        json.loads(p.read_text())["text"] for p in sorted((SHARED / "parse-dev").glob("*.json"))
    ]
    if not parts:
        parts = [(ROOT / "samples" / "glm-ocr-mtp-graph.md").read_text()]
    blob = "\n\n".join(parts)
    data = (blob * (size // len(blob) + 1))[:size]
    return data.encode("utf-8", errors="ignore")


def _median_seconds(data: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        parse_report(data, title="[Bug] MTP slower under CUDA graphs")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    small, large = _report_of_size(100_000), _report_of_size(5_000_000)
    t_small = _median_seconds(small, repeat=15)
    t_large = _median_seconds(large, repeat=5)
    items = [json.loads(p.read_text()) for p in sorted((SHARED / "parse-dev").glob("*.json"))]
    t0 = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        for item in items:
            parse_report(item["text"], title=item["title"])
    rate = rounds * len(items) / (time.perf_counter() - t0)
    print(f"{'case':<28}{'median':>12}{'target':>12}{'ratio to target':>18}")
    print(f"{'100 KB report':<28}{t_small * 1000:>10.1f}ms{50:>10}ms{t_small / 0.050:>18.2f}")
    print(f"{'5 MB report':<28}{t_large * 1000:>10.1f}ms{2000:>10}ms{t_large / 2.0:>18.2f}")
    print(f"  (the parser reads the first {MAX_CHARS:,} characters of a report and says so in "
          "its warnings; GitHub caps a body at 65,536)")
    print(f"{'parse-dev set':<28}{rate:>9.1f}/s  ({len(items)} reports x {rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
