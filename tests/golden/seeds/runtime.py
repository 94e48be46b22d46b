# --- triagebot runtime: environment, digest, result file (the same in every script) ---
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback



def _nvidia_smi(query):
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=" + query, "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def machine_env(engine_version=None, engine_commit=None):
    """GPU, driver, CUDA and torch as this process sees them."""
    env = {"gpu": None, "gpu_count": 0, "driver": None, "cuda": None, "torch": None,
           "engine_version": engine_version, "engine_commit": engine_commit}
    # Every engine has imported torch by the time this runs; importing it here for a
    # script that failed earlier would only add seconds to the failure.
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = torch.__version__
        # The CUDA this run used: a CUDA build of torch on a machine without a usable GPU
        # runs none, whatever CUDA its wheel was built with.
        env["cuda"] = "none"
        if torch.cuda.is_available():
            env["cuda"] = torch.version.cuda
            env["gpu_count"] = torch.cuda.device_count()
            env["gpu"] = torch.cuda.get_device_name(0)
    drivers = _nvidia_smi("driver_version")
    if drivers:
        env["driver"] = drivers[0]
    if env["gpu"] is None:
        names = _nvidia_smi("name")
        env["gpu"] = names[0] if names else "cpu: " + (platform.processor() or platform.machine())
        env["gpu_count"] = len(names)
    return env


def digest_token_ids(sequences):
    """One hash over every request's generated token ids, in request order."""
    h = hashlib.sha256()
    for seq in sequences:
        h.update(json.dumps([int(t) for t in seq]).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def tree_cpu_seconds():
    """User and system CPU seconds of this process and every live descendant, all their
    threads (from /proc; None elsewhere). An engine that runs in child processes spends
    its CPU there, and a run's CPU time is the change of this over the run: unlike wall
    time, it does not count the moments a neighbour had the core."""
    if not os.path.isdir("/proc/self"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    parents, ticks = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(name)] = int(fields[1])
        # utime, stime, and the same of children already reaped (they left the tree)
        ticks[int(name)] = sum(int(x) for x in fields[11:15])
    mine = {os.getpid()}
    for pid in sorted(parents):
        chain, cur = [], pid
        while cur in parents and cur not in mine and cur > 1 and len(chain) < 64:
            chain.append(cur)
            cur = parents[cur]
        if cur in mine:
            mine.update(chain)
    return sum(ticks.get(pid, 0) for pid in mine) / tick


# Runs first in a server's process, then becomes the server (exec keeps what it set): ask
# the kernel to send the server SIGTERM when this script dies (Linux PR_SET_PDEATHSIG).
# A server runs in a session of its own, so that stopping it stops its engine processes,
# and so nothing aimed at this script reaches it; this script dies by SIGKILL when its
# supervisor dies, running no `finally`. On SIGTERM the server stops its own engine core,
# which SIGKILL would leave behind. The signal comes when the thread that started the
# server ends: servers are started from the main thread.
_TIED = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def start_tied(argv, **popen_kwargs):
    """Start a server in a session of its own that ends when this script does."""
    if sys.platform.startswith("linux"):
        argv = [sys.executable, "-S", "-c", _TIED, str(os.getpid()), *argv]
    return subprocess.Popen(argv, start_new_session=True, **popen_kwargs)


def run_record(output_tokens, seconds, **latency):
    record = {"output_tokens": int(output_tokens), "seconds": float(seconds),
              "tok_s": float(output_tokens) / seconds if seconds > 0 else 0.0}
    record.update({k: float(v) for k, v in latency.items() if v is not None})
    if "batches" in record:
        record["batches"] = int(record["batches"])
    return record


def _error_status(exc):
    text = f"{type(exc).__name__}: {exc}"
    if "out of memory" in text.lower() or type(exc).__name__ == "OutOfMemoryError":
        return "oom"
    if type(exc).__name__ == "ConfigRejected" or "not found in" in text and "Config" in text:
        return "config_rejected"
    return "failed"


def write_result(doc, path=None):
    path = path or os.environ.get("TRIAGEBOT_RESULT") or f"result-{CELL_ID}.json"
    doc = {"schema_version": SCHEMA_VERSION, "cell_id": CELL_ID, "engine": ENGINE, **doc}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)
    print(f"triagebot: wrote {path} (status {doc['status']})", flush=True)


def _write_failure(exc, started, path=None):
    status = "failed" if isinstance(exc, KeyboardInterrupt) else _error_status(exc)
    traceback.print_exc()
    # A template may attach the tail of a server log to the exception it raises.
    write_result({"status": status, "error": f"{type(exc).__name__}: {exc}"[:2000],
                  "log_tail": str(getattr(exc, "log_tail", ""))[-4000:],
                  "env": machine_env(), "runs": [], "warmups": WARMUPS,
                  "wall_s": time.time() - started}, path)


def _write_ok(doc, started, path=None):
    doc.setdefault("status", "ok")
    doc.setdefault("warmups", WARMUPS)
    doc["wall_s"] = time.time() - started
    write_result(doc, path)


def main(measure):
    """Run `measure()` and write its RunResult; on failure write the failure instead."""
    started = time.time()
    try:
        doc = measure()
    except BaseException as exc:  # noqa: BLE001 - the result file must say what happened
        _write_failure(exc, started)
        sys.exit(1)
    _write_ok(doc, started)


def main_live(start, measure_runs):
    """The engine kept alive across rounds (TRIAGEBOT_LIVE=1, set by the cpu runner):
    `start()` loads the engine and runs the warm-ups once, then every line `run N PATH`
    on stdin measures N runs with `measure_runs(state, N)` and writes their RunResult to
    PATH; the script ends when stdin closes. Without TRIAGEBOT_LIVE it is `main`: start,
    RUNS runs, one result. Runs measured minutes apart on one engine share its start,
    so rounds differ by what the machine did, not by what a fresh start happened to get.
    """
    if os.environ.get("TRIAGEBOT_LIVE") != "1":
        main(lambda: measure_runs(start(), RUNS))
        return
    started = time.time()
    try:
        state = start()
    except BaseException as exc:  # noqa: BLE001 - the result file must say what happened
        _write_failure(exc, started)
        sys.exit(1)
    print("triagebot: ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if len(words) != 3 or words[0] != "run":
            continue
        began = time.time()
        try:
            doc = measure_runs(state, int(words[1]))
        except BaseException as exc:  # noqa: BLE001 - the result file must say what happened
            _write_failure(exc, began, words[2])
            sys.exit(1)
        _write_ok(doc, began, words[2])
# --- end of triagebot runtime ---
