"""Running a rendered cell script against a fake engine, and checking its servers are gone.

The SGLang and vllm-mlx engine tests share these: each script writes its RunResult to
`$TRIAGEBOT_RESULT`, and the fake engine logs what it was asked to a JSON-lines file named
by the fake's own variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triagebot.run_result import RunResult


def run_cell_script(text: str, tmp_path: Path, log_var: str,
                    env: Mapping[str, str]) -> tuple[RunResult, list[dict[str, Any]]]:
    """Run the script with the fake's log in `log_var`; its RunResult and the fake's events."""
    script = tmp_path / "cell.py"
    script.write_text(text)
    result, log = tmp_path / "result.json", tmp_path / "events.jsonl"
    proc_env = {**os.environ, "TRIAGEBOT_RESULT": str(result), log_var: str(log),
                "TRIAGEBOT_READY_TIMEOUT": "60", **env}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=proc_env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert result.exists(), proc.stdout + proc.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return RunResult.model_validate_json(result.read_text()), events


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def assert_gone(*pids: int) -> None:
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "server processes outlived the script"
