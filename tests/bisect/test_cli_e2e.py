"""`triagebot bisect` end to end over a local package index of a tiny engine: twenty
releases, speculation turns slower at a known one, one build does not import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bisect.tiny_engine import BROKEN, CHANGE, RELEASES, REPORT, build_index

TRIAGEBOT = Path(sys.executable).parent / "triagebot"
WORDS = ["modes=eager", "runs=4", "warmups=0", "max_tokens=32", "prompts=1"]


def _bisect(tmp_path: Path, *words: str) -> subprocess.CompletedProcess[str]:
    report = tmp_path / "report.md"
    report.write_text(REPORT)
    return subprocess.run(
        [str(TRIAGEBOT), "bisect", str(report), *WORDS, *words,
         "--find-links", str(build_index(tmp_path / "index")),
         "--cache", str(tmp_path / "envs"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=900, check=False)


def test_the_known_change_is_found_and_the_broken_build_skipped(tmp_path: Path) -> None:
    proc = _bisect(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    previous = RELEASES[RELEASES.index(CHANGE) - 1]
    assert f"**first bad: {CHANGE}**, last good: {previous}" in proc.stdout
    # good and bad came from the report's own words, and the plan says so.
    assert f"good={RELEASES[0]} comes from the report" in proc.stdout
    run = json.loads((tmp_path / "out" / "bisect.json").read_text())
    verdicts = {s["point"]: s["verdict"] for s in run["steps"]}
    assert verdicts[BROKEN] == "skip"
    skipped = next(s for s in run["steps"] if s["point"] == BROKEN)
    assert "build/install failed" in skipped["reason"]
    # ceil(log2 19) + 1 to confirm, + 1 for the skipped build.
    assert len(run["steps"]) <= 7
    # A second run over the same folder resumes: nothing is run again.
    again = _bisect(tmp_path)
    assert again.returncode == 0 and "resuming after" in again.stderr
    assert json.loads((tmp_path / "out" / "bisect.json").read_text())["steps"] == run["steps"]


def test_an_inverted_range_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, f"good={RELEASES[-1]}", f"bad={RELEASES[0]}")
    assert proc.returncode == 3
    assert "regress=success" in proc.stderr
    assert not (tmp_path / "envs").exists()


def test_a_point_past_the_known_releases_is_refused(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, "good=0.14.0", "bad=0.33.0")
    assert proc.returncode == 3
    assert "past the newest known release, 0.25.0" in " ".join(proc.stderr.split())
