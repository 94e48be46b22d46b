"""The stand-ins vllm-mlx serves on the cpu runner: a tiny Qwen3-Next with one MTP layer
for the text path, and a tiny Qwen3.5 vision-language model with one for the MLLM path.

Pure: this module names the stand-ins and describes how they are built; the builder is
`triagebot.run.vllm_mlx` (training runs inside the vllm-mlx environment, see
`triagebot/run/mlx_train.py`). vllm-mlx's text path injects MTP into `qwen3_next` and
`qwen3_5*` models only, so the text stand-in is mlx-lm's `qwen3_next`, with the MTP layer
in `model-mtp.safetensors` beside the checkpoint, where vllm-mlx looks for it. Its MLLM
path injects MTP into `qwen3_5` vision-language models only (see `MlxVlRecipe`).

Every layer of the text stand-in is a full-attention layer (`full_attention_interval`
1). Qwen3-Next's linear-attention (Gated DeltaNet) layers keep a recurrent state, and on
a rejected draft the text path of vllm-mlx 0.6.0 snapshots it with `mx.array.copy()`, a
method no MLX release has: every verified step would fail (counted in the `errors` of
`/v1/status`). With full attention only, vllm-mlx rolls a rejected draft back by
trimming the KV cache, which works, so no patch of MLX or vllm-mlx is needed. The MLLM
path's stand-in keeps a Gated DeltaNet layer, whose rollback that path does without
`copy()`.

The bodies and MTP layers are trained on the project's synthetic language
(`triagebot.engines.standins.Corpus`) without end-of-text tokens: vllm-mlx's completions
API has no `ignore_eos`, and a model that never learned to stop generates `max_tokens`
on every request, so runs do equal work.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from triagebot.engines.standins import ROOT, Corpus, Training
from triagebot.frozen import Frozen

RECIPE_VERSION = 1
FAMILY_WORDS = "a 2-layer Qwen3-Next (full attention) with 1 MTP layer"
VL_FAMILY_WORDS = ("a Qwen3.5 vision-language model (a 1-block ViT, a 2-layer text body of "
                   "one Gated DeltaNet and one full-attention layer) with 1 MTP layer")


class _Named(Frozen):
    """A stand-in's id: its kind and a digest of everything that decides its bytes."""

    # No "qwen3" in the name: vllm-mlx forces Qwen3's <|im_end|> stop token on a served
    # folder whose name contains it.
    PREFIX: ClassVar[str]
    ARCH: ClassVar[str]

    def digest(self) -> str:
        body = {"v": RECIPE_VERSION, **self.model_dump(mode="json")}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]

    @property
    def model_id(self) -> str:
        return f"{ROOT}/{self.PREFIX}-{self.digest()}"

    @property
    def folder(self) -> str:
        return self.model_id.split("/", 1)[1]


class MlxRecipe(_Named):
    PREFIX: ClassVar[str] = "mlxnext-target"
    ARCH: ClassVar[str] = "qwen3_next"

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    ffn: int = 192
    corpus: Corpus = Corpus()
    body: Training = Training(steps=200, lr=5e-3)
    mtp: Training = Training(steps=150, lr=5e-3, seed=1)

    def config(self, vocab: int, tokens: dict[str, int]) -> dict[str, Any]:
        """mlx-lm's `qwen3_next` ModelArgs, as config.json holds them."""
        return {
            "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
            "hidden_size": self.hidden, "num_hidden_layers": self.layers,
            "intermediate_size": self.ffn, "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads, "head_dim": self.head_dim,
            # Unused with full attention only; mlx-lm's ModelArgs requires them.
            "linear_num_value_heads": self.heads, "linear_num_key_heads": self.kv_heads,
            "linear_key_head_dim": self.head_dim, "linear_value_head_dim": self.head_dim,
            "linear_conv_kernel_dim": 4, "full_attention_interval": 1,
            "num_experts": 0, "num_experts_per_tok": 0, "decoder_sparse_step": 1,
            "shared_expert_intermediate_size": 0, "mlp_only_layers": [],
            "moe_intermediate_size": 0, "rms_norm_eps": 1e-6, "vocab_size": vocab,
            "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
            "max_position_embeddings": 2048, "tie_word_embeddings": False,
            "num_nextn_predict_layers": 1, "bos_token_id": 0, "eos_token_id": 1,
            "pad_token_id": 2, "torch_dtype": "float32",
        }


# Qwen's chat and vision tokens, added to the ring language's tokenizer for the
# vision-language stand-in; mlx-vlm's Qwen3-VL processor looks them up by name.
VL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
             "<|image_pad|>", "<|video_pad|>")
# A chat template of our own: each image part of a message becomes Qwen's placeholder,
# which the processor widens to the image's patch tokens.
VL_CHAT = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}"
    "{{ m.content }}{% else %}{% for part in m.content %}"
    "{% if part.type in ('image', 'image_url') %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part.type == 'text' %}{{ part.text }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}")


class MlxVlRecipe(_Named):
    """mlx-vlm's `qwen3_5`: a Qwen3-VL vision tower and a Qwen3.5 text body.

    The body is hybrid, as Qwen3.5's is: a Gated DeltaNet layer then a full-attention one
    (`full_attention_interval` 2). vllm-mlx's MTP forward reads its mask from the first
    linear-attention layer's cache, so a body of full-attention layers only fails there;
    and its MLLM path rolls a rejected draft back by restoring the recurrent state, which
    this body exercises. The vision tower has random weights (it stands in for the
    encoder's work, as the GLM-4.1V stand-in does for vLLM); the body and the MTP layer
    are trained on the ring language as the text stand-in's are, and the MTP layer is
    saved under `mtp/` with a manifest saying its norms are MLX's, where vllm-mlx reads it.
    """

    PREFIX: ClassVar[str] = "mlxvl-target"
    ARCH: ClassVar[str] = "qwen3_5_vl"

    hidden: int = 64
    layers: int = 2
    heads: int = 2
    kv_heads: int = 1
    head_dim: int = 32
    ffn: int = 192
    vision_depth: int = 1
    vision_hidden: int = 32
    vision_heads: int = 2
    vision_ffn: int = 64
    patch: int = 16
    # The processor resizes every image to between these many pixels.
    min_pixels: int = 64 * 64
    max_pixels: int = 448 * 448
    corpus: Corpus = Corpus()
    body: Training = Training(steps=200, lr=5e-3)
    mtp: Training = Training(steps=150, lr=5e-3, seed=1)

    def config(self, vocab: int, tokens: dict[str, int]) -> dict[str, Any]:
        """mlx-vlm's `qwen3_5` ModelConfig, as config.json holds it."""
        rotary = self.head_dim // 4  # partial_rotary_factor 0.25
        text = {
            "model_type": "qwen3_5_text", "hidden_size": self.hidden,
            "intermediate_size": self.ffn, "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads, "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim, "linear_num_value_heads": self.heads,
            "linear_num_key_heads": self.heads, "linear_key_head_dim": self.head_dim,
            "linear_value_head_dim": self.head_dim, "linear_conv_kernel_dim": 4,
            "full_attention_interval": 2, "num_experts": 0, "rms_norm_eps": 1e-6,
            "vocab_size": vocab, "max_position_embeddings": 4096,
            "tie_word_embeddings": False, "mtp_num_hidden_layers": 1, "eos_token_id": 1,
            # mlx-vlm reads rope_parameters (time, height and width sections of the
            # rotated half); vllm-mlx's MTP layer, built with mlx-lm's args, the flat keys.
            "rope_parameters": {"type": "default", "rope_theta": 10000.0,
                                "partial_rotary_factor": 0.25,
                                "mrope_section": [rotary // 4, rotary // 8,
                                                  rotary // 2 - rotary // 4 - rotary // 8]},
            "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
        vision = {
            "model_type": "qwen3_5", "depth": self.vision_depth,
            "hidden_size": self.vision_hidden, "intermediate_size": self.vision_ffn,
            "num_heads": self.vision_heads, "out_hidden_size": self.hidden,
            "patch_size": self.patch, "spatial_patch_size": self.patch,
            "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3,
            "num_position_embeddings": 64, "deepstack_visual_indexes": []}
        return {
            "model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
            "text_config": text, "vision_config": vision, "vocab_size": vocab,
            "image_token_id": tokens["<|image_pad|>"],
            "video_token_id": tokens["<|video_pad|>"],
            "vision_start_token_id": tokens["<|vision_start|>"],
            "vision_end_token_id": tokens["<|vision_end|>"], "eos_token_id": 1,
            "tie_word_embeddings": False, "torch_dtype": "float32"}

    def preprocessor(self) -> dict[str, Any]:
        """The image processor's settings (preprocessor_config.json), read by mlx-vlm's
        own numpy Qwen3-VL processor, which needs neither torch nor torchvision."""
        return {"patch_size": self.patch, "temporal_patch_size": 2, "merge_size": 2,
                "min_pixels": self.min_pixels, "max_pixels": self.max_pixels,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                "processor_class": "Qwen3VLProcessor"}


STANDIN = MlxRecipe()
VL_STANDIN = MlxVlRecipe()
RECIPES: dict[str, MlxRecipe | MlxVlRecipe] = {r.model_id: r for r in (STANDIN, VL_STANDIN)}


def is_mlx_standin(model_id: str) -> bool:
    return model_id in RECIPES
