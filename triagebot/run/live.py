"""A cell's script kept running between rounds: one engine start, many rounds of runs.

On the cpu runner an engine start costs tens of seconds and adds an offset of its own to
every run it measures, so restarting every cell each round spent most of a plan's time on
starts and put the rounds of two compared cells minutes apart. A live script (a template
that supports `TRIAGEBOT_LIVE=1`, see `repro_templates/_common/runtime.py.j2`) starts its
engine and runs its warm-ups once, then measures each round on a command line read from
stdin, writing that round's RunResult to the path the command names. Between its rounds
the whole process tree is stopped (SIGSTOP): an idle engine's threads cannot spin against
the cell being measured, and the compared cells' rounds can follow each other seconds
apart. The script stays under the same watch as `supervise.run_script`: a wall-clock
limit per round, the silence watchdog while it is running, its output in one capped log
per session, and every way it ends classified the same way. While later engines start,
`KeepWarm` runs the paused ones now and then, so none waits long before its first round.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from triagebot.run.process_groups import has_exited, signal_tree, stop_tree
from triagebot.run.supervise import (
    LOG_CAP_BYTES,
    CellOutcome,
    Killer,
    LogSink,
    child_environment,
    outcome_of,
    read_chunk,
    script_argv,
)

LIVE_ENV = {"TRIAGEBOT_LIVE": "1"}
_POLL_S = 0.05


class LiveScript:
    """One cell's script, started on its first round and kept until `close`.

    `measure` runs one round and returns its CellOutcome; the script is paused between
    rounds. A script that died (or was killed by a watchdog) is not restarted here: the
    caller sees `alive` False and starts a new one when it wants more rounds.
    """

    def __init__(self, script: Path, *, python: str, env: Mapping[str, str], log_path: Path,
                 cwd: Path, silence_limit_s: float, grace_s: float = 10.0,
                 log_cap_bytes: int = LOG_CAP_BYTES) -> None:
        self.script = script
        self._python = python
        self._env = {**env, **LIVE_ENV}
        self.log_path = log_path
        self._cwd = cwd
        self._silence_limit_s = silence_limit_s
        self._grace_s = grace_s
        self._log_cap = log_cap_bytes
        self._proc: subprocess.Popen[bytes] | None = None
        self._sink: LogSink | None = None
        self._pump: threading.Thread | None = None
        self._last_output = 0.0
        self._paused = False
        self.rounds = 0

    @property
    def started(self) -> bool:
        return self._proc is not None

    @property
    def alive(self) -> bool:
        return self._proc is not None and not has_exited(self._proc)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self, result_path: Path) -> str | None:
        """Start the script; its start-up failure, if any, goes to `result_path`."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        child_env = child_environment(self._env, result_path=result_path, python=self._python)
        self._sink = LogSink(self.log_path, self._log_cap, None)
        try:
            self._proc = subprocess.Popen(
                script_argv(self._python, self.script), cwd=self._cwd, env=child_env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            self._sink.close()
            return f"could not start {self._python}: {exc}"
        self._last_output = time.monotonic()
        self._pump = threading.Thread(target=self._copy_output, daemon=True,
                                      name=f"live-{self.script.stem}")
        self._pump.start()
        return None

    def _copy_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        assert self._sink is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                if not sel.select(1.0):
                    continue
                data = read_chunk(fd)
                if data is None:
                    continue
                if not data:
                    return
                self._sink.feed(data)
                self._last_output = time.monotonic()

    def pause(self) -> None:
        if self.alive and not self._paused:
            assert self._proc is not None
            signal_tree(self._proc.pid, signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        if self._proc is not None and self._paused:
            signal_tree(self._proc.pid, signal.SIGCONT)
            self._paused = False
        self._last_output = time.monotonic()  # a paused script prints nothing, rightly

    def measure(self, runs: int, result_path: Path, *, wall_limit_s: float,
                stop: Callable[[], bool] | None = None) -> CellOutcome:
        """One round of `runs` runs (the first one also starts the engine), then pause."""
        began = self.send(runs, result_path)
        if isinstance(began, CellOutcome):
            return began
        return self.collect(result_path, began, wall_limit_s=wall_limit_s, stop=stop)

    def send(self, runs: int, result_path: Path) -> float | CellOutcome:
        """Ask for one round of `runs` runs without waiting for it (the first one starts
        the engine; `runs` 0 only starts it and runs its warm-ups): when it began, for
        `collect`, or the outcome of a script that could not be started."""
        result_path.unlink(missing_ok=True)
        result_path.parent.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        if self._proc is None:
            error = self._start(result_path)
            if error is not None:
                return CellOutcome(status="failed", log_path=str(self.log_path), error=error)
        assert self._proc is not None and self._proc.stdin is not None
        self.resume()
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._proc.stdin.write(f"run {runs} {result_path}\n".encode())
            self._proc.stdin.flush()
        return began

    def collect(self, result_path: Path, began: float, *, wall_limit_s: float,
                stop: Callable[[], bool] | None = None) -> CellOutcome:
        """Wait for the round `send` asked for (under the watchdogs), then pause."""
        assert self._proc is not None
        killed_by = self._wait(result_path, began, wall_limit_s, stop)
        wall_s = time.monotonic() - began
        self.rounds += 1
        if killed_by is not None:
            self.close()
        elif self.alive:
            self.pause()
        else:
            self.close()
        return self._outcome(result_path, killed_by, wall_s, (wall_limit_s,
                                                              self._silence_limit_s))

    def _wait(self, result_path: Path, began: float, wall_limit_s: float,
              stop: Callable[[], bool] | None) -> Killer | None:
        assert self._proc is not None
        while True:
            if result_path.exists():
                return None
            if has_exited(self._proc):
                return None
            now = time.monotonic()
            if now - began >= wall_limit_s:
                return "timeout"
            if now - self._last_output >= self._silence_limit_s:
                return "hang"
            if stop is not None and stop():
                return "cancelled"
            time.sleep(_POLL_S)

    def _outcome(self, result_path: Path, killed_by: Killer | None, wall_s: float,
                 limits: tuple[float, float]) -> CellOutcome:
        assert self._proc is not None and self._sink is not None
        sink = self._sink
        code = self._proc.returncode if self._proc.returncode is not None else 0
        return outcome_of(sink, code, killed_by, result_path, wall_s=wall_s, limits=limits)

    def release(self) -> None:
        """Tell the script to end (resumed, its stdin closed) without waiting for it: the
        pool tells every engine at once, and their shutdowns overlap."""
        proc = self._proc
        if proc is None:
            return
        if self._paused:
            signal_tree(proc.pid, signal.SIGCONT)
            self._paused = False
        if proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()

    def close(self) -> None:
        """End the script: stdin closed (it exits by itself), then its tree stopped."""
        proc = self._proc
        if proc is None:
            return
        self.release()
        deadline = time.monotonic() + self._grace_s
        while not has_exited(proc) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        stop_tree(proc, self._grace_s)
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        if proc.stdout is not None:
            with contextlib.suppress(OSError):
                proc.stdout.close()
        if self._sink is not None and not self._sink.closed:
            self._sink.close()


class KeepWarm:
    """While other engines start, one batch on each engine of `keys` every `every_s`
    seconds, in a thread of its own, its result not kept. An engine left paused for the
    minute or more the others take to start ran slower for the whole plan than the
    engines started last (docs/runners/cpu-vllm.md, on keeping the noise down); run every few
    seconds, it keeps pace with them. Used around the wait for the starts: on leaving, an
    engine whose batch failed is closed, and `cancelled` says whether `stop` asked to end
    meanwhile."""

    def __init__(self, pool: LivePool, keys: Sequence[str], *, every_s: float,
                 result_dir: Path, wall_limit_s: float,
                 stop: Callable[[], bool] | None = None) -> None:
        self._pool = pool
        self._keys = list(keys)
        self._every_s = every_s
        self._result_dir = result_dir
        self._wall_limit_s = wall_limit_s
        self._stop = stop
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed: list[str] = []
        self.cancelled = False

    def __enter__(self) -> KeepWarm:
        if self._keys:
            self._thread = threading.Thread(target=self._loop, daemon=True, name="keep-warm")
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        for key in self._failed:
            self._pool.drop(key)

    def _loop(self) -> None:
        while not self._done.wait(self._every_s):
            for key in self._keys:
                script = self._pool.running_script(key)
                if self._done.is_set() or script is None or key in self._failed:
                    continue
                outcome = script.measure(1, self._result_dir / f"{key}-warm.json",
                                         wall_limit_s=self._wall_limit_s, stop=self._stop)
                if outcome.killed_by == "cancelled":
                    self.cancelled = True
                    return
                if outcome.status != "ok":
                    self._failed.append(key)


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None off Linux): whether one more live engine fits."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def tree_rss_bytes(pid: int) -> int:
    """Memory of `pid` and its descendants (an engine's front end, core and worker): the
    proportional set size where the kernel gives it, so libraries the processes share
    are counted once, else the resident size."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path("/proc", name, "stat").read_bytes().rsplit(b")", 1)[1].split()
            parents[int(name)] = int(fields[1])
            rss[int(name)] = int(fields[21]) * page
    for child, rss_bytes in rss.items():
        cur, hops = child, 0
        while cur not in (0, 1, pid) and hops < 64:
            cur, hops = parents.get(cur, 0), hops + 1
        if cur == pid:
            total += _pss(child) or rss_bytes
    return total


def _pss(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return None


# Templates whose scripts answer TRIAGEBOT_LIVE (see the module doc).
LIVE_TEMPLATES = frozenset({"vllm/offline.py.j2"})
# What a live engine must leave free for the machine's other work before one more starts.
RESERVE_BYTES = 2 << 30


class LivePool:
    """The live scripts of one plan, started on demand and closed least recently used
    first when memory runs short: a paused engine gives back its CPU, not its memory."""

    def __init__(self, *, reserve_bytes: int = RESERVE_BYTES,
                 memory: Callable[[], int | None] = available_memory_bytes) -> None:
        self._live: dict[str, LiveScript] = {}
        self._reserve = reserve_bytes
        self._memory = memory
        self._largest = 0  # the largest engine seen so far, in resident bytes
        self.starts = 0

    def get(self, key: str, make: Callable[[], LiveScript]) -> LiveScript:
        script = self._live.pop(key, None)
        if script is not None and script.started and not script.alive:
            script.close()
            script = None
        if script is None:
            self._make_room()
            script = make()
            self.starts += 1
        self._live[key] = script  # most recently used last
        return script

    def running(self, key: str) -> bool:
        """Whether `key` has an engine started and still alive (its next round starts none)."""
        return self.running_script(key) is not None

    def running_script(self, key: str) -> LiveScript | None:
        """`key`'s script, where its engine is started and still alive."""
        script = self._live.get(key)
        return script if script is not None and script.started and script.alive else None

    def measured(self, key: str) -> None:
        """Note the size of `key`'s engine after a round (it is largest once started)."""
        script = self._live.get(key)
        if script is not None and script.pid is not None and script.alive:
            self._largest = max(self._largest, tree_rss_bytes(script.pid))

    def room_for(self, engines: int) -> bool:
        """Whether `engines` more engines of the largest size seen so far fit now, beside
        the reserve, without closing any (False until one engine has been measured)."""
        free = self._memory()
        if free is None or self._largest == 0:
            return False
        return free - engines * self._largest >= self._reserve

    def _make_room(self) -> None:
        while self._live:
            free = self._memory()
            if free is None or free - self._largest >= self._reserve:
                return
            oldest = next(iter(self._live))
            self._live.pop(oldest).close()

    def drop(self, key: str) -> None:
        """Close `key`'s script (one whose start failed: it may not have exited yet)."""
        script = self._live.pop(key, None)
        if script is not None:
            script.close()

    def close_all(self) -> None:
        """End every engine."""
        self.close(list(self._live))

    def close(self, keys: Sequence[str]) -> None:
        """End the engines of `keys`: all are told first, then each is waited for (a vLLM
        engine takes seconds to shut down, and one after another they added up)."""
        scripts = [script for key in keys
                   if (script := self._live.pop(key, None)) is not None]
        for script in scripts:
            script.release()
        for script in scripts:
            script.close()
