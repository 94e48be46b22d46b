"""run_script against small scripts that succeed, fail, hang, flood, crash and leak."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from triagebot.run import gpu
from triagebot.run.supervise import (
    TAIL_BYTES,
    CellOutcome,
    Limits,
    ScriptPaths,
    child_environment,
    classify,
    read_result,
    run_script,
)
from triagebot.run_result import RunResult

OK_RESULT = {
    "cell_id": "c0123456789", "engine": "transformers", "status": "ok",
    "runs": [{"output_tokens": 32, "seconds": 0.5, "tok_s": 64.0}],
}


def _run(tmp_path: Path, body: str, **kw: object) -> CellOutcome:
    script = tmp_path / "cell.py"
    script.write_text(textwrap.dedent(body))
    limits: dict[str, object] = {"wall_limit_s": 30.0, "silence_limit_s": 30.0, "grace_s": 1.0}
    limits.update(kw)
    env = limits.pop("env", {})
    on_line = limits.pop("on_line", None)
    return run_script(script, python=sys.executable, env=env,  # type: ignore[arg-type]
                      paths=ScriptPaths(tmp_path / "result.json", tmp_path / "cell.log"),
                      limits=Limits(**limits),  # type: ignore[arg-type]
                      on_line=on_line)  # type: ignore[arg-type]


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether `pid` has died. A zombie waiting for its reaper counts as dead."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "?"
        if state == "Z":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _write_result_code(doc: Mapping[str, object]) -> str:
    return (f"import json, os\n"
            f"doc = json.loads({json.dumps(json.dumps(doc))})\n"
            "doc['seen_env'] = sorted(os.environ)\n"
            "open(os.environ['TRIAGEBOT_RESULT'], 'w').write(json.dumps(doc))\n")


def test_ok_result_is_read_and_env_is_explicit(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_not_for_scripts")
    monkeypatch.setenv("TRIAGEBOT_APP_PRIVATE_KEY", "secret")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lines: list[str] = []
    body = "print('loading model')\nprint('measuring')\n" + _write_result_code(OK_RESULT)
    out = _run(tmp_path, body, env={"VLLM_USE_V1": "1"}, on_line=lines.append)
    assert out.status == "ok", out
    assert out.exit_code == 0 and out.signal is None and out.killed_by is None
    assert out.result is not None and out.result.runs[0].tok_s == 64.0
    assert lines[:2] == ["loading model", "measuring"]
    assert "measuring" in out.log_tail and out.log_head == ""
    seen = set(out.result.model_extra["seen_env"])  # type: ignore[index]
    assert {"TRIAGEBOT_RESULT", "VLLM_USE_V1", "HF_HUB_OFFLINE", "PYTHONUNBUFFERED"} <= seen
    assert not seen & {"GITHUB_TOKEN", "TRIAGEBOT_APP_PRIVATE_KEY"}
    assert Path(out.log_path).read_text().startswith("loading model\n")
    if gpu.gpu_memory_used_mib() is None:
        assert out.leftover_gpu_mib is None


def test_child_environment_starts_from_an_allowlist(tmp_path: Path) -> None:
    parent = {"PATH": "/usr/bin:/bin", "HOME": "/home/w", "GITHUB_TOKEN": "x",
              "REDIS_URL": "redis://", "CUDA_VISIBLE_DEVICES": "0"}
    env = child_environment({"A": "1", "PYTHONUNBUFFERED": "0"}, result_path=tmp_path / "r",
                            python="/opt/envs/vllm/bin/python", parent=parent)
    assert env["PATH"] == "/opt/envs/vllm/bin:/usr/bin:/bin"
    assert env["TRIAGEBOT_RESULT"] == str(tmp_path / "r")
    assert env["PYTHONUNBUFFERED"] == "0"  # the cell's own choice wins over the default
    assert "GITHUB_TOKEN" not in env and "REDIS_URL" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["A"] == "1"


def test_cuda_oom_text_gives_oom(tmp_path: Path) -> None:
    body = """
    import sys
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    sys.exit(1)
    """
    out = _run(tmp_path, body)
    assert out.status == "oom" and out.exit_code == 1
    assert out.evidence and "CUDA out of memory" in out.evidence[0]
    assert "no result file" in " ".join(out.notes)


def test_config_rejection_in_log(tmp_path: Path) -> None:
    body = """
    import sys
    print("ValueError: Field 'max_cudagraph_capture_size' not found in CompilationConfig.")
    sys.exit(1)
    """
    out = _run(tmp_path, body)
    assert out.status == "config_rejected"
    assert "CompilationConfig" in (out.error or "")


def test_silent_script_is_a_hang(tmp_path: Path) -> None:
    out = _run(tmp_path, "import time\nprint('loading', flush=True)\ntime.sleep(60)\n",
               silence_limit_s=0.5, grace_s=0.3)
    assert out.status == "hang" and out.killed_by == "hang"
    assert out.signal == signal.SIGTERM and out.signal_name == "SIGTERM"
    assert out.wall_s < 20 and "printed nothing" in (out.error or "")


def test_chatty_script_past_the_wall_limit_is_a_timeout(tmp_path: Path) -> None:
    body = "import time\nwhile True:\n    print('step', flush=True)\n    time.sleep(0.05)\n"
    out = _run(tmp_path, body, wall_limit_s=0.6, silence_limit_s=20.0, grace_s=0.3)
    assert out.status == "timeout" and out.killed_by == "timeout"
    assert "step" in out.log_tail and out.wall_s < 20


SPAWN_STUBBORN = """
import os, subprocess, sys, time
code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('child ready', flush=True); time.sleep(60)")
child = subprocess.Popen([sys.executable, "-c", code], start_new_session={own_session})
open({pid_file!r}, "w").write(str(child.pid))
print("spawned", flush=True)  # after the pid is on disk, so no watchdog fires before
time.sleep(0.2)
{tail}
"""


@pytest.mark.parametrize("own_session", [False, True])
def test_hang_kills_every_process_of_the_tree(tmp_path: Path, own_session: bool) -> None:
    pid_file = tmp_path / "child.pid"
    body = SPAWN_STUBBORN.format(
        own_session=own_session, pid_file=str(pid_file),
        tail="import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)")
    out = _run(tmp_path, body, silence_limit_s=1.0, grace_s=0.3)
    assert out.status == "hang"
    assert out.signal == signal.SIGKILL  # the script ignored TERM too
    assert _gone(int(pid_file.read_text()))


def test_stray_child_is_killed_when_the_script_returns(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    body = SPAWN_STUBBORN.format(own_session=False, pid_file=str(pid_file),
                                 tail=_write_result_code(OK_RESULT))
    out = _run(tmp_path, body, grace_s=0.3)
    assert out.status == "ok" and out.exit_code == 0
    assert _gone(int(pid_file.read_text()))


def test_segfault_is_a_crash(tmp_path: Path) -> None:
    out = _run(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert out.status == "crashed"
    assert out.signal == signal.SIGSEGV and out.signal_name == "SIGSEGV"
    assert out.exit_code is None
    assert "Segmentation fault" in out.log_tail  # PYTHONFAULTHANDLER reached the child


@pytest.mark.parametrize(("payload", "reason"), [
    ("{not json", "not JSON"),
    ('{"cell_id": "c1", "status": "great"}', "not a RunResult"),
])
def test_garbage_result_is_reported_not_raised(tmp_path: Path, payload: str,
                                               reason: str) -> None:
    body = f"import os\nopen(os.environ['TRIAGEBOT_RESULT'], 'w').write({payload!r})\n"
    out = _run(tmp_path, body)
    assert out.status == "failed" and out.result is None
    assert reason in (out.result_error or "") and "exited 0" in (out.error or "")


def test_stale_result_from_an_earlier_run_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text(json.dumps(OK_RESULT))
    out = _run(tmp_path, "import sys\nsys.exit(2)\n")
    assert out.status == "failed" and out.result is None and out.exit_code == 2


def test_output_flood_is_bounded(tmp_path: Path) -> None:
    body = """
    import sys
    line = "x" * 1023 + "\\n"
    for i in range(4096):
        sys.stdout.write(line)
    print("LAST LINE")
    """
    cap = 256 * 1024
    out = _run(tmp_path, body, log_cap_bytes=cap)
    assert out.status == "failed"  # no result written
    assert out.log_bytes > 4 * 1024 * 1024 and out.log_truncated
    log = Path(out.log_path)
    assert log.stat().st_size < cap + 1024
    assert "log capped" in log.read_text()[-300:]
    assert len(out.log_tail.encode()) <= TAIL_BYTES and out.log_tail.endswith("LAST LINE\n")
    assert out.log_head.startswith("xxx") and len(out.log_head) <= 8 * 1024


def test_ok_result_then_nonzero_exit_keeps_measurements(tmp_path: Path) -> None:
    out = _run(tmp_path, _write_result_code(OK_RESULT) + "import sys\nsys.exit(3)\n")
    assert out.status == "ok" and out.exit_code == 3
    assert any("exited with status 3" in n for n in out.notes)


def test_interpreter_that_cannot_start(tmp_path: Path) -> None:
    script = tmp_path / "cell.py"
    script.write_text("print('hi')\n")
    out = run_script(script, python=str(tmp_path / "no-python"), env={},
                     paths=ScriptPaths(tmp_path / "r.json", tmp_path / "l.log"),
                     limits=Limits(wall_limit_s=5, silence_limit_s=5))
    assert out.status == "failed" and "could not start" in (out.error or "")


def test_leftover_gpu_memory_is_reported(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text('#!/bin/sh\ncat "$FAKE_SMI_FILE"\n')
    smi.chmod(0o755)
    reading = tmp_path / "smi.txt"
    reading.write_text("1000\n300\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SMI_FILE", str(reading))
    assert gpu.gpu_memory_used_mib() == [1000, 300]
    body = (f"open({str(reading)!r}, 'w').write('5000\\n300\\n')\n"
            + _write_result_code(OK_RESULT))
    out = _run(tmp_path, body, gpu_settle_s=0.2)
    assert out.status == "ok" and out.leftover_gpu_mib == 4000
    assert any("4000 MiB" in n for n in out.notes)
    reading.write_text("[N/A]\n")
    assert gpu.gpu_memory_used_mib() is None


def test_no_nvidia_smi_means_no_reading(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu.gpu_memory_used_mib() is None
    assert gpu.leftover_mib([100, 100], [150, 900]) == 800
    assert gpu.leftover_mib(None, [1]) is None
    assert gpu.settled_leftover_mib([100], settle_s=0, sample=lambda: [400]) == 0


def test_read_result_missing_file(tmp_path: Path) -> None:
    assert read_result(tmp_path / "nope.json") == (None, "the script wrote no result file")


def _result(status: str) -> RunResult:
    return RunResult.model_validate({**OK_RESULT, "status": status, "error": f"{status}!"})


@pytest.mark.parametrize(("code", "killed", "status", "oom", "cfg", "want"), [
    (0, None, "ok", False, False, "ok"),
    (0, None, "config_rejected", False, False, "config_rejected"),
    (1, None, None, False, False, "failed"),
    (1, None, None, True, False, "oom"),
    (1, None, None, False, True, "config_rejected"),
    (1, None, None, True, True, "oom"),
    (-11, None, None, False, False, "crashed"),
    (-6, None, None, True, False, "oom"),  # an abort after a CUDA OOM is still an OOM
    (1, None, "failed", True, False, "oom"),
    (0, None, None, False, False, "failed"),
    (-15, "hang", None, False, False, "hang"),
    (-9, "timeout", "failed", False, False, "timeout"),
    (-15, "hang", "ok", False, False, "ok"),  # measured, then stuck in shutdown
])
def test_classify_table(code: int, killed: str | None, status: str | None, oom: bool,
                        cfg: bool, want: str) -> None:
    result = _result(status) if status else None
    got, error, notes = classify(
        returncode=code, killed_by=killed, result=result,  # type: ignore[arg-type]
        result_error=None if result else "the script wrote no result file",
        oom_lines=["CUDA out of memory"] if oom else [],
        config_lines=["not found in CompilationConfig"] if cfg else [], limits=(60, 30))
    assert got == want
    assert (error is None) == (want == "ok")
    if result is not None and got != status:
        assert notes


def test_the_owner_tag_comes_last_where_a_process_title_does_not_overwrite_it(
        tmp_path: Path) -> None:
    from triagebot.run.leftovers import OWNER_VAR, owner_tag

    env = child_environment({"A": "1"}, result_path=tmp_path / "r", python="python",
                            parent={"PATH": "/bin"})
    assert list(env)[-1] == OWNER_VAR and env[OWNER_VAR] == owner_tag("")
    mine = child_environment({OWNER_VAR: owner_tag("s"), "B": "2"},
                             result_path=tmp_path / "r", python="python", parent={})
    assert list(mine)[-1] == OWNER_VAR and mine[OWNER_VAR] == owner_tag("s")
