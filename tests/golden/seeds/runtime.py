# --- triagebot runtime: environment, digest, result file (the same in every script) ---
import hashlib
import json
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


def run_record(output_tokens, seconds, **latency):
    record = {"output_tokens": int(output_tokens), "seconds": float(seconds),
              "tok_s": float(output_tokens) / seconds if seconds > 0 else 0.0}
    record.update({k: float(v) for k, v in latency.items() if v is not None})
    return record


def _error_status(exc):
    text = f"{type(exc).__name__}: {exc}"
    if "out of memory" in text.lower() or type(exc).__name__ == "OutOfMemoryError":
        return "oom"
    if type(exc).__name__ == "ConfigRejected" or "not found in" in text and "Config" in text:
        return "config_rejected"
    return "failed"


def write_result(doc):
    path = os.environ.get("TRIAGEBOT_RESULT") or f"result-{CELL_ID}.json"
    doc = {"schema_version": SCHEMA_VERSION, "cell_id": CELL_ID, "engine": ENGINE, **doc}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)
    print(f"triagebot: wrote {path} (status {doc['status']})", flush=True)


def main(measure):
    """Run `measure()` and write its RunResult; on failure write the failure instead."""
    started = time.time()
    try:
        doc = measure()
    except BaseException as exc:  # noqa: BLE001 - the result file must say what happened
        if isinstance(exc, KeyboardInterrupt):
            status = "failed"
        else:
            status = _error_status(exc)
        traceback.print_exc()
        # A template may attach the tail of a server log to the exception it raises.
        write_result({"status": status, "error": f"{type(exc).__name__}: {exc}"[:2000],
                      "log_tail": str(getattr(exc, "log_tail", ""))[-4000:],
                      "env": machine_env(), "runs": [], "warmups": WARMUPS,
                      "wall_s": time.time() - started})
        sys.exit(1)
    doc.setdefault("status", "ok")
    doc.setdefault("warmups", WARMUPS)
    doc["wall_s"] = time.time() - started
    write_result(doc)
# --- end of triagebot runtime ---
