"""A runner that is killed leaves no engine behind (`run/shutdown.py`, `run/leftovers.py`).

The holder here is a real process that does what `triagebot repro` and the benches do: it
keeps live engines in a `LivePool` (paused, SIGSTOPped, between rounds) and may run a
one-shot script, under `run_until_stopped`. Its engines are fakes, named so: the
templates' own runtime around a `start` that starts a child process, as an engine's core
does, so the tree under each script is what a paused vLLM tree is to the signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.fakes.processes import process_state
from tests.fakes.signals import as_from_a_terminal
from triagebot.plan_model import Budget
from triagebot.render import environment
from triagebot.run import leftovers

FAKE_ENGINE = """
import subprocess


def start():
    core = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("fake engine core", core.pid, flush=True)
    return {"core": core}


def measure_runs(state, count):
    return {"runs": [run_record(10, 0.5) for _ in range(count)]}


if __name__ == "__main__":
    main_live(start, measure_runs)
"""

# A script that runs once, with a child of its own, printing so no watchdog fires.
FAKE_ONE_SHOT = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
while True:
    print("running", flush=True)
    time.sleep(0.5)
"""

HOLDER = """
import os, subprocess, sys, time
from pathlib import Path
from triagebot.run.leftovers import OWNER_VAR, owner_tag
from triagebot.run.live import LivePool, LiveScript
from triagebot.run.shutdown import run_until_stopped
from triagebot.run.supervise import Limits, ScriptPaths, run_script

engine, one_shot, folder, scope, mode = sys.argv[1:6]
folder = Path(folder)
env = {OWNER_VAR: owner_tag(scope)}


def main():
    pool = LivePool()
    try:
        for key in ("a", "b"):
            live = pool.get(key, lambda k=key: LiveScript(
                Path(engine), python=sys.executable, env=env, log_path=folder / f"{k}.log",
                cwd=folder, silence_limit_s=60, grace_s=60))
            outcome = live.measure(1, folder / f"{key}.json", wall_limit_s=60)
            assert outcome.status == "ok", outcome
        if mode == "installer":  # a child in the holder's own group, as uv is
            subprocess.run([sys.executable, "-c", "import time; time.sleep(600)"],
                           env={**os.environ, **env}, check=False)
        elif mode == "one-shot":
            run_script(Path(one_shot), python=sys.executable, env=env,
                       paths=ScriptPaths(folder / "once.json", folder / "once.log"),
                       limits=Limits(wall_limit_s=600, silence_limit_s=60, grace_s=60,
                                     gpu_settle_s=0))
        else:
            time.sleep(600)
    finally:
        pool.close_all()


run_until_stopped(main)
"""


def _wait(check, what: str, limit_s: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"waited {limit_s:g} s for {what}")
        time.sleep(0.05)


def _holder(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], str]:
    runtime = environment().get_template("_common/runtime.py.j2").render(
        cell={"cell_id": "c0123456789", "engine": "vllm"}, budget=Budget(runs=1, warmups=0),
        schema_version=1)
    engine = tmp_path / "fake_engine.py"
    engine.write_text(runtime + textwrap.dedent(FAKE_ENGINE))
    one_shot = tmp_path / "fake_one_shot.py"
    one_shot.write_text(textwrap.dedent(FAKE_ONE_SHOT))
    holder = tmp_path / "holder.py"
    holder.write_text(textwrap.dedent(HOLDER))
    # Our own scope: nothing this test reaps can be anyone else's.
    scope = leftovers.scope_of(tmp_path)
    proc = subprocess.Popen([sys.executable, str(holder), str(engine), str(one_shot),
                             str(tmp_path), scope, mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    return proc, scope


def _tree(scope: str, holder: subprocess.Popen[str], mode: str) -> list[int]:
    """The holder's processes once all are there: two paused fake engines (script and
    core each), and the running one-shot script and its child, or the installer."""
    want = {"one-shot": 6, "installer": 5}.get(mode, 4)

    def ready() -> list[int]:
        assert holder.poll() is None, holder.communicate()
        pids = leftovers.started_by(scope, holder.pid)
        stopped = [p for p in pids if process_state(p) == "T"]
        return pids if len(pids) == want and len(stopped) == 4 else []

    return _wait(ready, f"{want} processes under the holder, 4 of them stopped")


def _none_left(pids: list[int], scope: str) -> None:
    _wait(lambda: all(process_state(p) in ("gone", "Z") for p in pids), "the tree to end", 10)
    assert leftovers.leftovers(scope) == []


@pytest.mark.parametrize(("sig", "mode"), [
    pytest.param(sig, mode, id=f"{sig.name}-{mode}") for sig, mode in (
        (signal.SIGTERM, "paused"), (signal.SIGINT, "paused"), (signal.SIGTERM, "one-shot"),
        (signal.SIGHUP, "one-shot"), (signal.SIGTERM, "installer"))])
def test_a_signalled_holder_stops_every_engine_it_started(tmp_path: Path,
                                                          sig: signal.Signals,
                                                          mode: str) -> None:
    holder, scope = _holder(tmp_path, mode)
    try:
        tree = _tree(scope, holder, mode)
        holder.send_signal(sig)
        _out, err = holder.communicate(timeout=120)
        # It ends by the signal, as a shell expects, with one line and no traceback.
        assert holder.returncode == -sig, err
        assert "Traceback" not in err
        how = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}.get(sig, "hung up")
        assert f"triagebot: {how} ({sig.name}); stopped the" in err
        _none_left(tree, scope)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        leftovers.reap(scope)  # a failed test leaves nothing stopped either


def test_a_holder_killed_outright_leaves_a_stopped_tree_the_next_runner_ends(
        tmp_path: Path) -> None:
    holder, scope = _holder(tmp_path, "paused")
    decoy = None
    try:
        tree = _tree(scope, holder, "paused")
        # An owner that is alive keeps what it started.
        assert leftovers.reap(scope) == 0 and leftovers.leftovers(scope) == []
        holder.kill()
        holder.wait(timeout=30)
        # The scripts die with their owner (the trampoline's parent-death signal); their
        # engine cores are left, stopped, which is the defect the reaper mends.
        left = _wait(lambda: leftovers.leftovers(scope) if all(
            p in leftovers.leftovers(scope) or process_state(p) in ("gone", "Z") for p in tree)
            and len(leftovers.leftovers(scope)) == 2 else [], "the scripts to die")
        assert all(process_state(p) == "T" for p in left)
        # A dead owner's process of another scope is not ours to end.
        other = {**os.environ, leftovers.OWNER_VAR: "another:1:0"}
        decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 env=other)
        _wait(lambda: leftovers.leftovers("another") == [decoy.pid], "the decoy")
        logged: list[str] = []
        assert leftovers.reap(scope, log=logged.append) == 2
        assert "ended 2 process(es)" in logged[0]
        _none_left(tree, scope)
        assert decoy.poll() is None
    finally:
        if holder.poll() is None:
            holder.kill()
        leftovers.reap(scope)  # a failed test leaves nothing stopped either
        if decoy is not None:
            decoy.kill()
            decoy.wait()


def test_an_owner_is_its_pid_and_start_time_so_a_reused_pid_is_no_owner(
        tmp_path: Path) -> None:
    scope = leftovers.scope_of(tmp_path)
    mine = leftovers.owner_tag(scope)
    _, pid, ticks = mine.rsplit(":", 2)
    assert int(pid) == os.getpid() and int(ticks) == leftovers.start_ticks(os.getpid())
    # The same pid with another start time: this pid was reused, its owner is dead.
    reused = f"{scope}:{pid}:{int(ticks) + 1}"
    children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 env={**os.environ, leftovers.OWNER_VAR: tag})
                for tag in (mine, reused)]
    try:
        _wait(lambda: all(process_state(c.pid) == "S" for c in children), "the children")
        assert leftovers.leftovers(scope) == [children[1].pid]
        assert leftovers.started_by(scope, os.getpid()) == [children[0].pid]
    finally:
        for child in children:
            child.kill()
            child.wait()


FAKE_SERVE = """
server = start_tied([sys.executable, "-c", "import time; time.sleep(600)"])
print(server.pid, flush=True)
time.sleep(600)
"""


def test_a_server_in_a_session_of_its_own_ends_when_its_script_is_killed(
        tmp_path: Path) -> None:
    runtime = environment().get_template("_common/runtime.py.j2").render(
        cell={"cell_id": "c0123456789", "engine": "vllm"}, budget=Budget(runs=1, warmups=0),
        schema_version=1)
    script = tmp_path / "fake_serve.py"
    script.write_text(runtime + textwrap.dedent(FAKE_SERVE))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    server = None
    try:
        assert proc.stdout is not None
        server = int(proc.stdout.readline())
        # Out of reach of the script's group, as the serve templates want it...
        assert os.getsid(server) == server != os.getsid(proc.pid)
        proc.kill()  # ...and SIGKILL runs nothing in the script
        proc.wait()
        _wait(lambda: process_state(server) in ("gone", "Z"), "the server to end", 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if server is not None and process_state(server) not in ("gone", "Z"):
            os.kill(server, signal.SIGKILL)
