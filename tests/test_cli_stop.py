"""`triagebot repro` told to stop mid-run: it stops its scripts, says so in one line and
ends by the signal (a real repro on this CPU, transformers engine)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.processes import process_state
from tests.fakes.signals import as_from_a_terminal
from triagebot.run import leftovers

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_repro_told_to_stop_stops_its_scripts_and_says_so(tmp_path: Path,
                                                            sig: signal.Signals) -> None:
    argv = [sys.executable, "-m", "triagebot.cli", "repro", str(SAMPLE), "--engine",
            "transformers", "modes=eager", "spec=ngram:2,none", "runs=6", "--max-runs", "6",
            "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "envs")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    # Its own cache, so its scope: the reaping at the start of a run touches nothing else.
    scope = leftovers.scope_of(tmp_path / "envs")
    try:
        deadline = time.monotonic() + 120
        seen: list[int] = []
        while not seen:  # a cell's script is running: the command holds a child tree
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no script started in 120 s"
            seen = leftovers.started_by(scope, proc.pid)
            time.sleep(0.02)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig, err
    assert "Traceback" not in err
    how = "interrupted" if sig == signal.SIGINT else "terminated"
    assert f"triagebot: {how} ({sig.name});" in err
    deadline = time.monotonic() + 10
    while any(process_state(p) not in ("gone", "Z") for p in seen):
        assert time.monotonic() < deadline, [(p, process_state(p)) for p in seen]
        time.sleep(0.05)
    assert leftovers.started_by(scope, proc.pid) == []
