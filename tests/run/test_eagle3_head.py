"""The EAGLE-3 head's training, on a target small enough to run in a second.

Whether vLLM accepts the trained head's drafts is tested on the real engine
(tests/engines/test_vllm_cpu_real.py); here: the head has the tensors vLLM's
LlamaForCausalLMEagle3 loads, in their shapes, and training lowers its loss.
"""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from triagebot.engines.standins import aux_layer_ids
from triagebot.run import eagle3_head

H, VOCAB = 32, 64


def _target() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=H, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128))


def _train(target: LlamaForCausalLM, head: eagle3_head.Eagle3Head, steps: int) -> float:
    gen = torch.Generator().manual_seed(1)
    # A sequence that repeats with period 5: learnable in a few steps.
    batches = [torch.arange(17).repeat(4, 1).add(torch.randint(0, 5, (4, 1), generator=gen))
               .remainder(5) for _ in range(steps)]
    opt = torch.optim.AdamW(head.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _s: 1.0)
    return eagle3_head.train(target, head, batches, opt, sched)


def test_the_head_has_the_tensors_vllm_loads_in_their_shapes() -> None:
    target = _target()
    head = eagle3_head.Eagle3Head(target.config, 4)
    eagle3_head.start_from(target, head)
    weights = head.vllm_weights()
    kv = 2 * (H // 4)
    assert weights["fc.weight"].shape == (H, 3 * H)
    assert weights["midlayer.self_attn.q_proj.weight"].shape == (H, 2 * H)
    assert weights["midlayer.self_attn.k_proj.weight"].shape == (kv, 2 * H)
    assert weights["lm_head.weight"].shape == (VOCAB, H)
    assert {"norm.weight", "midlayer.hidden_norm.weight", "midlayer.input_layernorm.weight",
            "midlayer.post_attention_layernorm.weight", "midlayer.mlp.down_proj.weight",
            "midlayer.self_attn.o_proj.weight"} <= set(weights)
    # The embedding is the target's, shared by vLLM; the head must not carry one.
    assert not any("embed_tokens" in k for k in weights)
    assert torch.equal(weights["lm_head.weight"], target.lm_head.weight.detach())
    assert head.aux == aux_layer_ids(4) and len(set(head.aux)) == 3


def test_training_lowers_the_heads_loss() -> None:
    target = _target()
    head = eagle3_head.Eagle3Head(target.config, 4)
    first = _train(target, head, 1)
    assert _train(target, head, 15) < first
