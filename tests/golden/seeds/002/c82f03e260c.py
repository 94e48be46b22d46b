#!/usr/bin/env python3
# triagebot reproduction: one cell as a `vllm-mlx serve` server, driven by a small stdlib
# client on /v1/completions (text) or /v1/chat/completions (images, the MLLM path); MTP
# counters are read from /v1/status before and after every measured run (they count from
# server start, so each run gets the difference).
# spec mapping: num_drafts = attempted, num_draft_tokens = attempted * effective draft
# tokens (from /v1/status), num_accepted_tokens = accepted.
# cell c82f03e260c: spec (A/A)
# plan 64d6fe1964d6, vllm-mlx 0.6.0
# note: vllm-mlx's completions APIs have no ignore_eos: requests may stop early, output
# tokens are counted from usage
# note: each prompt is a chat message with 1 generated 224x224 image(s), served by vllm-
# mlx's MLLM engine (--mllm)
# --- triagebot runtime: environment, digest, result file (the same in every script) ---
CELL_ID = 'c82f03e260c'
ENGINE = 'vllm-mlx'
WARMUPS = 1
RUNS = int(os.environ.get("TRIAGEBOT_RUNS", 5))
SCHEMA_VERSION = 1
# (the rest of the runtime is kept once, in runtime.py)
# --- end of triagebot runtime ---

import random
import signal
import socket
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

CELL_ENV = {}
os.environ.update(CELL_ENV)

MODEL = 'Qwen/Qwen3.6-27B'
SERVE_FLAGS = {'continuous_batching': True, 'mllm': True, 'enable_mtp': True, 'mtp_num_draft_tokens': 5}
REQUESTED_DRAFT_TOKENS = 5
NOTES = ["vllm-mlx's completions APIs have no ignore_eos: requests may stop early, output tokens are counted from usage", "each prompt is a chat message with 1 generated 224x224 image(s), served by vllm-mlx's MLLM engine (--mllm)"]
NUM_PROMPTS = 200
INPUT_LEN = 1024
CONCURRENCY = 16
MODALITY = 'image'
IMAGES_PER_PROMPT = 1
IMAGE_SIZE = [224, 224]  # height, width
MAX_TOKENS = 256
TEMPERATURE = 0.0
TOP_P = 1.0
SEED = 0
READY_TIMEOUT_S = float(os.environ.get("TRIAGEBOT_READY_TIMEOUT", 1800))
REQUEST_TIMEOUT_S = 1200
STOP_GRACE_S = 30
HOST = "127.0.0.1"
COUNTERS = ("attempted", "accepted", "rejected", "errors")
# Prompt words: common English words are about one token each in most vocabularies, so
# INPUT_LEN words approximate INPUT_LEN prompt tokens without loading a tokenizer.
WORDS = ("time year people way day man thing woman life child world school state family "
         "student group country problem hand part place case week company system program "
         "question work government number night point home water room mother area money "
         "story fact month lot right study book eye job word business issue side kind head "
         "house service friend father power hour game line end member law car city name "
         "team minute idea body information back parent face others level office door "
         "health person art war history party result change morning reason research girl "
         "guy moment air teacher force education").split()


def free_port():
    if os.environ.get("TRIAGEBOT_PORT"):
        return int(os.environ["TRIAGEBOT_PORT"])
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def to_flags(kwargs):
    argv = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is not False and value is not None:
            argv += [flag, str(value)]
    return argv


def log_tail(path, limit=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-limit:]
    except OSError:
        return ""


def start_server(port, log_path):
    exe = shutil.which("vllm-mlx")
    if exe is None:
        raise RuntimeError("vllm-mlx is not on PATH (pip install vllm-mlx)")
    cmd = [exe, "serve", MODEL, "--host", HOST, "--port", str(port), *to_flags(SERVE_FLAGS)]
    print("triagebot: " + " ".join(cmd), flush=True)
    log = open(log_path, "w")
    # A session of its own, ended with this script (`start_tied`).
    return start_tied(cmd, stdout=log, stderr=subprocess.STDOUT)


def stop_server(proc):
    """TERM the whole group, give it a grace period, then KILL whatever is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def http_json(url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def wait_ready(proc, base, log_path):
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            if http_json(base + "/health", timeout=10).get("model_loaded", True):
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"vllm-mlx exited with {proc.returncode} before it was "
                               f"ready; log tail:\n{log_tail(log_path)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"vllm-mlx not ready after {READY_TIMEOUT_S:.0f}s; "
                               f"log tail:\n{log_tail(log_path)}")
        time.sleep(1)


def served_name(base):
    """The id the server answers to (requests naming anything else get a 404)."""
    try:
        data = http_json(base + "/v1/models").get("data") or []
        return data[0]["id"] if data else MODEL
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError):
        return MODEL


def make_image(index):
    """A white page of IMAGE_SIZE with a few printed lines, different for every index."""
    from PIL import Image, ImageDraw

    height, width = IMAGE_SIZE
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for row in range(max(1, height // 40)):
        draw.text((8, 8 + row * 40), f"request {index} line {row + 1}", fill="black")
    return image


def data_url(image):
    import base64
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def make_prompts():
    """Text prompts, or (image cells) chat messages of IMAGES_PER_PROMPT images and a
    text part, for vllm-mlx's MLLM path."""
    rng = random.Random(SEED)
    texts = [" ".join(rng.choice(WORDS) for _ in range(INPUT_LEN)) for _ in range(NUM_PROMPTS)]
    if MODALITY != "image":
        return texts
    return [[*({"type": "image_url",
                "image_url": {"url": data_url(make_image(i * IMAGES_PER_PROMPT + j))}}
               for j in range(IMAGES_PER_PROMPT)),
             {"type": "text", "text": text}] for i, text in enumerate(texts)]


def complete(base, name, prompt):
    body = {"model": name, "max_tokens": MAX_TOKENS, "temperature": TEMPERATURE,
            "top_p": TOP_P, "stream": False}
    if isinstance(prompt, list):
        body["messages"] = [{"role": "user", "content": prompt}]
        doc = http_json(base + "/v1/chat/completions", body, timeout=REQUEST_TIMEOUT_S)
    else:
        body["prompt"] = prompt
        doc = http_json(base + "/v1/completions", body, timeout=REQUEST_TIMEOUT_S)
    return int((doc.get("usage") or {}).get("completion_tokens", 0))


def drive(base, name, prompts):
    """All prompts at CONCURRENCY in flight; returns (output tokens, seconds)."""
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        tokens = list(pool.map(lambda p: complete(base, name, p), prompts))
    return sum(tokens), time.perf_counter() - start


def mtp_status(base):
    return http_json(base + "/v1/status").get("mtp") or {"enabled": False}


def mtp_delta(before, after):
    """Counters of one run: the later snapshot minus the earlier (both cumulative)."""
    if not after.get("enabled") or "attempted" not in after:
        return None
    delta = {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in COUNTERS}
    b0, b1 = before.get("bypass_counts") or {}, after.get("bypass_counts") or {}
    delta["bypass_counts"] = {k: int(v) - int(b0.get(k, 0)) for k, v in b1.items()}
    delta["effective_draft_tokens"] = after.get("effective_draft_tokens")
    return delta


def sum_deltas(deltas):
    total = {k: sum(d[k] for d in deltas) for k in COUNTERS}
    bypass = {}
    for d in deltas:
        for k, v in d["bypass_counts"].items():
            bypass[k] = bypass.get(k, 0) + v
    total["bypass_counts"] = bypass
    return total


def engine_version():
    try:
        from importlib.metadata import version as dist_version

        return dist_version("vllm-mlx")
    except Exception:  # noqa: BLE001 - a missing version is reported as None
        return None


def measure():
    version = engine_version()
    workdir = tempfile.mkdtemp(prefix=f"triagebot-{CELL_ID}-")
    log_path = os.path.join(workdir, "server.log")
    port = free_port()
    base = f"http://{HOST}:{port}"
    prompts = make_prompts()
    proc = start_server(port, log_path)
    try:
        wait_ready(proc, base, log_path)
        name = served_name(base)
        for _ in range(WARMUPS):
            drive(base, name, prompts)
        runs, deltas, last = [], [], {"enabled": False}
        for _ in range(RUNS):
            before = mtp_status(base)
            tokens, seconds = drive(base, name, prompts)
            last = mtp_status(base)
            runs.append(run_record(tokens, seconds))
            delta = mtp_delta(before, last)
            if delta is not None:
                deltas.append(delta)
    finally:
        stop_server(proc)
    return {
        "engine_version": version,
        "env": machine_env(version),
        "runs": runs,
        "outputs_digest": None,
        "log_tail": log_tail(log_path),
        **spec_fields(last, deltas),
    }


def spec_fields(last, deltas):
    warnings = list(NOTES)
    fields = {"spec": None, "requested_draft_tokens": REQUESTED_DRAFT_TOKENS,
              "effective_draft_tokens": last.get("effective_draft_tokens"),
              "mtp_enabled": bool(last.get("enabled")), "warnings": warnings}
    if REQUESTED_DRAFT_TOKENS is None:
        return fields
    if not deltas or len(deltas) != RUNS:
        warnings.append("/v1/status showed mtp " + json.dumps(last)[:200] +
                        ": no MTP counters (simple mode reports none), spec is null")
        return fields
    total = sum_deltas(deltas)
    effective = int(last.get("effective_draft_tokens") or 1)
    fields["spec"] = {"num_drafts": total["attempted"],
                      "num_draft_tokens": total["attempted"] * effective,
                      "num_accepted_tokens": total["accepted"],
                      # One draft per step: every accepted token sat at position 0.
                      "per_position_accepted": [total["accepted"]] if effective == 1 else []}
    fields["mtp_counters"] = total
    fields["mtp_runs"] = deltas
    fields["bypass_counts"] = total["bypass_counts"]
    if effective != REQUESTED_DRAFT_TOKENS:
        warnings.append(f"requested {REQUESTED_DRAFT_TOKENS} draft tokens, the server "
                        f"drafted {effective} per verify step")
    return fields


if __name__ == "__main__":
    main(measure)
