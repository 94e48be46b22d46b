"""Which tiny locally built model stands in for a reported model on the `cpu` runner.

Pure: this module only names stand-ins and describes how each is built. The builder
(`triagebot.run.standins`) turns a recipe into a folder of weights, a tokenizer and a
config; the folder's name carries a hash of the recipe, so a changed recipe is a new
model and never a stale cache hit.

A stand-in keeps the reported model's architecture family where vLLM's CPU build runs
it (Llama and Qwen2 bodies); a report about MTP gets a MiMo-style model (a Qwen2 body
with one MTP layer), the MTP architecture the CPU build was seen to run. Target, draft
and MTP layer are trained briefly on a synthetic language, a walk round a ring of
made-up words one or two places at a time, so acceptance lands between the extremes:
a greedy target moves on round the ring instead of repeating one word (what random
weights, or a Markov chain learned for two minutes, do, and what every draft and prompt
lookup then accepts), and a separately trained draft or MTP layer breaks the near-tied
one-or-two-step choice differently from the target on some words. Measured on vLLM
0.32.0's CPU build, greedy, the 4 template prompts x 96 tokens: trained draft (k=3)
26 %, MTP (k=1) 53 %, ngram (k=3) 85 % of 81 drafted tokens, `draft=target` 100 %.
The EAGLE head keeps random weights (acceptance ~0) and proves only that the
release loads and runs the method.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from triagebot.frozen import Frozen

# Scripts run with the repro's output folder as their working directory; the runner
# links this folder there, so the ids below open as local paths and never hit a hub.
ROOT = "triagebot-standins"
RECIPE_VERSION = 2

Family = Literal["llama", "qwen2", "mimo"]
Role = Literal["target", "draft", "eagle", "eagle3"]


class Corpus(Frozen):
    """A synthetic language: a seeded walk round a ring of made-up words (see
    `triagebot.run.standins.corpus_lines`)."""

    seed: int = 0
    # A greedy lap of the ring takes 36-72 tokens, so a 96-token answer comes back round
    # and prompt lookup finds matches, though the second lap seldom repeats the first.
    words: int = 72
    # Share of steps that walk the ring (the rest jump to a random word), and of those
    # the share that advance one word rather than two. `lead` moves acceptance (vLLM
    # 0.32.0, trained Llama draft k=3 / ngram k=3): 0.5 gives 26 % / 85 %, 0.55 54 % /
    # 96 %, 0.6 83 % / 86 %; 0.5 keeps prompt lookup furthest from 100 %.
    follow: float = 0.85
    lead: float = 0.5
    lines: int = 3000
    line_words: int = 48
    vocab_size: int = 1024


class Training(Frozen):
    steps: int
    batch: int = 8
    seq_len: int = 64
    lr: float = 3e-3
    seed: int = 0


class Named(Frozen):
    """What names a stand-in: its family and role, and a digest of everything else that
    went into it, so a changed recipe is a new model and never a stale cached one."""

    family: str
    role: str

    def digest(self) -> str:
        body = {"v": RECIPE_VERSION, **self.model_dump(mode="json")}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]

    @property
    def model_id(self) -> str:
        return f"{ROOT}/{self.family}-{self.role}-{self.digest()}"

    @property
    def folder(self) -> str:
        return self.model_id.split("/", 1)[1]


class Recipe(Named):
    """Everything that decides a stand-in's bytes: its id is a hash of this."""

    family: Family
    role: Role
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    corpus: Corpus = Corpus()
    training: Training | None = None
    # The MiMo target's MTP layer is trained after its body, with the body frozen.
    mtp_training: Training | None = None
    # For draft and heads: the target whose tokenizer (and, for heads, sizes) they share.
    target: Recipe | None = None


class VisionRecipe(Named):
    """A tiny GLM-4.1V (`Glm4vForConditionalGeneration`: a ViT encoder and a GLM text
    body) with seeded random weights and the ring language's tokenizer plus GLM's image
    and video tokens. It is never trained: it stands in for the encoder's work (patches
    in, embeddings out) and the processor's, which random weights do as much of as
    trained ones; its answers mean nothing."""

    family: Literal["glm4v"] = "glm4v"
    role: Literal["target"] = "target"
    hidden: int = 256
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 512
    vision_hidden: int = 128
    vision_depth: int = 2
    vision_heads: int = 2
    vision_ffn: int = 256
    # GLM-4.1V's patch grid: 14-pixel patches, 2 frames a temporal patch, 2x2 merged
    # into one token, position embeddings for a 336-pixel square.
    patch: int = 14
    image_size: int = 336
    # The processor's largest image in pixels: vLLM's start-up profiles the encoder on
    # one image this large, and GLM-4.1V's own (9.6 M pixels) takes a minute on a CPU. A
    # 512 x 512 image (the plans' default, and the cap on a report's own size) fits.
    max_pixels: int = 512 * 512
    seed: int = 0
    corpus: Corpus = Corpus()


def vision() -> VisionRecipe:
    """The vision-language stand-in: a GLM-4.1V, the family of the multimodal reports
    the cpu runner answers, which vLLM's CPU build loads and runs."""
    return VisionRecipe()


def vision_words() -> str:
    return "a tiny GLM-4.1V (2-layer ViT encoder, 2-layer GLM text body, random weights)"


# "cpu" fits vLLM's CPU build on two cores. "gpu" is sized so that a GPU's decode step is
# not pure launch overhead: a ~270M-parameter target (few, wide layers keep
# torch.compile's first compile short) and a ~10M draft, trained on the GPU in seconds,
# at a lower learning rate that a model this wide needs to stay stable.
Size = Literal["cpu", "gpu"]
SIZES: tuple[Size, ...] = ("cpu", "gpu")
_TARGET_SHAPE = {"hidden": 256, "layers": 4, "heads": 4, "kv_heads": 2, "ffn": 512}
_TARGET_TRAINING = Training(steps=120)
_SHAPES: dict[Size, dict[str, int]] = {
    "cpu": _TARGET_SHAPE,
    "gpu": {"hidden": 2048, "layers": 6, "heads": 16, "kv_heads": 4, "ffn": 5632},
}
_DRAFT_SHAPES: dict[Size, dict[str, int]] = {
    "cpu": {"hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 256},
    "gpu": {"hidden": 512, "layers": 2, "heads": 8, "kv_heads": 2, "ffn": 1408},
}
_TRAINING: dict[Size, Training] = {
    "cpu": _TARGET_TRAINING,
    "gpu": Training(steps=150, batch=16, lr=1e-3),
}


def target(family: Family, size: Size = "cpu") -> Recipe:
    mtp = (Training(steps=100, seed=1, lr=_TRAINING[size].lr, batch=_TRAINING[size].batch)
           if family == "mimo" else None)
    return Recipe(family=family, role="target", **_SHAPES[size], training=_TRAINING[size],
                  mtp_training=mtp)


def draft(family: Family, size: Size = "cpu") -> Recipe:
    """A smaller model of the target's family (a MiMo target gets a Qwen2 draft)."""
    body: Family = "qwen2" if family == "mimo" else family
    training = _TRAINING[size].model_copy(update={"seed": 2})
    return Recipe(family=body, role="draft", **_DRAFT_SHAPES[size], training=training,
                  target=target(family, size))


# The EAGLE-3 head learns the target's choices from its hidden states, so it needs fewer
# steps than a draft that learns the language from scratch.
_EAGLE3_TRAINING = Training(steps=100, seed=3, lr=2e-3)


def head(family: Family, role: Literal["eagle", "eagle3"]) -> Recipe:
    """A one-layer EAGLE or EAGLE-3 head over the Llama target (vLLM's CPU build runs
    both as LlamaForCausalLM drafts); the EAGLE-3 head is trained on the target's hidden
    states, the EAGLE head keeps random weights."""
    return Recipe(family="llama", role=role, **_TARGET_SHAPE | {"layers": 1},
                  training=_EAGLE3_TRAINING if role == "eagle3" else None,
                  target=target("llama" if family == "mimo" else family))


def aux_layer_ids(target_layers: int) -> list[int]:
    """The target layers an EAGLE-3 head reads: three distinct ones, since vLLM's default
    (2, L//2, L-3) repeats a layer on a 4-layer target and the first step crashes."""
    return [1, target_layers // 2, target_layers - 1]


# --- which stand-in for which report -------------------------------------------------------

_QWEN = re.compile(r"qwen|qwq", re.I)


def family_for(model: str | None, spec_method: str | None) -> Family:
    """The stand-in family for a reported model and method.

    MTP needs a model with MTP layers; of those the CPU build runs the MiMo layout. Qwen
    models keep a Qwen2 body; everything else (Llama, GLM, DeepSeek, gpt-oss, ...) gets
    a Llama body, the architecture every release of the CPU build supports.
    """
    if spec_method is not None and spec_method.endswith("mtp"):
        return "mimo"
    if model and _QWEN.search(model):
        return "qwen2"
    return "llama"


def family_words(family: Family) -> str:
    return {"llama": "a 4-layer Llama", "qwen2": "a 4-layer Qwen2",
            "mimo": "a 4-layer MiMo-style model (Qwen2 body + 1 MTP layer)"}[family]


def vision_recipes_for(model_ids: set[str]) -> list[VisionRecipe]:
    """The vision-language recipes behind stand-in ids a plan names."""
    recipe = vision()
    return [recipe] if recipe.model_id in model_ids else []


def recipes_for(model_ids: set[str]) -> list[Recipe]:
    """The recipes behind stand-in ids a plan names (targets first, so drafts can share
    their tokenizer)."""
    known = _known()
    found = [known[m] for m in model_ids if m in known]
    return sorted(found, key=lambda r: r.role != "target")


def _known() -> dict[str, Recipe]:
    known = {}
    for family in ("llama", "qwen2", "mimo"):
        for recipe in (head(family, "eagle"), head(family, "eagle3"),
                       *(r for size in SIZES for r in (target(family, size),
                                                       draft(family, size)))):
            known[recipe.model_id] = recipe
    return known


def draft_for(target_id: str) -> str | None:
    """The trained draft stand-in that shares `target_id`'s tokenizer (and its size), for
    an engine that stands in for MTP, EAGLE and the like with a small draft model."""
    recipe = _known().get(target_id)
    if recipe is None or recipe.role != "target":
        return None
    size = next(s for s in SIZES if target(recipe.family, s) == recipe)
    return draft(recipe.family, size).model_id


def is_standin(model_id: str) -> bool:
    return model_id.startswith(ROOT + "/")


def is_untrained_head(model_id: str | None) -> bool:
    """The EAGLE stand-in head: random weights, so its acceptance is ~0 by construction
    and says nothing about the engine (the EAGLE-3 head is trained)."""
    if model_id is None or not is_standin(model_id):
        return False
    return model_id.split("/", 1)[1].split("-")[1] == "eagle"
