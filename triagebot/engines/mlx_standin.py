"""The stand-in vllm-mlx serves on the cpu runner: a tiny Qwen3-Next with one MTP layer.

Pure: this module names the stand-in and describes how it is built; the builder is
`triagebot.run.vllm_mlx` (training runs inside the vllm-mlx environment, see
`triagebot/run/mlx_train.py`). vllm-mlx's text path injects MTP into `qwen3_next` and
`qwen3_5*` models only, so the stand-in is mlx-lm's `qwen3_next`, with the MTP layer in
`model-mtp.safetensors` beside the checkpoint, where vllm-mlx looks for it.

Every layer is a full-attention layer (`full_attention_interval` 1). Qwen3-Next's
linear-attention (Gated DeltaNet) layers keep a recurrent state, and on a rejected draft
vllm-mlx 0.6.0 snapshots it with `mx.array.copy()`, a method no MLX release has: every
verified step would fail (counted in the `errors` of `/v1/status`). With full attention
only, vllm-mlx rolls a rejected draft back by trimming the KV cache, which works, so no
patch of MLX or vllm-mlx is needed; the recurrent-state rollback is what is not tested.

The body and MTP layer are trained on the project's synthetic language
(`triagebot.engines.standins.Corpus`) without end-of-text tokens: vllm-mlx's completions
API has no `ignore_eos`, and a model that never learned to stop generates `max_tokens`
on every request, so runs do equal work.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from triagebot.engines.standins import ROOT, Corpus, Training
from triagebot.frozen import Frozen

RECIPE_VERSION = 1
FAMILY_WORDS = "a 2-layer Qwen3-Next (full attention) with 1 MTP layer"


class MlxRecipe(Frozen):
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    ffn: int = 192
    corpus: Corpus = Corpus()
    body: Training = Training(steps=200, lr=5e-3)
    mtp: Training = Training(steps=150, lr=5e-3, seed=1)

    def digest(self) -> str:
        body = {"v": RECIPE_VERSION, **self.model_dump(mode="json")}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]

    @property
    def model_id(self) -> str:
        # No "qwen3" in the name: vllm-mlx forces Qwen3's <|im_end|> stop token on a
        # served folder whose name contains it.
        return f"{ROOT}/mlxnext-target-{self.digest()}"

    @property
    def folder(self) -> str:
        return self.model_id.split("/", 1)[1]

    def config(self, vocab: int) -> dict[str, Any]:
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


STANDIN = MlxRecipe()


def is_mlx_standin(model_id: str) -> bool:
    return model_id == STANDIN.model_id
