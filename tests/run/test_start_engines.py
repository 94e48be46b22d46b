"""Live engines start before the first round, two at a time once one has shown its size,
those started earlier running a batch now and then meanwhile (`rounds.start_engines`).

The scripts are the templates' own runtime around a tiny `start`: an engine told to find a
partner (PARTY, a folder) waits in its start until a second engine has entered the same
folder, so a pair started one after the other fails its start and a pair started
together passes, whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import sys
import textwrap
from pathlib import Path

from tests.report import load_fixture
from triagebot.plan_model import Budget, CellWorkload, Plan, Sampling
from triagebot.progress import Event, Pace
from triagebot.render import environment
from triagebot.run.cell_envs import CellEnv, CellEnvs
from triagebot.run.live import LivePool
from triagebot.run.provision import ProvisionedEnv
from triagebot.run.rounds import RunSettings, Session, start_engines
from triagebot.run.schedule import Slot

BODY = """


def note(what):
    if os.environ.get("EVENTS"):
        with open(os.environ["EVENTS"], "a") as f:
            f.write(f"{what} {os.environ['CELL']}\\n")


def start():
    if os.environ.get("FAIL_START"):
        raise RuntimeError("this engine does not start")
    note("start")
    wait = os.environ.get("WARM_WAIT_S")
    if wait:
        # This engine starts only once engine 0 has run a batch while it started (or at
        # all, with WARM_ANY: a batch that fails is engine 0's last).
        deadline = time.time() + float(wait)
        while True:
            text = open(os.environ["EVENTS"]).read()
            if not os.environ.get("WARM_ANY"):
                text = text.split("start " + os.environ["CELL"])[-1]
            if "run1 0" in text:
                break
            if time.time() > deadline:
                raise RuntimeError("no engine was kept warm")
            time.sleep(0.02)
    party = os.environ.get("PARTY")
    if party:
        open(os.path.join(party, str(os.getpid())), "w").close()
        deadline = time.time() + float(os.environ["PARTY_WAIT_S"])
        while len(os.listdir(party)) < 2:
            if time.time() > deadline:
                raise RuntimeError("started alone")
            time.sleep(0.02)
    return {}


def measure_runs(state, count):
    if count:  # 0: the start's own round, warm-ups only
        note(f"run{count}")
    if count and os.environ.get("FAIL_RUN"):
        raise RuntimeError("this engine stopped working")
    return {"runs": [run_record(10, 0.5) for _ in range(count)]}


if __name__ == "__main__":
    main_live(start, measure_runs)
"""


def _script(tmp_path: Path) -> Path:
    runtime = environment().get_template("_common/runtime.py.j2").render(
        cell={"cell_id": "c0123456789", "engine": "vllm"}, budget=Budget(runs=3, warmups=1),
        schema_version=1, workload=CellWorkload, sampling=Sampling)
    path = tmp_path / "cell.py"
    path.write_text(runtime + textwrap.dedent(BODY))
    return path


def _start(tmp_path: Path, envs: list[dict[str, str]], pool: LivePool, *,
           keep_warm_s: float = 60.0, stop_on_failure: bool = False
           ) -> tuple[Plan, dict[str, object], list[Event]]:
    plan, _ = load_fixture("noisy_unknown")
    cells = [c.model_copy(update={"env": env}) for c, env in zip(plan.cells, envs, strict=True)]
    plan = plan.model_copy(update={"cells": cells})
    script = _script(tmp_path)
    slots = [Slot(cell_id=c.cell_id, runs=2, round=0) for c in cells]
    env = ProvisionedEnv(python=sys.executable, engine="vllm", version="0", kind="local",
                         path=sys.prefix)
    events: list[Event] = []
    with contextlib.ExitStack() as scratch:
        try:
            session = Session(
                plan=plan, request=None, paths={c.cell_id: script for c in cells},
                envs=CellEnvs({None: CellEnv(env)}), settings=RunSettings(out_dir=tmp_path,
                                                       stop_on_failure=stop_on_failure),
                emit=events.append,
                started=0.0, results={}, outcomes={}, store=None, stop=None, pool=pool,
                scratch=scratch, pace=Pace(60.0, len(cells)), planned=10)
            failed = start_engines(session, slots,
                                   {c.cell_id: i + 1 for i, c in enumerate(cells)},
                                   keep_warm_s=keep_warm_s)
            running = {c.cell_id: pool.running(c.cell_id) for c in cells}
        finally:
            pool.close_all()
    return plan, {"failed": failed, "running": running, "starts": pool.starts}, events


def test_after_the_first_engine_the_rest_start_two_at_a_time(tmp_path: Path) -> None:
    pair_a, pair_b = tmp_path / "a", tmp_path / "b"
    pair_a.mkdir()
    pair_b.mkdir()
    wait = {"PARTY_WAIT_S": "60"}
    envs = [{}, {"PARTY": str(pair_a), **wait}, {"PARTY": str(pair_a), **wait},
            {"PARTY": str(pair_b), **wait}, {"PARTY": str(pair_b), **wait}]
    plan, got, events = _start(tmp_path, envs, LivePool(reserve_bytes=0,
                                                         memory=lambda: 1 << 40))
    assert got["failed"] == {}
    assert got["running"] == {c.cell_id: True for c in plan.cells}
    assert got["starts"] == 5
    assert [e.cell_id for e in events if e.kind == "engine"] == [c.cell_id for c in plan.cells]


def test_without_room_for_two_they_start_one_at_a_time_and_a_failed_start_is_returned(
        tmp_path: Path) -> None:
    # No memory figure (as off Linux): no two engines are started together.
    envs: list[dict[str, str]] = [{}, {}, {}, {"FAIL_START": "1"}, {}]
    for i in (1, 4):
        (tmp_path / str(i)).mkdir()
        envs[i] = {"PARTY": str(tmp_path / str(i)), "PARTY_WAIT_S": "1"}
    plan, got, _ = _start(tmp_path, envs, LivePool(reserve_bytes=0, memory=lambda: None))
    ids = [c.cell_id for c in plan.cells]
    failed = got["failed"]
    assert isinstance(failed, dict)
    # The two that needed a partner started alone, and the one that cannot start failed.
    assert set(failed) == {ids[1], ids[3], ids[4]}
    assert all(o.status == "failed" for o in failed.values())
    assert got["running"] == {ids[0]: True, ids[1]: False, ids[2]: True, ids[3]: False,
                              ids[4]: False}


def test_with_stop_on_failure_no_engine_starts_after_one_failed(tmp_path: Path) -> None:
    # A watch run stops at its first failure: the engines after a failed start are
    # never started (on the cpu runner each start is minutes).
    envs: list[dict[str, str]] = [{}, {"FAIL_START": "1"}, {}, {}, {}]
    plan, got, events = _start(tmp_path, envs, LivePool(reserve_bytes=0, memory=lambda: None),
                               stop_on_failure=True)
    ids = [c.cell_id for c in plan.cells]
    assert set(got["failed"]) == {ids[1]}  # type: ignore[call-overload]
    assert got["running"] == {cid: cid == ids[0] for cid in ids}
    assert [e.cell_id for e in events if e.kind == "engine"] == ids[:2]


def _noted(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_while_later_engines_start_the_earlier_ones_run_a_batch_now_and_then(
        tmp_path: Path) -> None:
    events = tmp_path / "events"
    envs = [{"EVENTS": str(events), "CELL": str(i), "WARM_WAIT_S": "60"} for i in range(5)]
    del envs[0]["WARM_WAIT_S"]
    envs[2] = {"EVENTS": str(events), "CELL": "2", "FAIL_START": "1"}
    plan, got, _ = _start(tmp_path, envs, LivePool(reserve_bytes=0, memory=lambda: None),
                          keep_warm_s=0.05)
    ids = [c.cell_id for c in plan.cells]
    # Each start waited for a batch of engine 0 (one at a time: no memory figure).
    assert set(got["failed"]) == {ids[2]}  # type: ignore[call-overload]
    assert got["running"] == {cid: cid != ids[2] for cid in ids}
    noted = _noted(events)
    assert [n for n in noted if n.startswith("start")] == [
        "start 0", "start 1", "start 3", "start 4"]
    # Only engines already running are kept warm: 3 not before it started, 2 never.
    assert "run1 2" not in noted
    assert "run1 3" not in noted[:noted.index("start 4")]
    # The batches are not results.
    assert not list((tmp_path / "results").glob("*.json"))


def test_an_engine_whose_warm_batch_fails_is_closed_for_its_round_to_start_afresh(
        tmp_path: Path) -> None:
    events = tmp_path / "events"
    envs = [{"EVENTS": str(events), "CELL": str(i)} for i in range(5)]
    envs[0]["FAIL_RUN"] = "1"
    envs[1].update({"WARM_WAIT_S": "60", "WARM_ANY": "1"})
    plan, got, _ = _start(tmp_path, envs, LivePool(reserve_bytes=0, memory=lambda: None),
                          keep_warm_s=0.05)
    # Its one failed batch closed it; it is not tried again.
    assert _noted(events).count("run1 0") == 1
    assert got["failed"] == {}
    ids = [c.cell_id for c in plan.cells]
    assert got["running"] == {cid: cid != ids[0] for cid in ids}
