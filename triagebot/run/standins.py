"""Build the stand-in models a plan names, once per recipe, into one cache folder.

Nothing is downloaded: a byte-level BPE tokenizer is trained with `tokenizers` on a
synthetic corpus, models are `transformers` configs with seeded weights, and target,
draft and MTP layer are trained for a few hundred steps on that corpus (on two CPU cores
about a minute each). EAGLE and EAGLE-3 heads are written as safetensors by hand in the
layout vLLM loads (`EagleLlamaForCausalLM`, `LlamaForCausalLMEagle3`); the EAGLE-3 head is
trained on the target's hidden states (triagebot.run.eagle3_head), the EAGLE one keeps
random weights.

A folder is built under a temporary name and renamed into place when complete, under a
file lock, so a crash never leaves a half-built model that looks finished.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from triagebot.engines.standins import (
    Corpus,
    Recipe,
    Training,
    VisionRecipe,
    aux_layer_ids,
    is_standin,
    recipes_for,
    vision_recipes_for,
)
from triagebot.plan_model import Plan
from triagebot.run.glm4v_standin import write_glm4v
from triagebot.run.provision import lock_file

DEFAULT_CACHE = Path.home() / ".cache" / "triagebot" / "standins"
DONE = ".triagebot-standin.json"

Log = Callable[[str], None]


def ensure(model_ids: set[str], cache_dir: Path = DEFAULT_CACHE,
           log: Log | None = None, device: str = "cpu") -> dict[str, Path]:
    """Folders for every stand-in id in `model_ids` (other ids are ignored), built where
    missing; `device` is where the missing ones are trained (a GPU runner passes "cuda")."""
    say = log or (lambda _m: None)
    out = {}
    for recipe in recipes_for(model_ids):
        out[recipe.model_id] = build(recipe, cache_dir, say, device)
    for vision in vision_recipes_for(model_ids):
        out[vision.model_id] = build_vision(vision, cache_dir, say)
    return out


def loaded_by(plan: Plan) -> set[str]:
    """The stand-in ids a plan's scripts load: targets, drafts, and the draft an engine
    picks itself (the transformers engine's `assistant_model`)."""
    ids: set[str] = set()
    for cell in plan.cells:
        assistant = cell.engine_args.get("assistant_model")
        draft = cell.spec.draft_model if cell.spec is not None else None
        ids.update(m for m in (cell.model, draft, assistant)
                   if isinstance(m, str) and is_standin(m))
    return ids


def build(recipe: Recipe, cache_dir: Path, log: Log, device: str = "cpu") -> Path:
    def write(tmp: Path) -> dict[str, Any]:
        _write(recipe, tmp, cache_dir, device)
        # The device is recorded: trained elsewhere, the same recipe rounds differently.
        return {"recipe": recipe.model_dump(mode="json"), "model_id": recipe.model_id,
                "device": device}

    def target_first() -> None:
        if recipe.target is not None:
            build(recipe.target, cache_dir, log, device)

    return build_once(cache_dir, recipe.folder, f"{recipe.model_id} on {device}", write,
                      log, before=target_first)


def build_vision(recipe: VisionRecipe, cache_dir: Path, log: Log) -> Path:
    """The GLM-4.1V stand-in's folder, written once (random weights: seconds)."""
    def write(tmp: Path) -> dict[str, Any]:
        write_glm4v(recipe, tmp, train_tokenizer(recipe.corpus))
        _portable_tokenizer_config(tmp)
        return {"recipe": recipe.model_dump(mode="json"), "model_id": recipe.model_id,
                "device": "cpu"}

    return build_once(cache_dir, recipe.folder, f"{recipe.model_id} on cpu", write, log)


def build_once(cache_dir: Path, folder: str, what: str,
               write: Callable[[Path], dict[str, Any]], log: Log,
               before: Callable[[], None] | None = None) -> Path:
    """`cache_dir / folder`, written by `write` where missing: one process builds it (a lock
    file), under a temporary name renamed into place once `write` returned, so a folder with
    its marker (DONE, holding what `write` returned) is always whole. Shared by every
    stand-in builder, whichever environment trains it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    final = cache_dir / folder
    if (final / DONE).exists():
        return final
    with lock_file(cache_dir / f"{folder}.lock"):
        if (final / DONE).exists():
            return final
        if before is not None:
            before()
        started = time.monotonic()
        log(f"building stand-in {what}")
        tmp = cache_dir / f".{folder}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        facts = write(tmp)
        (tmp / DONE).write_text(json.dumps(
            {**facts, "built_s": round(time.monotonic() - started, 1)}, indent=2))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        log(f"built {facts.get('model_id', folder)} in {time.monotonic() - started:.0f} s")
        return final


def _write(recipe: Recipe, folder: Path, cache_dir: Path, device: str = "cpu") -> None:
    import torch

    torch.manual_seed(recipe.training.seed if recipe.training else 0)
    if recipe.target is None:
        tokenizer = train_tokenizer(recipe.corpus)
    else:
        from transformers import PreTrainedTokenizerFast

        tokenizer = PreTrainedTokenizerFast.from_pretrained(cache_dir / recipe.target.folder)
    if recipe.role == "eagle3" and recipe.training is not None:
        _write_trained_eagle3(recipe, folder, cache_dir, tokenizer, device)
    elif recipe.role in ("eagle", "eagle3"):
        _write_head(recipe, folder)
    else:
        model = _causal_lm(recipe, tokenizer.vocab_size)
        if recipe.training is not None:
            ids = corpus_ids(recipe.corpus, tokenizer)
            train(model.to(device), ids, recipe.training)
            if recipe.mtp_training is not None:
                mtp = MtpLayer(model.config).to(device)
                train_mtp(model, mtp, ids, recipe.mtp_training)
                _save_mimo(model.cpu(), mtp.cpu(), folder)
            else:
                model.cpu().save_pretrained(folder, safe_serialization=True)
        else:
            model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    _portable_tokenizer_config(folder)


# --- corpus and tokenizer ----------------------------------------------------------------------


def corpus_lines(corpus: Corpus) -> list[str]:
    """Lines of a made-up language that walks a ring of words, one or two steps at a time.

    Each step advances one place (probability `lead` of the advancing steps) or two, and a
    step is now and then a random word. A greedy model picks, for each word, one of the two
    near-tied successors and so only moves forward round the ring: it cannot loop before
    half a lap (`words / 2` tokens), where a Markov chain's greedy path loops within a few
    words. Which of the two wins is nearly a coin toss decided by training, so a separately
    trained draft (or MTP layer) disagrees with the target on some words and acceptance
    lands between the extremes; `lead` moves it.
    """
    rng = random.Random(corpus.seed)
    letters = "abcdefghijklmnoprstuvwy"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(2, 7)))
                    for _ in range(corpus.words * 2)})[:corpus.words]
    rng.shuffle(words)
    lines = []
    for _ in range(corpus.lines):
        at = rng.randrange(len(words))
        out = [words[at]]
        for _ in range(corpus.line_words - 1):
            if rng.random() < corpus.follow:
                at = (at + (1 if rng.random() < corpus.lead else 2)) % len(words)
            else:
                at = rng.randrange(len(words))
            out.append(words[at])
        lines.append(" ".join(out))
    return lines


def train_tokenizer(corpus: Corpus) -> Any:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    tok = ByteLevelBPETokenizer()
    # The prompts our templates send are English; a few lines of it keep them from
    # falling apart into single bytes.
    english = ("the a of and to in is was for on that with as by at from it this be are "
               "request explain describe write plan summarise notes answer story river "
               "town market bread water forest bridge ship letter colony season day")
    tok.train_from_iterator([*corpus_lines(corpus), english], vocab_size=corpus.vocab_size,
                            min_frequency=2, special_tokens=["<s>", "</s>", "<pad>"])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")


def corpus_ids(corpus: Corpus, tokenizer: Any) -> Any:
    import torch

    ids: list[int] = []
    for line in corpus_lines(corpus):
        ids += [*tokenizer.encode(line, add_special_tokens=False), tokenizer.eos_token_id]
    return torch.tensor(ids, dtype=torch.long)


def _portable_tokenizer_config(folder: Path) -> None:
    """transformers 5 writes a tokenizer class that 4.x (vLLM <= 0.2x) refuses; the fast
    tokenizer class both read is named instead."""
    path = folder / "tokenizer_config.json"
    cfg = json.loads(path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    path.write_text(json.dumps(cfg, indent=2))


# --- models ------------------------------------------------------------------------------------


def _config_fields(recipe: Recipe, vocab: int) -> dict[str, Any]:
    return {"vocab_size": vocab, "hidden_size": recipe.hidden,
            "num_hidden_layers": recipe.layers, "num_attention_heads": recipe.heads,
            "num_key_value_heads": recipe.kv_heads, "intermediate_size": recipe.ffn,
            "max_position_embeddings": 2048, "bos_token_id": 0, "eos_token_id": 1,
            "pad_token_id": 2, "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
            "attn_implementation": "sdpa"}


def _causal_lm(recipe: Recipe, vocab: int) -> Any:
    if recipe.family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        return LlamaForCausalLM(LlamaConfig(**_config_fields(recipe, vocab)))
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return Qwen2ForCausalLM(Qwen2Config(**_config_fields(recipe, vocab)))


def _batches(ids: Any, training: Training, device: Any) -> Iterator[Any]:
    """Drawn on the CPU, so the batches are the same whichever device trains on them."""
    import torch

    gen = torch.Generator().manual_seed(training.seed)
    span = training.seq_len + 1
    for _ in range(training.steps):
        starts = torch.randint(0, len(ids) - span, (training.batch,), generator=gen)
        yield torch.stack([ids[s:s + span] for s in starts.tolist()]).to(device)


def _optimizer(params: Any, training: Training) -> tuple[Any, Any]:
    import torch

    opt = torch.optim.AdamW(params, lr=training.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=training.lr,
                                                total_steps=training.steps, pct_start=0.1)
    return opt, sched


def train(model: Any, ids: Any, training: Training) -> float:
    """Next-token training; returns the last loss (for the build record and tests)."""
    import torch

    torch.manual_seed(training.seed)
    model.train()
    opt, sched = _optimizer(model.parameters(), training)
    loss = torch.tensor(0.0)
    for batch in _batches(ids, training, model.device):
        loss = model(input_ids=batch[:, :-1], labels=batch[:, :-1]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return float(loss.detach())


def MtpLayer(config: Any) -> Any:
    """MiMo's MTP layer as vLLM computes it: norm(embedding of token t+1) and norm(the
    body's last hidden state before its final norm, at t) are joined by `input_proj`,
    pass one decoder layer and a final norm, and the shared lm_head predicts token t+2."""
    import torch
    from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer, Qwen2RMSNorm

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h, eps = config.hidden_size, config.rms_norm_eps
            self.token_layernorm = Qwen2RMSNorm(h, eps=eps)
            self.hidden_layernorm = Qwen2RMSNorm(h, eps=eps)
            self.input_proj = torch.nn.Linear(2 * h, h, bias=False)
            self.block = Qwen2DecoderLayer(config, layer_idx=config.num_hidden_layers - 1)
            self.final_layernorm = Qwen2RMSNorm(h, eps=eps)

        def forward(self, embeds: Any, hidden: Any, positions: Any, rotary: Any) -> Any:
            embeds = torch.where(positions.unsqueeze(-1) == 0, 0.0, embeds)
            x = self.input_proj(torch.cat([self.hidden_layernorm(hidden),
                                           self.token_layernorm(embeds)], dim=-1))
            out = self.block(x, attention_mask=None, position_ids=positions,
                             position_embeddings=rotary(x, positions))
            out = out[0] if isinstance(out, tuple) else out
            return self.final_layernorm(out)

    return Layer()


def _body_hidden(model: Any, input_ids: Any) -> Any:
    """The last decoder layer's output before the final norm (what vLLM's MiMo body hands
    its MTP layer)."""
    seen: list[Any] = []
    hook = model.model.layers[-1].register_forward_hook(
        lambda _m, _a, out: seen.append(out[0] if isinstance(out, tuple) else out))
    try:
        model.model(input_ids=input_ids)
    finally:
        hook.remove()
    return seen[0]


def train_mtp(model: Any, mtp: Any, ids: Any, training: Training) -> float:
    import torch

    torch.manual_seed(training.seed)
    for p in model.parameters():
        p.requires_grad_(False)
    opt, sched = _optimizer(mtp.parameters(), training)
    loss = torch.tensor(0.0)
    mtp.train()
    for batch in _batches(ids, training, model.device):
        x = batch[:, :-1]
        with torch.no_grad():
            hidden = _body_hidden(model, x)
            embeds = model.model.embed_tokens(x)
        seq = x.shape[1]
        positions = torch.arange(seq - 1, device=x.device).unsqueeze(0).expand(x.shape[0], -1)
        # At position t: the body's state at t and the embedding of token t+1 predict t+2.
        out = mtp(embeds[:, 1:], hidden[:, :-1], positions, model.model.rotary_emb)
        logits = model.lm_head(out)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 2:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    mtp.eval()
    return float(loss.detach())


def _save_mimo(model: Any, mtp: Any, folder: Path) -> None:
    from safetensors.torch import save_file

    model.save_pretrained(folder, safe_serialization=True)
    cfg_path = folder / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(architectures=["MiMoForCausalLM"], model_type="qwen2",
               num_nextn_predict_layers=1)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    weights = {f"model.mtp_layers.0.{k.replace('block.', '', 1)}": v.detach().contiguous()
               for k, v in mtp.state_dict().items()}
    from safetensors.torch import load_file

    body = load_file(str(folder / "model.safetensors"))
    save_file({**body, **weights}, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _write_trained_eagle3(recipe: Recipe, folder: Path, cache_dir: Path, tokenizer: Any,
                          device: str) -> None:
    """An EAGLE-3 head distilled from the trained target (triagebot.run.eagle3_head)."""
    import torch
    from transformers import LlamaForCausalLM

    from triagebot.run import eagle3_head

    assert recipe.target is not None and recipe.training is not None
    target: Any = LlamaForCausalLM.from_pretrained(cache_dir / recipe.target.folder,
                                                   dtype=torch.float32)
    target = target.to(device)
    config = target.config
    head = eagle3_head.Eagle3Head(config, config.num_hidden_layers).to(device)
    eagle3_head.start_from(target, head)
    opt, sched = _optimizer(head.parameters(), recipe.training)
    ids = corpus_ids(recipe.corpus, tokenizer)
    eagle3_head.train(target, head, _batches(ids, recipe.training, device), opt, sched)
    _save_head(recipe, folder, head.vllm_weights())


def _write_head(recipe: Recipe, folder: Path) -> None:
    """A random EAGLE (`fc [H, 2H]` + one layer without input norm, sharing the target's
    embeddings and lm_head) or EAGLE-3 (`fc [H, 3H]`, a midlayer whose q/k/v take 2H, its
    own norm and lm_head) head."""
    import torch

    assert recipe.target is not None
    cfg = json.loads((folder.parent / recipe.target.folder / "config.json").read_text())
    # The tokenizer may stop short of `corpus.vocab_size` merges; the target's embedding
    # is what the head must match.
    h, ffn, vocab = recipe.hidden, recipe.ffn, int(cfg["vocab_size"])
    head_dim = h // recipe.heads
    kv = recipe.kv_heads * head_dim
    gen = torch.Generator().manual_seed(7)

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen) * 0.02

    attn_in = 2 * h if recipe.role == "eagle3" else h
    layer = {"self_attn.q_proj.weight": rand(h, attn_in),
             "self_attn.k_proj.weight": rand(kv, attn_in),
             "self_attn.v_proj.weight": rand(kv, attn_in),
             "self_attn.o_proj.weight": rand(h, h),
             "mlp.gate_proj.weight": rand(ffn, h), "mlp.up_proj.weight": rand(ffn, h),
             "mlp.down_proj.weight": rand(h, ffn),
             "post_attention_layernorm.weight": torch.ones(h)}
    if recipe.role == "eagle":
        weights = {"fc.weight": rand(h, 2 * h),
                   **{f"layers.0.{k}": v for k, v in layer.items()}}
    else:
        weights = {"fc.weight": rand(h, 3 * h), "norm.weight": torch.ones(h),
                   "lm_head.weight": rand(vocab, h),
                   "midlayer.hidden_norm.weight": torch.ones(h),
                   "midlayer.input_layernorm.weight": torch.ones(h),
                   **{f"midlayer.{k}": v for k, v in layer.items()}}
    _save_head(recipe, folder, weights)


def _save_head(recipe: Recipe, folder: Path, weights: dict[str, Any]) -> None:
    """The head's weights and the target's config made into the head's."""
    from safetensors.torch import save_file

    assert recipe.target is not None
    cfg = json.loads((folder.parent / recipe.target.folder / "config.json").read_text())
    target_layers = int(cfg["num_hidden_layers"])
    cfg.update(num_hidden_layers=1, torch_dtype="float32")
    if recipe.role == "eagle":
        cfg["architectures"] = ["EagleLlamaForCausalLM"]
    else:
        cfg.update(architectures=["LlamaForCausalLMEagle3"], draft_vocab_size=cfg["vocab_size"],
                   eagle_aux_hidden_state_layer_ids=aux_layer_ids(target_layers))
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in weights.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))


def link_into(folder: Path, cache_dir: Path = DEFAULT_CACHE) -> None:
    """Make `folder/triagebot-standins` point at the cache, so stand-in ids resolve as
    local paths in scripts run from `folder`."""
    from triagebot.engines.standins import ROOT

    link = folder / ROOT
    if link.is_symlink() or link.exists():
        if link.is_symlink() and Path(os.readlink(link)) == cache_dir:
            return
        if link.is_symlink():
            link.unlink()
        else:
            raise RuntimeError(f"{link} exists and is not a link to the stand-in cache")
    link.symlink_to(cache_dir, target_is_directory=True)
