#!/usr/bin/env python3
"""triagebot reproduction: one cell through vLLM's offline API (`LLM.generate` / `LLM.chat`).

Runs WARMUPS discarded runs, then RUNS measured runs, and writes a RunResult JSON to
$TRIAGEBOT_RESULT. A run is one batch, repeated until it has decoded for
$TRIAGEBOT_MIN_RUN_S seconds where that is set. Speculative-decoding counters are deltas
of `llm.get_metrics()` taken around each measured run, so warm-up drafts are not counted.

Run it by itself:  TRIAGEBOT_RESULT=result.json python3 this_file.py
"""
# cell: spec + eager
# plan 988b81c116aa, vLLM 0.17.1, workload offline
# --- triagebot runtime: environment, digest, result file (the same in every script) ---
CELL_ID = 'cfe057a30f2'
ENGINE = 'vllm'
WARMUPS = 1
RUNS = int(os.environ.get("TRIAGEBOT_RUNS", 5))
SCHEMA_VERSION = 1
# (the rest of the runtime is kept once, in runtime.py)
# --- end of triagebot runtime ---

# The cell's environment goes in before vLLM is imported: vLLM reads it at import time.
CELL_ENV = {'VLLM_LOGGING_LEVEL': 'DEBUG', 'VLLM_LOG_STATS_INTERVAL': '5', 'TRIAGEBOT_PROFILE_STEPS': '1'}
os.environ.update(CELL_ENV)

# LLM(**LLM_ARGS), written for vLLM 0.17.1.
LLM_ARGS = {
    'model': 'zai-org/GLM-OCR',
    'tensor_parallel_size': 1,
    'enforce_eager': True,
    'seed': 0,
    'disable_log_stats': False,
    'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1, 'enforce_eager': True},
    'limit_mm_per_prompt': {'image': 1},
}
SAMPLING = {
    "temperature": 0.0,
    "top_p": 1.0,
    "max_tokens": 500,
    "seed": 0,
    "ignore_eos": True,
}
API = 'chat'
MODALITY = 'image'
NUM_PROMPTS = 1
INPUT_LEN = 128
IMAGES_PER_PROMPT = 1
VIDEOS_PER_PROMPT = 0
HAS_SPEC = True
# Acceptance pinned by the engine's synthetic rejection mode: a step-cost measurement,
# whose tokens follow the drafter, not the target.
SYNTHETIC = False

# Fixed prompts, cycled to NUM_PROMPTS. Each request gets its own number up front, so no
# two prompts share a cached prefix; the notes after the question pad it to INPUT_LEN.
QUESTIONS = [
    "Explain step by step how a lighthouse keeper in the nineteenth century kept the "
    "lamp burning through a winter storm.",
    "Write a short story about a baker who discovers that her bread rises only when "
    "someone in the shop is telling the truth.",
    "Describe how water moves through a forest, from the first raindrop to the river, "
    "and why old trees matter for it.",
    "Summarise the rules of chess for a child who has never seen the board, using one "
    "short paragraph per piece.",
    "Plan a three day walking trip along a coastal path, with places to eat, rest and "
    "watch birds each day.",
    "Explain why bridges are built the way they are, comparing stone arches, steel "
    "trusses and suspension cables.",
    "Write a letter from a ship's cook to his sister describing a long voyage and the "
    "meals he managed to make at sea.",
    "Describe the life of a honeybee colony through one year, season by season.",
]
NOTES = (
    "Notes for the answer: the old harbour town sits between two hills, and its market "
    "opens at dawn on weekdays. Fishermen bring their boats in before the tide turns, "
    "and the baker on the corner sells rye bread, apple cake and salted rolls. In spring "
    "the river floods the lower fields, and farmers move their sheep to the high "
    "pastures. The library keeps maps of every path in the valley, drawn by a surveyor "
    "who walked each one twice to check the distances. Children learn to swim in the "
    "cove, where the water is calm and the sand is fine. In autumn the town holds a "
    "festival with music, lanterns and a long table in the square where everyone shares "
    "a meal. "
)
OCR_TEXT = [
    "INVOICE 2041-{n}", "Date: 14 March", "Item       Qty   Price",
    "Rye bread    4    3.20", "Apple cake   2    7.50", "Salted rolls 12   4.80",
    "Total due         15.50", "Thank you for your order",
]


def prompt_texts(tokenizer):
    """NUM_PROMPTS natural-language prompts, each trimmed to about INPUT_LEN tokens."""
    notes = tokenizer.encode(NOTES, add_special_tokens=False)
    texts = []
    for i in range(NUM_PROMPTS):
        head = f"Request {i + 1}. {QUESTIONS[i % len(QUESTIONS)]}\n\n"
        ids = tokenizer.encode(head, add_special_tokens=False)
        ids = (ids + notes * (INPUT_LEN // max(len(notes), 1) + 1))[:INPUT_LEN]
        texts.append(tokenizer.decode(ids))
    return texts


def make_image(index):
    """A white page with printed lines, for OCR-like and captioning models alike."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.load_default(size=28)
    except TypeError:  # Pillow < 10.1 has one fixed-size default font
        font = ImageFont.load_default()
    for row, line in enumerate(OCR_TEXT):
        draw.text((30, 30 + row * 52), line.format(n=index), fill="black", font=font)
    return image


def make_video(index, frames=16, height=240, width=320):
    """A bar sweeping across a gradient: frames x H x W x 3 uint8."""
    import numpy as np

    x = np.linspace(0, 255, width, dtype=np.float32)
    video = np.empty((frames, height, width, 3), dtype=np.uint8)
    for t in range(frames):
        video[t] = np.stack([np.broadcast_to(x, (height, width))] * 3, axis=-1)
        left = (t * width // frames + index * 7) % (width - 24)
        video[t, :, left:left + 24] = (255, 255, 255)
    return video


def data_url(image):
    import base64
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def build_requests(llm):
    """(api, payload) per request: what `run_batch` hands to generate() or chat()."""
    tokenizer = llm.get_tokenizer()
    texts = prompt_texts(tokenizer)
    if MODALITY == "text":
        if API == "chat":
            return "chat", [[{"role": "user", "content": t}] for t in texts]
        return "generate", texts
    if MODALITY == "image" and API == "chat":
        convs = []
        for i, t in enumerate(texts):
            parts = [{"type": "image_url", "image_url": {"url": data_url(make_image(i + j))}}
                     for j in range(max(IMAGES_PER_PROMPT, 1))]
            parts.append({"type": "text", "text": "Read the page, then answer. " + t})
            convs.append([{"role": "user", "content": parts}])
        return "chat", convs
    # Video (and image with the generate API): the model's own chat template places its
    # media tokens; the pixels go in multi_modal_data.
    prompts = []
    for i, t in enumerate(texts):
        if MODALITY == "image":
            items = [make_image(i + j) for j in range(max(IMAGES_PER_PROMPT, 1))]
        else:
            items = [make_video(i + j) for j in range(max(VIDEOS_PER_PROMPT, 1))]
        content = [{"type": MODALITY} for _ in items] + [{"type": "text", "text": t}]
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
        )
        data = items[0] if len(items) == 1 else items
        prompts.append({"prompt": text, "multi_modal_data": {MODALITY: data}})
    return "generate", prompts


def run_batch(llm, requests, params):
    api, payload = requests
    if api == "chat":
        return llm.chat(payload, params, use_tqdm=False)
    return llm.generate(payload, params, use_tqdm=False)


SPEC_NAMES = {
    "vllm:spec_decode_num_drafts": "num_drafts",
    "vllm:spec_decode_num_draft_tokens": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "num_accepted_tokens",
}
PER_POS_NAME = "vllm:spec_decode_num_accepted_tokens_per_pos"


def spec_snapshot(llm):
    """Cumulative spec-decode counters, summed over engines (one label set per engine)."""
    from vllm.v1.metrics.reader import Counter, Vector

    snap = {key: 0 for key in SPEC_NAMES.values()}
    per_pos = []
    for metric in llm.get_metrics():
        if isinstance(metric, Counter) and metric.name in SPEC_NAMES:
            snap[SPEC_NAMES[metric.name]] += int(metric.value)
        elif isinstance(metric, Vector) and metric.name == PER_POS_NAME:
            per_pos.extend([0] * (len(metric.values) - len(per_pos)))
            for i, v in enumerate(metric.values):
                per_pos[i] += int(v)
    snap["per_position_accepted"] = per_pos
    return snap


def spec_delta(before, after):
    delta = {key: after[key] - before[key] for key in SPEC_NAMES.values()}
    old = before["per_position_accepted"]
    delta["per_position_accepted"] = [
        v - (old[i] if i < len(old) else 0) for i, v in enumerate(after["per_position_accepted"])
    ]
    return delta


def spec_add(total, delta):
    if total is None:
        return delta
    out = {key: total[key] + delta[key] for key in SPEC_NAMES.values()}
    a, b = total["per_position_accepted"], delta["per_position_accepted"]
    n = max(len(a), len(b))
    out["per_position_accepted"] = [
        (a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)
    ]
    return out


def vllm_commit():
    try:
        from vllm import _version
    except ImportError:
        return None
    commit = getattr(_version, "__commit_id__", None) or getattr(_version, "commit_id", None)
    if not commit:
        return None
    return commit[1:] if commit.startswith("g") else commit


# --- step profile: where a decoding step's time goes (TRIAGEBOT_PROFILE_STEPS=1) ---
# One extra batch after the warm-ups runs under torch.profiler, with named ranges put
# around the model runner's methods at class level: the step (execute_model, then
# sample_tokens), the target's forward, the drafter and the rejection sampler. The
# ranges cost nothing outside that batch, which is never one of the measured runs.
# They reach the engine only where it runs in this process (the cpu runner sets
# VLLM_ENABLE_V1_MULTIPROCESSING=0); elsewhere the profile says it saw no step.
PROFILE_STEPS = os.environ.get("TRIAGEBOT_PROFILE_STEPS") == "1"
# (range, module, class, method): names read from vLLM 0.25.1's and 0.32.0's sources.
STEP_RANGES = (
    ("execute_model", "vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "execute_model"),
    ("sample_tokens", "vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "sample_tokens"),
    ("target", "vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_model_forward"),
    ("drafter", "vllm.v1.worker.gpu_model_runner", "GPUModelRunner",
     "propose_draft_token_ids"),
    ("rejection", "vllm.v1.sample.rejection_sampler", "RejectionSampler", "forward"),
)
STEP_PARTS = ("drafter", "target", "rejection")
_STEP_PROFILING = [False]
_STEP_WRAPPED = set()
_STEP_NOTES = []


def _ranged(label, fn):
    import functools

    import torch
    from torch.profiler import record_function

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _STEP_PROFILING[0]:
            return fn(*args, **kwargs)
        # On a GPU the work a range launched is waited for inside it, and work launched
        # before it outside it, so a range holds its own device time.
        sync = torch.cuda.is_available()
        if sync:
            torch.cuda.synchronize()
        with record_function("triagebot:" + label):
            out = fn(*args, **kwargs)
            if sync:
                torch.cuda.synchronize()
        return out

    return wrapper


def install_step_ranges():
    """Wrap each method of STEP_RANGES this release has; a missing one is noted."""
    import importlib

    for label, module, cls, method in STEP_RANGES:
        try:
            owner = getattr(importlib.import_module(module), cls)
            wrapped = _ranged(label, getattr(owner, method))
        except Exception as exc:  # noqa: BLE001 - any release may lack any of these
            _STEP_NOTES.append(f"{label} not measured: this release has no "
                               f"{module}.{cls}.{method} ({type(exc).__name__})")
            continue
        setattr(owner, method, wrapped)
        _STEP_WRAPPED.add(label)


def profile_steps(llm, requests, params):
    """One batch under torch.profiler: per-step means of each range (a StepProfile)."""
    if "execute_model" not in _STEP_WRAPPED:
        return {"profiler": "torch.profiler", "device": "unknown", "steps": 0,
                "notes": ["the step was not profiled"] + _STEP_NOTES}
    import torch

    cuda = torch.cuda.is_available()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    doc = {"profiler": "torch.profiler (CPU" + (", CUDA)" if cuda else ")"),
           "device": "cuda" if cuda else "cpu", "steps": 0, "notes": list(_STEP_NOTES)}
    _STEP_PROFILING[0] = True
    try:
        with torch.profiler.profile(activities=activities) as prof:
            run_batch(llm, requests, params)
    finally:
        _STEP_PROFILING[0] = False
    totals, counts = {}, {}
    for name, seconds in _host_ranges(prof):
        if name.startswith("triagebot:"):
            label = name.split(":", 1)[1]
            totals[label] = totals.get(label, 0.0) + seconds
            counts[label] = counts.get(label, 0) + 1
    steps = counts.get("target") or counts.get("execute_model", 0)
    if not steps:
        doc["notes"].append("no engine step ran in this process (the engine runs in "
                            "processes of its own), so the step was not profiled")
        return doc
    step = (totals.get("execute_model", 0.0) + totals.get("sample_tokens", 0.0)) / steps
    doc.update(steps=steps, step_s=step)
    for label in STEP_PARTS:
        if label in _STEP_WRAPPED:
            doc[label + "_s"] = totals.get(label, 0.0) / steps
    if all(label in _STEP_WRAPPED for label in STEP_PARTS):
        doc["host_s"] = step - sum(doc[label + "_s"] for label in STEP_PARTS)
    print("triagebot: step profile " + json.dumps(doc), flush=True)
    return doc


def _host_ranges(prof):
    """(name, seconds) of every host-side event. The profiler's raw events are read
    where this torch has them: `prof.events()` builds a tree of every operator first,
    which took tens of seconds for a batch of a tiny model on two shared cores."""
    try:
        raw = prof.profiler.kineto_results.events()
        return [(e.name(), (e.end_ns() - e.start_ns()) / 1e9) for e in raw
                if e.device_type().name == "CPU"]
    except Exception:  # noqa: BLE001 - an older or newer torch: its public events
        return [(e.name, e.time_range.elapsed_us() / 1e6) for e in prof.events()
                if getattr(getattr(e, "device_type", None), "name", "CPU") == "CPU"]


def step_profile_or_note(llm, requests, params):
    """The profile, or one that says why it failed: profiling never fails the cell."""
    try:
        return profile_steps(llm, requests, params)
    except Exception as exc:  # noqa: BLE001 - the runs still measure without it
        traceback.print_exc()
        return {"profiler": "torch.profiler", "device": "unknown", "steps": 0,
                "notes": [f"the profiled batch failed: {type(exc).__name__}: {exc}"[:300]]}
# --- end of step profile ---

# A measured run repeats its batch until it has decoded for at least this long; 0 (the
# cpu runner's choice, `triagebot/plan/cpu.py`) is one batch. The run is sized by the
# clock as it goes, not by a batch count fixed from the warm-ups: a count fixed once per
# engine start made one start's runs shorter than another's wherever its warm-ups met a
# busy moment (or another engine starting beside it).
MIN_RUN_S = float(os.environ.get("TRIAGEBOT_MIN_RUN_S", "0"))
# A warm-up is one batch unless this says otherwise (bench/cpu_noise.py's `/wW` ways):
# warm-ups sized by the clock as the runs are were tried and did not steady the A/A pair.
WARMUP_S = float(os.environ.get("TRIAGEBOT_WARMUP_S", "0"))


def start():
    import vllm
    from vllm import LLM, SamplingParams

    print(f"triagebot: vLLM {vllm.__version__}, {CELL_ID}: LLM({LLM_ARGS})", flush=True)
    notes = []
    if SYNTHETIC:
        if install_cpu_synthetic():
            notes.append(f"synthetic acceptance through {SYNTHETIC_STAND_IN}")
        else:
            notes.append("synthetic acceptance through the engine's own rejection kernels")
        print(f"triagebot: {notes[-1]}", flush=True)
    if PROFILE_STEPS:
        install_step_ranges()
    llm = LLM(**LLM_ARGS)
    params = SamplingParams(**SAMPLING)
    requests = build_requests(llm)
    for i in range(WARMUPS):
        _, _, batches, seconds = decode_for(llm, requests, params, WARMUP_S)
        print(f"triagebot: warm-up {i + 1}/{WARMUPS}: {batches} batch(es) in {seconds:.2f} s",
              flush=True)
    # After the warm-ups and before any measured run: its drafts fall outside every
    # run's counter deltas, and its time outside every run.
    profile = step_profile_or_note(llm, requests, params) if PROFILE_STEPS else None
    return {"llm": llm, "params": params, "requests": requests, "version": vllm.__version__,
            "notes": notes, "step_profile": profile}


def decode_for(llm, requests, params, min_s):
    """The batch, repeated until it has decoded for `min_s` seconds (at least once):
    (outputs of the last batch, tokens, batches, seconds)."""
    start_s = time.perf_counter()
    tokens = batches = 0
    seconds = 0.0
    while batches == 0 or seconds < min_s:
        outputs = run_batch(llm, requests, params)
        tokens += sum(len(o.outputs[0].token_ids) for o in outputs)
        batches += 1
        seconds = time.perf_counter() - start_s
    return outputs, tokens, batches, seconds


def measure_runs(state, count):
    llm, params, requests = state["llm"], state["params"], state["requests"]
    runs, spec, outputs = [], None, []
    for i in range(count):
        before = spec_snapshot(llm) if HAS_SPEC else None
        cpu_before = tree_cpu_seconds()
        outputs, tokens, batches, seconds = decode_for(llm, requests, params, MIN_RUN_S)
        cpu_after = tree_cpu_seconds()
        if HAS_SPEC:
            spec = spec_add(spec, spec_delta(before, spec_snapshot(llm)))
        cpu_s = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        runs.append(run_record(tokens, seconds, cpu_s=cpu_s, batches=batches))
        print(f"triagebot: run {i + 1}/{count}: {tokens} tokens in {seconds:.2f} s, "
              f"{batches} batch(es)"
              + (f", {cpu_s:.2f} CPU s" if cpu_s is not None else ""), flush=True)
    if HAS_SPEC:
        # vLLM's own counters as it reports them, for anyone checking our deltas.
        print("triagebot: get_metrics " + json.dumps([
            [type(m).__name__, m.name, getattr(m, "value", None), getattr(m, "values", None)]
            for m in llm.get_metrics() if "spec_decode" in m.name]), flush=True)
    return {
        "engine_version": state["version"],
        "env": machine_env(state["version"], vllm_commit()),
        "runs": runs,
        "spec": spec,
        "outputs_digest": digest_token_ids(o.outputs[0].token_ids for o in outputs),
        "notes": state["notes"],
        "step_profile": state["step_profile"],
    }


if __name__ == "__main__":
    main_live(start, measure_runs)
