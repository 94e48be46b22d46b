"""Live scripts (`triagebot/run/live.py`): one start, many rounds, paused between them.

The scripts here are the templates' own runtime (`repro_templates/_common/runtime.py.j2`,
rendered as every cell script renders it) around a tiny `start`/`measure_runs` pair that
starts a child process, as an engine's core does, so pausing and stopping reach the tree.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.fakes.processes import process_state
from triagebot.plan_model import Budget
from triagebot.render import environment
from triagebot.run.live import LivePool, LiveScript, tree_rss_bytes
from triagebot.run_result import RunResult

BODY = """
import subprocess


def start():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("started", child.pid, flush=True)
    return {"child": child}


def measure_runs(state, count):
    if os.path.exists(os.environ.get("DIE_FLAG", "/nonexistent")):
        os._exit(3)
    if os.path.exists(os.environ.get("HANG_FLAG", "/nonexistent")):
        time.sleep(600)
    before = tree_cpu_seconds()
    runs = [run_record(10, 0.5, cpu_s=0.25, batches=2) for _ in range(count)]
    print("measured", count, tree_cpu_seconds() >= before, flush=True)
    return {"runs": runs, "child": state["child"].pid}


if __name__ == "__main__":
    main_live(start, measure_runs)
"""


def _script(tmp_path: Path) -> Path:
    from triagebot.plan_model import CellWorkload, Sampling

    runtime = environment().get_template("_common/runtime.py.j2").render(
        cell={"cell_id": "c0123456789", "engine": "vllm"}, budget=Budget(runs=3, warmups=1),
        schema_version=1, workload=CellWorkload, sampling=Sampling)
    path = tmp_path / "cell.py"
    path.write_text(runtime + textwrap.dedent(BODY))
    return path


def _live(tmp_path: Path, **env: str) -> LiveScript:
    return LiveScript(_script(tmp_path), python=sys.executable, env=env,
                      log_path=tmp_path / "logs" / "cell.log", cwd=tmp_path,
                      silence_limit_s=30.0, grace_s=1.0)


def _stopped(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while process_state(pid) != "T":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while process_state(pid) not in ("gone", "Z"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_one_start_serves_every_round_and_the_tree_is_paused_between(tmp_path: Path) -> None:
    live = _live(tmp_path)
    first = live.measure(2, tmp_path / "r0.json", wall_limit_s=60)
    assert first.status == "ok", first.error
    assert first.result is not None and len(first.result.runs) == 2
    assert first.result.runs[0].cpu_s == 0.25 and first.result.runs[0].batches == 2
    child = (first.result.model_extra or {})["child"]
    pid = live.pid
    assert pid is not None
    # Between rounds the script and its child are stopped.
    assert _stopped(pid) and _stopped(child)
    second = live.measure(3, tmp_path / "r1.json", wall_limit_s=60)
    assert second.status == "ok" and second.result is not None
    assert len(second.result.runs) == 3
    assert live.pid == pid and (second.result.model_extra or {})["child"] == child
    live.close()
    assert _gone(pid) and _gone(child)
    log = (tmp_path / "logs" / "cell.log").read_text()
    assert log.count("started") == 1 and "measured 2 True" in log and "measured 3 True" in log


def test_without_live_the_script_runs_once_and_writes_one_result(tmp_path: Path) -> None:
    import subprocess

    script = _script(tmp_path)
    env = {**os.environ, "TRIAGEBOT_RESULT": str(tmp_path / "once.json")}
    env.pop("TRIAGEBOT_LIVE", None)
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = RunResult.model_validate(json.loads((tmp_path / "once.json").read_text()))
    assert result.status == "ok" and len(result.runs) == 3  # the budget's runs
    os.kill((result.model_extra or {})["child"], 9)


def test_a_script_that_dies_mid_session_is_a_failed_round_and_not_alive(tmp_path: Path) -> None:
    flag = tmp_path / "die"
    live = _live(tmp_path, DIE_FLAG=str(flag))
    assert live.measure(1, tmp_path / "r0.json", wall_limit_s=60).status == "ok"
    flag.touch()
    outcome = live.measure(1, tmp_path / "r1.json", wall_limit_s=60)
    assert outcome.status == "failed" and outcome.exit_code == 3
    assert not live.alive
    live.close()


def test_a_silent_round_is_a_hang_and_the_tree_is_stopped(tmp_path: Path) -> None:
    flag = tmp_path / "hang"
    live = LiveScript(_script(tmp_path), python=sys.executable, env={"HANG_FLAG": str(flag)},
                      log_path=tmp_path / "cell.log", cwd=tmp_path, silence_limit_s=1.0,
                      grace_s=1.0)
    assert live.measure(1, tmp_path / "r0.json", wall_limit_s=60).status == "ok"
    pid = live.pid
    assert pid is not None
    flag.touch()
    outcome = live.measure(1, tmp_path / "r1.json", wall_limit_s=60)
    assert outcome.status == "hang" and outcome.killed_by == "hang"
    assert _gone(pid)


def test_the_pool_closes_the_least_recently_used_engine_when_memory_is_short(
        tmp_path: Path) -> None:
    free = [64 << 30]
    pool = LivePool(reserve_bytes=1 << 30, memory=lambda: free[0])
    made: dict[str, LiveScript] = {}

    def make(key: str) -> LiveScript:
        folder = tmp_path / key
        folder.mkdir()
        made[key] = _live(folder)
        return made[key]

    for key in ("a", "b"):
        pool.get(key, lambda k=key: make(k)).measure(1, tmp_path / f"{key}.json",
                                                       wall_limit_s=60)
        pool.measured(key)
    pool.get("a", lambda: pytest.fail("a is live"))  # a becomes the most recently used
    free[0] = 0  # no room for a third: b, the least recently used, is closed first
    pool.get("c", lambda: make("c")).measure(1, tmp_path / "c.json", wall_limit_s=60)
    assert not made["b"].alive and not made["a"].alive  # a went too: still no room
    assert made["c"].alive and pool.starts == 3
    pid = made["c"].pid
    assert pid is not None and tree_rss_bytes(pid) > 0
    pool.close_all()
    assert not made["c"].alive


def test_the_pool_has_room_for_more_engines_only_once_it_knows_an_engines_size(
        tmp_path: Path) -> None:
    free = [64 << 30]
    pool = LivePool(reserve_bytes=1 << 30, memory=lambda: free[0])
    assert not pool.room_for(2)  # no engine measured yet: its size is unknown
    pool.get("a", lambda: _live(tmp_path)).measure(1, tmp_path / "a.json", wall_limit_s=60)
    pool.measured("a")
    assert pool.room_for(2)
    free[0] = 1 << 30  # only the reserve is free
    assert not pool.room_for(1)
    pool.drop("a")
    assert not pool.running("a")
    pool.close_all()


PARTING = """


def start():
    return {}


def measure_runs(state, count):
    return {"runs": [run_record(10, 0.5) for _ in range(count)]}


if __name__ == "__main__":
    main_live(start, measure_runs)
    # Told to end: wait (up to 30 s) until every engine of the pool has been told too.
    folder = os.environ["PARTING"]
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.time() + 30
    while len(os.listdir(folder)) < int(os.environ["ENGINES"]):
        if time.time() > deadline:
            sys.exit(9)
        time.sleep(0.02)
    open(os.environ["DONE"], "w").close()
"""


def test_the_pool_tells_every_engine_to_end_before_waiting_for_any(tmp_path: Path) -> None:
    """Each engine here ends only once all have been told to: closed one after another,
    the first would wait out its grace and be killed before its DONE file."""
    from triagebot.plan_model import CellWorkload, Sampling

    runtime = environment().get_template("_common/runtime.py.j2").render(
        cell={"cell_id": "c0123456789", "engine": "vllm"}, budget=Budget(runs=3, warmups=1),
        schema_version=1, workload=CellWorkload, sampling=Sampling)
    script = tmp_path / "parting.py"
    script.write_text(runtime + textwrap.dedent(PARTING))
    (tmp_path / "told").mkdir()
    pool = LivePool(reserve_bytes=0, memory=lambda: None)
    for key in ("a", "b", "c"):
        env = {"PARTING": str(tmp_path / "told"), "ENGINES": "3",
               "DONE": str(tmp_path / f"{key}.done")}
        live = pool.get(key, lambda env=env, key=key: LiveScript(
            script, python=sys.executable, env=env, log_path=tmp_path / f"{key}.log",
            cwd=tmp_path, silence_limit_s=30.0, grace_s=5.0))
        assert live.measure(1, tmp_path / f"{key}.json", wall_limit_s=60).status == "ok"
    pool.close_all()
    assert sorted(p.name for p in tmp_path.glob("*.done")) == ["a.done", "b.done", "c.done"]
