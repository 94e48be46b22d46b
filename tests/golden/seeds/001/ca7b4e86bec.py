#!/usr/bin/env python3
"""triagebot reproduction: one cell through `vllm bench mm-processor` (multimodal encoder
and processor latency, offline).

Each run is one invocation of the benchmark, which starts its own engine, so
WARMUPS invocations are discarded and RUNS are measured. The benchmark's JSON has
per-request end-to-end latency but no duration or token counts, so each run records:

    output_tokens = completed requests, seconds = completed x median e2el

which makes `tok_s` requests per second of median latency (1000 / median_e2el_ms), a
higher-is-better number whose ratio between two cells is their latency ratio inverted.
The raw latencies and encoder call counts of every run are kept under "mm_processor".
The benchmark always decodes greedily; the cell's sampling settings do not apply.

Run it by itself:  TRIAGEBOT_RESULT=result.json python3 this_file.py
"""
# cell: Multi GPU GLM-4.1V-9B-Thinking image + vit_eager
# plan efb8ff1d2ebb, vLLM 0.33.0, workload mm_processor
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

CELL_ID = 'ca7b4e86bec'
ENGINE = 'vllm'
WARMUPS = 1
RUNS = int(os.environ.get("TRIAGEBOT_RUNS", 5))
SCHEMA_VERSION = 1


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
        env["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
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
import re
import shlex
import tempfile

# The cell's environment; the benchmark process inherits it.
CELL_ENV = {}
os.environ.update(CELL_ENV)

# `vllm <MM_ARGS> --output-json <file>`, written for vLLM 0.33.0.
MM_ARGS = [
    'bench', 'mm-processor',
    '--model', 'zai-org/GLM-4.1V-9B-Thinking',
    '--tensor-parallel-size', '2',
    '--no-enforce-eager',
    '--seed', '0',
    '--compilation-config', '{"encoder_cudagraph_token_budgets":[128,256,512,1024,1536,2048],"encoder_cudagraph_max_vision_items_per_batch":4,"encoder_cudagraph_max_frames_per_batch":32,"cudagraph_mm_encoder":false}',
    '--mm-encoder-tp-mode', 'data',
    '--limit-mm-per-prompt', '{"image":2}',
    '--dataset-name', 'random-mm',
    '--num-prompts', '100',
    '--random-input-len', '128',
    '--random-output-len', '256',
    '--random-mm-base-items-per-request', '2',
    '--random-mm-num-mm-items-range-ratio', '0.0',
    '--random-mm-limit-mm-per-prompt', '{"image":2,"video":0}',
    '--random-mm-bucket-config', '{(512, 512, 1): 1.0}',
    '--disable-tqdm',
]
LOG_PATH = os.environ.get("TRIAGEBOT_BENCH_LOG") or f"bench-{CELL_ID}.log"


def vllm_exe():
    """The `vllm` beside this interpreter (a venv), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "vllm")
    found = beside if os.access(beside, os.X_OK) else shutil.which("vllm")
    if found is None:
        raise RuntimeError("no `vllm` executable beside this Python or on PATH")
    return found


def vllm_version(exe):
    try:
        from importlib.metadata import version

        return version("vllm")
    except Exception:  # noqa: BLE001 - not installed as a distribution: ask the CLI
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
        return (out.stdout.strip().splitlines() or [None])[-1]


def vllm_commit():
    """Read from vllm/_version.py without importing vllm (which would load torch)."""
    from importlib.util import find_spec

    try:
        spec = find_spec("vllm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "_version.py")
    try:
        text = open(path).read()
    except OSError:
        return None
    found = re.search(r"commit_id\s*=\s*['\"]g?([0-9a-f]{7,40})['\"]", text)
    return found.group(1) if found else None


def log_tail(limit=1200):
    # Kept short: the error text in the result file is cut at 2000 characters.
    try:
        with open(LOG_PATH, errors="replace") as f:
            return f.read()[-limit:]
    except OSError:
        return ""


def bench(exe, out_path):
    argv = [exe, *MM_ARGS, "--output-json", out_path]
    print("triagebot: " + shlex.join(argv), flush=True)
    with open(LOG_PATH, "a") as log:
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"vllm bench mm-processor exited with {proc.returncode}; "
                           f"log tail:\n{log_tail()}")
    with open(out_path) as f:
        doc = json.load(f)
    if doc.get("failed") or not doc.get("completed"):
        raise RuntimeError(f"{doc.get('failed')} requests failed, {doc.get('completed')} "
                           f"completed; log tail:\n{log_tail()}")
    return doc


def measure():
    exe = vllm_exe()
    version = vllm_version(exe)
    open(LOG_PATH, "w").close()
    runs, details = [], []
    with tempfile.TemporaryDirectory(prefix="triagebot-mm-") as out_dir:
        for i in range(WARMUPS + RUNS):
            doc = bench(exe, os.path.join(out_dir, f"mm-{i}.json"))
            if i < WARMUPS:
                continue
            completed = int(doc["completed"])
            median_ms = float(doc["median_e2el_ms"])
            runs.append(run_record(completed, completed * median_ms / 1000.0))
            details.append({
                "mean_e2el_ms": doc.get("mean_e2el_ms"),
                "median_e2el_ms": median_ms,
                "std_e2el_ms": doc.get("std_e2el_ms"),
                "percentiles_e2el_ms": doc.get("percentiles_e2el_ms"),
                "encoder_summary": doc.get("encoder_summary"),
                "mm_processor_stats": doc.get("mm_processor_stats"),
            })
            print(f"triagebot: run {i + 1 - WARMUPS}/{RUNS}: median e2el {median_ms:.1f} ms "
                  f"over {completed} requests", flush=True)
    return {
        "engine_version": version,
        "env": machine_env(version, vllm_commit()),
        "runs": runs,
        "spec": None,
        "outputs_digest": None,
        "log_tail": log_tail(4000),
        "mm_processor": {"tok_s_unit": "requests/s = 1000 / median_e2el_ms", "runs": details},
    }


if __name__ == "__main__":
    main(measure)
