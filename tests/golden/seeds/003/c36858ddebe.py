#!/usr/bin/env python3
"""triagebot reproduction: one cell as `vllm serve` measured by `vllm bench serve`.

Starts the server in its own process group (log in $TRIAGEBOT_SERVER_LOG, default
server-<cell>.log), waits for /health and /v1/models, runs WARMUPS small discarded
benchmarks, then RUNS measured ones with --save-result, and always stops the server.
Writes a RunResult JSON to $TRIAGEBOT_RESULT.

Run it by itself:  TRIAGEBOT_RESULT=result.json python3 this_file.py
"""
# cell: v1 + graph
# plan 83fa583ab959, vLLM 0.33.0, workload serve
# --- triagebot runtime: environment, digest, result file (the same in every script) ---
CELL_ID = 'c36858ddebe'
ENGINE = 'vllm'
WARMUPS = 1
RUNS = int(os.environ.get("TRIAGEBOT_RUNS", 5))
SCHEMA_VERSION = 1
# (the rest of the runtime is kept once, in runtime.py)
# --- end of triagebot runtime ---
import contextlib
import re
import shlex
import signal
import socket
import tempfile
import urllib.request

# The cell's environment; the server inherits it.
CELL_ENV = {'VLLM_USE_V2_MODEL_RUNNER': '0'}
os.environ.update(CELL_ENV)

# `vllm <SERVE_ARGS> --host 127.0.0.1 --port <free port>`, written for vLLM 0.33.0.
SERVE_ARGS = [
    'serve', 'openai/gpt-oss-20b',
    '--tensor-parallel-size', '1',
    '--no-enforce-eager',
    '--seed', '0',
    '--speculative-config', '{"method":"eagle3","num_speculative_tokens":3,"model":"RedHatAI/gpt-oss-20b-speculator.eagle3"}',
    '--max-model-len', '1536',
]
# `vllm <BENCH_ARGS> --num-prompts N --base-url URL --save-result --result-dir D
#  --result-filename F`
BENCH_ARGS = [
    'bench', 'serve',
    '--backend', 'openai',
    '--endpoint', '/v1/completions',
    '--model', 'openai/gpt-oss-20b',
    '--dataset-name', 'random',
    '--random-input-len', '1024',
    '--random-output-len', '256',
    '--random-range-ratio', '0.0',
    '--max-concurrency', '16',
    '--temperature', '1.0',
    '--top-p', '1.0',
    '--seed', '0',
    '--percentile-metrics', 'ttft,tpot,itl',
    '--ignore-eos',
]
NUM_PROMPTS = 200
WARMUP_PROMPTS = 16
HAS_SPEC = True
READY_TIMEOUT_S = float(os.environ.get("TRIAGEBOT_SERVER_TIMEOUT_S", "1800"))
STOP_GRACE_S = float(os.environ.get("TRIAGEBOT_STOP_GRACE_S", "30"))
LOG_PATH = os.environ.get("TRIAGEBOT_SERVER_LOG") or f"server-{CELL_ID}.log"


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(limit=1200):
    # Kept short: the error text in the result file is cut at 2000 characters.
    try:
        with open(LOG_PATH, errors="replace") as f:
            return f.read()[-limit:]
    except OSError:
        return ""


def start_server(exe, port):
    argv = [exe, *SERVE_ARGS, "--host", "127.0.0.1", "--port", str(port)]
    print("triagebot: starting " + shlex.join(argv), flush=True)
    with open(LOG_PATH, "w") as log:
        # A process group of its own, so stopping it also stops its engine workers.
        proc = start_tied(argv, stdout=log, stderr=subprocess.STDOUT)
    print(f"triagebot: server pid {proc.pid}", flush=True)
    return proc


def stop_server(proc):
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    except ProcessLookupError:
        pass


def http_get(url, timeout=10):
    """(status, body); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except OSError:
        return 0, ""


def wait_ready(proc, base):
    deadline = time.monotonic() + READY_TIMEOUT_S
    for path in ("/health", "/v1/models"):
        while http_get(base + path)[0] != 200:
            if proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {proc.returncode} before it was "
                                   f"ready; server log tail:\n{log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"vllm serve not ready after {READY_TIMEOUT_S:.0f} s; "
                                   f"server log tail:\n{log_tail()}")
            time.sleep(1)


def scrape_spec(base):
    """Cumulative spec-decode counters from /metrics (Prometheus text, `_total` names)."""
    status, text = http_get(base + "/metrics")
    if status != 200:
        return None
    snap = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0}
    per_pos = {}
    for line in text.splitlines():
        m = re.match(r"vllm:spec_decode_(\w+)_total(\{[^}]*\})?\s+([0-9.eE+-]+)$", line)
        if m is None:
            continue
        name, labels, value = m.group(1), m.group(2) or "", int(float(m.group(3)))
        if name == "num_accepted_tokens_per_pos":
            pos = re.search(r'position="(\d+)"', labels)
            if pos:
                per_pos[int(pos.group(1))] = per_pos.get(int(pos.group(1)), 0) + value
        elif name in snap:
            snap[name] += value
    snap["per_position_accepted"] = [per_pos.get(i, 0) for i in range(len(per_pos))]
    return snap


def spec_from_scrapes(before, after):
    if before is None or after is None:
        return None
    delta = {k: after[k] - before[k] for k in ("num_drafts", "num_draft_tokens",
                                               "num_accepted_tokens")}
    old = before["per_position_accepted"]
    delta["per_position_accepted"] = [
        v - (old[i] if i < len(old) else 0) for i, v in enumerate(after["per_position_accepted"])
    ]
    return delta


def spec_from_result(doc):
    """The bench's own delta (0.14.1+); per-position rates are fractions of drafts."""
    if "spec_decode_num_drafts" not in doc:
        return None
    drafts = int(doc["spec_decode_num_drafts"])
    return {
        "num_drafts": drafts,
        "num_draft_tokens": int(doc["spec_decode_draft_tokens"]),
        "num_accepted_tokens": int(doc["spec_decode_accepted_tokens"]),
        "per_position_accepted": [
            round(rate * drafts)
            for rate in doc.get("spec_decode_per_position_acceptance_rates", [])
        ],
    }


def spec_add(total, delta):
    if delta is None:
        return total
    if total is None:
        return delta
    out = {k: total[k] + delta[k] for k in ("num_drafts", "num_draft_tokens",
                                            "num_accepted_tokens")}
    a, b = total["per_position_accepted"], delta["per_position_accepted"]
    out["per_position_accepted"] = [
        (a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0)
        for i in range(max(len(a), len(b)))
    ]
    return out


def bench(exe, base, num_prompts, result_dir, name):
    argv = [exe, *BENCH_ARGS, "--num-prompts", str(num_prompts), "--base-url", base,
            "--save-result", "--result-dir", result_dir, "--result-filename", name]
    print("triagebot: " + shlex.join(argv), flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True)
    print(proc.stdout[-3000:], flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"vllm bench serve exited with {proc.returncode}:\n"
                           f"{(proc.stdout + proc.stderr)[-600:]}\n"
                           f"server log tail:\n{log_tail()}")
    with open(os.path.join(result_dir, name)) as f:
        doc = json.load(f)
    if doc.get("failed") or not doc.get("completed"):
        raise RuntimeError(f"{doc.get('failed')} of {num_prompts} requests failed; "
                           f"server log tail:\n{log_tail()}")
    return doc


def start_ready(exe):
    """(server, base URL) once it answers. A free port can be taken by another process
    before the server binds it; that start is retried on a new port."""
    for attempt in range(3):
        port = free_port()
        proc = start_server(exe, port)
        try:
            wait_ready(proc, f"http://127.0.0.1:{port}")
            return proc, f"http://127.0.0.1:{port}"
        except RuntimeError:
            stop_server(proc)
            if attempt == 2 or "Address already in use" not in log_tail(4000):
                raise
            print(f"triagebot: port {port} was taken; retrying", flush=True)
    raise AssertionError("unreachable")


def measure():
    exe = vllm_exe()
    version = vllm_version(exe)
    runs, spec = [], None
    proc, base = start_ready(exe)
    try:
        # TRIAGEBOT_BENCH_DIR keeps the saved JSON files (for fixtures); else they go.
        keep = os.environ.get("TRIAGEBOT_BENCH_DIR")
        with (contextlib.nullcontext(keep) if keep
              else tempfile.TemporaryDirectory(prefix="triagebot-bench-")) as result_dir:
            for i in range(WARMUPS):
                bench(exe, base, WARMUP_PROMPTS, result_dir, f"warmup-{i}.json")
            for i in range(RUNS):
                before = scrape_spec(base) if HAS_SPEC else None
                doc = bench(exe, base, NUM_PROMPTS, result_dir, f"run-{i}.json")
                after = scrape_spec(base) if HAS_SPEC else None
                if HAS_SPEC:
                    # Both readings are logged: they count the same drafts, so a difference
                    # is a bug in the bench's JSON or in the server's counters.
                    from_json = spec_from_result(doc)
                    from_metrics = spec_from_scrapes(before, after)
                    print(f"triagebot: spec counters: bench JSON {json.dumps(from_json)}, "
                          f"/metrics {json.dumps(from_metrics)}", flush=True)
                    spec = spec_add(spec, from_json or from_metrics)
                record = run_record(
                    doc["total_output_tokens"], doc["duration"],
                    ttft_ms=doc.get("median_ttft_ms"), tpot_ms=doc.get("median_tpot_ms"),
                    itl_ms=doc.get("median_itl_ms"),
                )
                record["tok_s"] = float(doc["output_throughput"])
                runs.append(record)
    finally:
        stop_server(proc)
    return {
        "engine_version": version,
        "env": machine_env(version, vllm_commit()),
        "runs": runs,
        "spec": spec,
        # `vllm bench serve` keeps no token ids, so there is nothing to compare outputs by.
        "outputs_digest": None,
        "log_tail": log_tail(4000),
    }


if __name__ == "__main__":
    main(measure)
