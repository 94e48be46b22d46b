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
# plan dcfd115d9834, vLLM 0.33.0, workload mm_processor
# --- triagebot runtime: environment, digest, result file (the same in every script) ---
CELL_ID = 'c27f809bc05'
ENGINE = 'vllm'
WARMUPS = 1
RUNS = int(os.environ.get("TRIAGEBOT_RUNS", 5))
SCHEMA_VERSION = 1
# (the rest of the runtime is kept once, in runtime.py)
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
    '--random-mm-bucket-config', '{(224, 224, 1): 1.0}',
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
