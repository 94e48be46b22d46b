"""Run one rendered script under supervision and say how it ended.

A cell is a script that may run for an hour, fill the disk with output, hang inside a
CUDA call, leave engine processes behind, or die on a signal. The supervisor therefore:

- starts it in a session of its own, with an environment built from an allowlist (the
  worker's credentials never reach a script), stdout and stderr merged into one pipe;
- copies that pipe to a log file capped in size, keeping a short head and tail in memory
  for the report, and watches two clocks: total wall time and time since the last output;
- when a clock runs out, or when the script returns, signals every process group the
  script's tree uses (TERM, a grace period, KILL), so stray children never outlive it;
- reads the RunResult the script wrote, if any, and reconciles it with the exit code and
  the log into one status (`classify`).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal as _signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from triagebot.run import gpu
from triagebot.run.leftovers import OWNER_VAR, owner_tag
from triagebot.run.process_groups import has_exited, stop_tree
from triagebot.run_result import RunResult, RunStatus

HEAD_BYTES = 8 * 1024
TAIL_BYTES = 32 * 1024
LOG_CAP_BYTES = 50 * 1024 * 1024
RESULT_CAP_BYTES = 16 * 1024 * 1024
# Variables a script may see from the worker's environment; everything else is dropped.
BASE_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "CUDA_VISIBLE_DEVICES", "HF_HOME",
            "HF_HUB_OFFLINE")
# Unbuffered output keeps the silence watchdog honest (a block-buffered child looks
# silent for minutes); the fault handler prints Python stacks on SIGSEGV/SIGABRT.
DEFAULT_CHILD_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}

_READ_CHUNK = 64 * 1024
_LINE_CAP = 64 * 1024
_POLL_S = 0.1
_DRAIN_S = 2.0
_EVIDENCE_LINES = 5
_EVIDENCE_CHARS = 300

_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")
_CONFIG_REJECTED = re.compile(
    r"not found in \w*Config\b"
    r"|is not a valid argument in the speculative_config"
    r"|validation errors? for (?:SpeculativeConfig|CompilationConfig)\b"
)

# Runs first in the child on Linux: ask the kernel to SIGKILL the script if the
# supervisor dies (a Celery hard limit kills the worker, not our session), then become
# the script. Values travel as argv, never as code.
_TRAMPOLINE = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, 9)\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(70)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)

Killer = Literal["hang", "timeout", "cancelled"]


class CellOutcome(BaseModel):
    """How one supervised run ended, with what the report needs to explain it.

    `log_tail` holds the last bytes of output; `log_head` the first ones, and is empty
    when the tail already holds the whole log.
    """

    model_config = ConfigDict(extra="forbid")

    status: RunStatus
    exit_code: int | None = None
    signal: int | None = None
    signal_name: str | None = None
    killed_by: Killer | None = None
    wall_s: float = 0.0
    log_path: str = ""
    log_bytes: int = 0
    log_truncated: bool = False
    log_head: str = ""
    log_tail: str = ""
    result: RunResult | None = None
    result_error: str | None = None
    error: str | None = None
    notes: list[str] = Field(
        default_factory=list,
        description="why the status differs from what the exit code or the result alone says",
    )
    evidence: list[str] = Field(default_factory=list,
                                description="log lines that decided an oom or config_rejected")
    leftover_gpu_mib: int | None = None


# --- environment -----------------------------------------------------------------------


def child_environment(
    env: Mapping[str, str], *, result_path: Path, python: str,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment a script gets: allowlisted basics, the owner's tag, `env`,
    the result path."""
    parent = os.environ if parent is None else parent
    out = {name: parent[name] for name in BASE_ENV if name in parent}
    # Scripts find engine CLIs (`vllm serve`) beside their interpreter.
    bindir = os.path.dirname(python)
    if os.path.isabs(python) and bindir:
        rest = [p for p in out.get("PATH", os.defpath).split(os.pathsep) if p != bindir]
        out["PATH"] = os.pathsep.join([bindir, *rest])
    out.update(DEFAULT_CHILD_ENV)
    out.update(env)
    out["TRIAGEBOT_RESULT"] = str(result_path)
    # Who started the script, inherited by all it starts: what a runner killed outright
    # leaves behind is found by it (`leftovers.reap`); a caller may set its own scope.
    # Last: a process that sets its title (vLLM's engine core and workers, through
    # setproctitle) overwrites the first entries of its environment block with it.
    out[OWNER_VAR] = out.pop(OWNER_VAR, "") or owner_tag("")
    return out


# --- the log ---------------------------------------------------------------------------


class LogSink:
    """Copies output to a capped file, keeps head and tail, and scans complete lines."""

    def __init__(self, path: Path, cap: int, on_line: Callable[[str], None] | None):
        self.path = path
        self._file = path.open("wb")
        self._cap = cap
        self._on_line = on_line
        self._partial = bytearray()
        self.written = 0
        self.total = 0
        self.head = bytearray()
        self.tail = bytearray()
        self.oom: list[str] = []
        self.config: list[str] = []
        self.callback_error: str | None = None
        self.closed = False

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if self.written < self._cap:
            part = data[: self._cap - self.written]
            self._file.write(part)
            self.written += len(part)
        if len(self.head) < HEAD_BYTES:
            self.head += data[: HEAD_BYTES - len(self.head)]
        self.tail += data
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]
        self._split(data)

    def _split(self, data: bytes) -> None:
        self._partial += data
        *lines, rest = self._partial.split(b"\n")
        self._partial = bytearray(rest)
        if len(self._partial) > _LINE_CAP:
            lines.append(bytearray(self._partial))
            self._partial.clear()
        for raw in lines:
            self._line(raw.decode("utf-8", "replace").rstrip("\r"))

    def _line(self, line: str) -> None:
        for pattern, found in ((_OOM, self.oom), (_CONFIG_REJECTED, self.config)):
            if len(found) < _EVIDENCE_LINES and pattern.search(line):
                found.append(line.strip()[:_EVIDENCE_CHARS])
        if self._on_line is None:
            return
        try:
            self._on_line(line)
        except Exception as exc:  # a progress display must not take a cell down
            self.callback_error = f"on_line callback failed and was dropped: {exc!r}"
            self._on_line = None

    def close(self) -> None:
        if self._partial:
            self._line(self._partial.decode("utf-8", "replace"))
            self._partial.clear()
        self.closed = True
        if self.total > self.written:
            dropped = self.total - self.written
            self._file.write(
                f"\n[triagebot: log capped at {self._cap} bytes; {dropped} more bytes were "
                "read and dropped; the tail below is in the report]\n".encode()
            )
        self._file.close()

    def head_text(self) -> str:
        return "" if self.total <= TAIL_BYTES else self.head.decode("utf-8", "replace")

    def tail_text(self) -> str:
        tail = bytes(self.tail[-TAIL_BYTES:])
        if self.total > TAIL_BYTES:
            # Start on a line boundary when one is near, so the tail reads cleanly.
            cut = tail.find(b"\n", 0, 1024)
            tail = tail[cut + 1 :] if cut >= 0 else tail
        return tail.decode("utf-8", "replace")


# --- the run ---------------------------------------------------------------------------


def script_argv(python: str, script: Path) -> list[str]:
    if sys.platform.startswith("linux"):
        return [python, "-S", "-c", _TRAMPOLINE, str(os.getpid()), python, str(script)]
    return [python, str(script)]


def _pump(proc: subprocess.Popen[bytes], sink: LogSink, started: float,
          wall_limit_s: float, silence_limit_s: float,
          stop: Callable[[], bool] | None) -> Killer | None:
    """Copy output until the script exits, a clock runs out or `stop` says so; say which."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    last_output = started
    eof = False
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now - started >= wall_limit_s:
                return "timeout"
            if now - last_output >= silence_limit_s:
                return "hang"
            if has_exited(proc):
                return None
            if stop is not None and stop():
                return "cancelled"
            wait = min(_POLL_S, started + wall_limit_s - now, last_output + silence_limit_s - now)
            if eof:
                time.sleep(max(0.0, wait))
                continue
            if sel.select(max(0.0, wait)):
                data = read_chunk(fd)
                if data is None:
                    continue
                if not data:
                    eof = True
                    continue
                sink.feed(data)
                last_output = time.monotonic()


def read_chunk(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None


def _drain(proc: subprocess.Popen[bytes], sink: LogSink) -> None:
    """Read what is left in the pipe; give up if an escaped process still holds it open."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + _DRAIN_S
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(max(0.0, deadline - time.monotonic())):
                break
            data = read_chunk(fd)
            if data == b"":
                break
            if data:
                sink.feed(data)
    proc.stdout.close()


@dataclass(frozen=True)
class Limits:
    """How long a script may run and stay silent, how long it gets to stop, how much of
    its log is kept, and how long its GPU memory gets to settle after it."""

    wall_limit_s: float
    silence_limit_s: float
    grace_s: float = 10
    log_cap_bytes: int = LOG_CAP_BYTES
    gpu_settle_s: float = 10.0


@dataclass(frozen=True)
class ScriptPaths:
    """Where a script's result and its log are written."""

    result_path: Path
    log_path: Path


def run_script(
    script: Path,
    *,
    python: str,
    env: Mapping[str, str],
    paths: ScriptPaths,
    limits: Limits,
    on_line: Callable[[str], None] | None = None,
    cwd: Path | None = None,
    stop: Callable[[], bool] | None = None,
) -> CellOutcome:
    """Run `python script` under supervision; never raises for anything the script does.

    `stop` is polled while the script runs; when it answers True (the job was cancelled,
    or this worker lost the job's lock) the script's tree is stopped at once.
    """
    result_path, log_path = paths.result_path, paths.log_path
    wall_limit_s, silence_limit_s = limits.wall_limit_s, limits.silence_limit_s
    result_path.unlink(missing_ok=True)  # a stale result must not pass for this run's
    log_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = child_environment(env, result_path=result_path, python=python)
    gpu_before = gpu.gpu_memory_used_mib()
    sink = LogSink(log_path, limits.log_cap_bytes, on_line)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            script_argv(python, script), cwd=cwd or script.parent, env=child_env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        sink.close()
        return CellOutcome(status="failed", log_path=str(log_path),
                           error=f"could not start {python}: {exc}")
    killed_by: Killer | None = None
    try:
        killed_by = _pump(proc, sink, started, wall_limit_s, silence_limit_s, stop)
        wall_s = time.monotonic() - started
    finally:
        stop_tree(proc, limits.grace_s)
        _drain(proc, sink)
        sink.close()
    leftover = gpu.settled_leftover_mib(gpu_before, settle_s=limits.gpu_settle_s)
    return outcome_of(sink, proc.returncode, killed_by, result_path, wall_s=wall_s,
                      limits=(wall_limit_s, silence_limit_s), leftover_gpu_mib=leftover)


def outcome_of(sink: LogSink, returncode: int, killed_by: Killer | None, result_path: Path,
               *, wall_s: float, limits: tuple[float, float],
               leftover_gpu_mib: int | None = None) -> CellOutcome:
    """What one script run came to, from its log, its exit and the result it wrote: shared
    by a script that runs once and a live engine's round (`run/live.py`)."""
    result, result_error = read_result(result_path)
    status, error, notes = classify(
        returncode=returncode, killed_by=killed_by, result=result,
        result_error=result_error, oom_lines=sink.oom, config_lines=sink.config,
        limits=limits,
    )
    if sink.callback_error:
        notes.append(sink.callback_error)
    if leftover_gpu_mib:
        notes.append(f"{leftover_gpu_mib} MiB of GPU memory was still in use after the cell "
                     "ended; later cells on this GPU may be slowed or fail")
    code = returncode
    return CellOutcome(
        status=status,
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        signal_name=signal_name(-code) if code < 0 else None,
        killed_by=killed_by,
        wall_s=round(wall_s, 3),
        log_path=str(sink.path),
        log_bytes=sink.total,
        log_truncated=sink.total > sink.written,
        log_head=sink.head_text(),
        log_tail=sink.tail_text(),
        result=result,
        result_error=result_error,
        error=error,
        notes=notes,
        evidence=[*sink.oom, *sink.config] if status in ("oom", "config_rejected") else [],
        leftover_gpu_mib=leftover_gpu_mib,
    )


# --- reading and classifying -------------------------------------------------------------


def read_result(path: Path) -> tuple[RunResult | None, str | None]:
    """The RunResult at `path`, or None and why it could not be used."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None, "the script wrote no result file"
    if size > RESULT_CAP_BYTES:
        return None, f"the result file is {size} bytes, more than {RESULT_CAP_BYTES}"
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"the result file is not JSON: {exc}"[:500]
    try:
        return RunResult.model_validate(data), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        return None, f"the result file is not a RunResult: {where}: {first['msg']}"[:500]


def signal_name(signum: int) -> str:
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def classify(
    *,
    returncode: int,
    killed_by: Killer | None,
    result: RunResult | None,
    result_error: str | None,
    oom_lines: list[str],
    config_lines: list[str],
    limits: tuple[float, float],
) -> tuple[RunStatus, str | None, list[str]]:
    """One status from the exit code, the watchdog, the result file and the log.

    The result file is written once measuring is over, so a complete `ok` result stands
    even when the script then hangs or dies on its way out (engine shutdown is where
    vLLM most often does); the exit is kept in the notes.
    """
    notes: list[str] = []
    how = _describe_exit(returncode, killed_by, limits)
    if result is not None and result.status == "ok":
        if killed_by is not None or returncode != 0:
            notes.append(f"the script wrote an ok result, then {how}; its measurements "
                         "are kept")
        return "ok", None, notes
    if killed_by == "cancelled":
        return "failed", f"the script {how}", notes
    if killed_by is not None:
        if result is not None:
            notes.append(f"the result said {result.status!r} but the script then {how}")
        return killed_by, f"the script {how}", notes
    if result is not None:
        status = _refine(result.status, oom_lines, config_lines)
        if status != result.status:
            notes.append(f"the result said {result.status!r}; the log shows {status}")
        if returncode == 0:
            notes.append(f"the script exited 0 but its result says {result.status!r}")
        return status, result.error or _first(oom_lines, config_lines, status) or how, notes
    if returncode == 0:
        return "failed", f"the script exited 0 but {result_error}", notes
    status = _refine("failed", oom_lines, config_lines)
    if status == "failed" and returncode < 0:
        status = "crashed"
    if result_error:
        notes.append(result_error)
    return status, _first(oom_lines, config_lines, status) or f"the script {how}", notes


def _refine(status: RunStatus, oom_lines: list[str], config_lines: list[str]) -> RunStatus:
    """A generic failure becomes oom or config_rejected when the log says so."""
    if status != "failed":
        return status
    if oom_lines:
        return "oom"
    if config_lines:
        return "config_rejected"
    return status


def _first(oom_lines: list[str], config_lines: list[str], status: RunStatus) -> str | None:
    lines = {"oom": oom_lines, "config_rejected": config_lines}.get(status, [])
    return lines[0] if lines else None


def _describe_exit(returncode: int, killed_by: Killer | None,
                   limits: tuple[float, float]) -> str:
    wall_limit_s, silence_limit_s = limits
    if killed_by == "timeout":
        return f"was still running after {wall_limit_s:g} s and was killed"
    if killed_by == "cancelled":
        return "was stopped because its job was cancelled"
    if killed_by == "hang":
        return f"printed nothing for {silence_limit_s:g} s and was killed"
    if returncode < 0:
        return f"was killed by {signal_name(-returncode)}"
    return f"exited with status {returncode}"
