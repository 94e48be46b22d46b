"""Train an EAGLE-3 head on a stand-in target's hidden states, in the layout vLLM loads.

EAGLE-3 drafts from three of the target's intermediate states: vLLM collects the residual
stream at the layers named by `eagle_aux_hidden_state_layer_ids` (id i is the state after
i decoder layers, id 0 the embeddings, which is what `output_hidden_states` gives at index
i), joins them, and `fc` maps them down to one state. The head's single layer then reads
that state beside the embedding of the next token: each is normed (`hidden_norm`,
`input_layernorm`), the two are concatenated into attention whose q/k/v take twice the
width, `fc`'s output is the residual, and a final norm and the head's own lm_head predict
the token after next. A later draft step feeds the layer's pre-norm output back as the
state.

The head is trained as EAGLE-3 trains one: the target frozen, its distribution at the next
position the soft label (so the head learns the target's choices, not the corpus's), and
a second step fed the head's own output (training-time test), so that positions after the
first are accepted too. Only the first step's attention sees the whole causal prefix; the
second step attends to the first step's keys and its own, as vLLM's draft KV cache holds
them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn import functional
from transformers.models.llama.modeling_llama import (
    LlamaAttention,
    LlamaMLP,
    LlamaRMSNorm,
    apply_rotary_pos_emb,
)

from triagebot.engines.standins import aux_layer_ids


class Eagle3Head(nn.Module):
    def __init__(self, config: Any, target_layers: int) -> None:
        super().__init__()
        h = config.hidden_size
        self.aux = aux_layer_ids(target_layers)
        self.fc = nn.Linear(len(self.aux) * h, h, bias=False)
        self.hidden_norm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.input_layernorm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.self_attn = LlamaAttention(config, layer_idx=0)
        heads, kv, dim = (config.num_attention_heads, config.num_key_value_heads,
                          config.hidden_size // config.num_attention_heads)
        # vLLM's EAGLE-3 layer: attention reads [embedding ; state], twice the width.
        self.self_attn.q_proj = nn.Linear(2 * h, heads * dim, bias=False)
        self.self_attn.k_proj = nn.Linear(2 * h, kv * dim, bias=False)
        self.self_attn.v_proj = nn.Linear(2 * h, kv * dim, bias=False)
        self.post_attention_layernorm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.mlp = LlamaMLP(config)
        self.norm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(h, config.vocab_size, bias=False)

    def _qkv(self, embeds: Any, state: Any, rotary: tuple[Any, Any]) -> tuple[Any, Any, Any]:
        x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(state)], dim=-1)
        attn = self.self_attn
        shape = (*x.shape[:-1], -1, attn.head_dim)
        q = attn.q_proj(x).view(shape).transpose(1, 2)
        k = attn.k_proj(x).view(shape).transpose(1, 2)
        v = attn.v_proj(x).view(shape).transpose(1, 2)
        cos, sin = rotary
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return q, k, v

    def _finish(self, attended: Any, residual: Any) -> tuple[Any, Any]:
        """The layer after attention: (logits, pre-norm state for the next step)."""
        b, heads, t, dim = attended.shape
        out = self.self_attn.o_proj(attended.transpose(1, 2).reshape(b, t, heads * dim))
        residual = out + residual
        mlp = self.mlp(self.post_attention_layernorm(residual))
        state = mlp + residual
        return self.lm_head(self.norm(state)), state

    def forward(self, aux: Any, embeds: Any, next_embeds: Any,
                rotary: tuple[Any, Any], next_rotary: tuple[Any, Any]) -> tuple[Any, Any]:
        """Logits of two draft steps over a batch of sequences.

        Step 1 at position t: the target's state at t and the embedding of token t+1
        predict token t+2. Step 2 at position t+1: step 1's state at t and the embedding of
        token t+2 predict t+3, attending to step 1's keys at positions <= t and its own.
        """
        groups = self.self_attn.num_key_value_groups
        state = self.fc(aux)
        q, k, v = self._qkv(embeds, state, rotary)
        k, v = (x.repeat_interleave(groups, dim=1) for x in (k, v))
        first = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        logits1, state1 = self._finish(first, state)
        q2, k2, v2 = self._qkv(next_embeds, state1, next_rotary)
        k2, v2 = (x.repeat_interleave(groups, dim=1) for x in (k2, v2))
        t = q2.shape[2]
        # Step 2's query at row i (position i+1) sees step 1's keys at rows <= i and its own
        # key at row i: a causal mask over step 1's keys plus the diagonal of its own.
        scores = torch.cat([q2 @ k.transpose(-1, -2), (q2 * k2).sum(-1, keepdim=True)],
                           dim=-1) * self.self_attn.scaling
        causal = torch.ones(t, t, dtype=torch.bool, device=q2.device).tril()
        mask = torch.cat([causal, torch.ones(t, 1, dtype=torch.bool, device=q2.device)], -1)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        second = weights[..., :t] @ v + weights[..., t:] * v2
        logits2, _ = self._finish(second, state1)
        return logits1, logits2

    def vllm_weights(self) -> dict[str, Any]:
        """The tensors under the names vLLM's LlamaForCausalLMEagle3 loads (no embedding:
        the target's is shared)."""
        out = {"fc.weight": self.fc.weight, "norm.weight": self.norm.weight,
               "lm_head.weight": self.lm_head.weight}
        for name in ("hidden_norm", "input_layernorm", "post_attention_layernorm",
                     "self_attn", "mlp"):
            for key, value in getattr(self, name).state_dict().items():
                out[f"midlayer.{name}.{key}"] = value
        return {k: v.detach().contiguous().cpu() for k, v in out.items()}


def train(target: Any, head: Eagle3Head, batches: Iterable[Any], opt: Any,
          sched: Any) -> float:
    """Distil the frozen target into the head; returns the last loss."""
    for p in target.parameters():
        p.requires_grad_(False)
    target.eval()
    head.train()
    embed, rotary_emb = target.model.embed_tokens, target.model.rotary_emb
    loss = torch.tensor(0.0)
    for batch in batches:
        x = batch[:, :-1]
        seq = x.shape[1]
        with torch.no_grad():
            out = target(input_ids=x, output_hidden_states=True)
            aux = torch.cat([out.hidden_states[i] for i in head.aux], dim=-1)
            soft = out.logits.float().softmax(-1)
            embeds = embed(x)
        positions = torch.arange(seq, device=x.device).unsqueeze(0).expand(x.shape[0], -1)
        # Step 1 runs at positions 0..seq-3 (token t+1 in, target's view of t+2 as label);
        # step 2 at 1..seq-2 (token t+2 in, the target's view of t+3).
        n = seq - 2
        rotary = rotary_emb(embeds, positions[:, :n])
        next_rotary = rotary_emb(embeds, positions[:, 1:n + 1])
        logits1, logits2 = head(aux[:, :n], embeds[:, 1:n + 1], embeds[:, 2:n + 2],
                                rotary, next_rotary)
        loss = (_soft_ce(logits1, soft[:, 1:n + 1]) + _soft_ce(logits2, soft[:, 2:n + 2])) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    head.eval()
    return float(loss.detach())


def _soft_ce(logits: Any, probs: Any) -> Any:
    return -(probs * logits.float().log_softmax(-1)).sum(-1).mean()


def start_from(target: Any, head: Eagle3Head) -> None:
    """The head's final norm and lm_head start as the target's (as EAGLE-3 heads do), so
    training spends its steps on fc and the layer."""
    with torch.no_grad():
        head.norm.weight.copy_(target.model.norm.weight)
        head.lm_head.weight.copy_(target.lm_head.weight)
