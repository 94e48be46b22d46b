"""Train a vllm-mlx stand-in inside the vllm-mlx environment (run as a script there).

This file is fixed code that `triagebot.run.vllm_mlx` runs with the runner
environment's interpreter; it imports only what that environment has (MLX, mlx-lm,
mlx-vlm, vllm-mlx, numpy), never triagebot. Its one argument is a JSON file naming the folder to
fill, the corpus token ids, the architecture, its config and the training settings.

The body is mlx-lm's own Qwen3-Next model (text path) or mlx-vlm's own Qwen3.5
vision-language model (MLLM path), and the MTP layer is the module vllm-mlx itself
injects at load time (`vllm_mlx.patches.qwen3_next_mtp`, `.qwen3_5_mtp`), trained
through the same `mtp_forward` the server calls to draft, so the head that is served is
exactly the head that was trained. The body is trained first; the MTP layer after it,
with the body frozen, on the hidden state the server drafts from at t and the embedding
of token t+1, to predict token t+2.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _batches(ids: Any, steps: int, batch: int, seq_len: int, seed: int) -> Any:
    import mlx.core as mx
    import numpy as np

    rng = np.random.RandomState(seed)
    span = seq_len + 1
    for _ in range(steps):
        starts = rng.randint(0, len(ids) - span, size=batch)
        yield mx.array(np.stack([ids[s:s + span] for s in starts]))


def _train(module: Any, loss_fn: Any, ids: Any, training: dict[str, Any]) -> float:
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim

    steps = int(training["steps"])
    warm = max(1, steps // 10)
    schedule = optim.join_schedules(
        [optim.linear_schedule(1e-5, training["lr"], warm),
         optim.cosine_decay(training["lr"], steps - warm)], [warm])
    opt = optim.AdamW(learning_rate=schedule, weight_decay=0.0)
    step = nn.value_and_grad(module, loss_fn)
    loss = mx.array(0.0)
    for batch in _batches(ids, steps, training["batch"], training["seq_len"],
                          training["seed"]):
        loss, grads = step(batch)
        opt.update(module, grads)
        mx.eval(module.parameters(), opt.state, loss)
    return float(loss.item())


@dataclass(frozen=True)
class Trainee:
    """A stand-in to train: `model`, its text body `text`, next-token scores `logits(x)`,
    the state the server drafts from `hidden(x)`, the file its MTP weights go in, and
    vllm-mlx's `inject`, which adds the MTP module."""

    model: Any
    text: Any
    logits: Any
    hidden: Any
    mtp_file: Path
    inject: Any


def _fit(spec: dict[str, Any], folder: Path, ids: Any, trainee: Trainee) -> tuple[float, float]:
    """Train the text body, save it, then let vllm-mlx add its MTP module and train that,
    with the body frozen, on the state the server drafts from; save it."""
    model, text, logits, hidden = trainee.model, trainee.text, trainee.logits, trainee.hidden
    mtp_file, inject = trainee.mtp_file, trainee.inject
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    config = spec["config"]

    def body_loss(batch: Any) -> Any:
        return nn.losses.cross_entropy(logits(batch[:, :-1]), batch[:, 1:], reduction="mean")

    body = _train(model, body_loss, ids, spec["body"])
    mx.save_safetensors(str(folder / "model.safetensors"),
                        dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})
    (folder / "config.json").write_text(json.dumps(config, indent=2))

    # vllm-mlx builds its MTP module only where the file exists; one norm in it is enough
    # (load_weights is not strict), the rest starts from MLX's seeded initialisation.
    mx.random.seed(spec["mtp"]["seed"])
    size = config.get("text_config", config)["hidden_size"]
    mx.save_safetensors(str(mtp_file), {"mtp.norm.weight": mx.ones(size)})
    if not inject(model, folder, config):
        raise SystemExit("vllm-mlx did not inject its MTP module into the stand-in")
    model.freeze()
    text.mtp.unfreeze()

    def mtp_loss(batch: Any) -> Any:
        x = batch[:, :-1]
        state = mx.stop_gradient(hidden(x))
        scores = text.mtp_forward(state[:, :-1], x[:, 1:])
        return nn.losses.cross_entropy(scores[:, :-1], x[:, 2:], reduction="mean")

    head = _train(model, mtp_loss, ids, spec["mtp"])
    weights = {f"mtp.{k}": v for k, v in tree_flatten(text.mtp.parameters())}
    mx.save_safetensors(str(mtp_file), weights, metadata={"format": "mlx"})
    return body, head


def _text(spec: dict[str, Any], folder: Path, ids: Any) -> tuple[float, float]:
    """mlx-lm's Qwen3-Next with vllm-mlx's text-path MTP module, in
    model-mtp.safetensors beside the checkpoint."""
    import mlx.core as mx
    from mlx_lm.models import qwen3_next
    from vllm_mlx.patches.qwen3_next_mtp import inject_mtp_support

    mx.random.seed(spec["body"]["seed"])
    model = qwen3_next.Model(qwen3_next.ModelArgs.from_dict(spec["config"]))
    mx.eval(model.parameters())
    return _fit(spec, folder, ids, Trainee(
        model, model, logits=model, hidden=lambda x: model(x, return_hidden=True)[1],
        mtp_file=folder / "model-mtp.safetensors", inject=inject_mtp_support))


def _vision_language(spec: dict[str, Any], folder: Path, ids: Any) -> tuple[float, float]:
    """mlx-vlm's Qwen3.5 vision-language model with the MTP module vllm-mlx's MLLM path
    injects (`vllm_mlx.patches.qwen3_5_mtp`). Only the text body and the MTP layer are
    trained, on text; the vision tower keeps its seeded initialisation."""
    import mlx.core as mx
    from mlx_vlm.models import qwen3_5
    from vllm_mlx.patches.qwen3_5_mtp import inject_mtp_support

    mx.random.seed(spec["body"]["seed"])
    model = qwen3_5.Model(qwen3_5.ModelConfig.from_dict(spec["config"]))
    mx.eval(model.parameters())
    text = model.language_model
    # vllm-mlx reads mtp/weights.safetensors before model-mtp.safetensors (mlx-vlm loads
    # every *.safetensors beside config.json), and the manifest keeps it from adding 1 to
    # norms it takes for Qwen's offset convention.
    (folder / "mtp").mkdir()
    (folder / "mtp" / "manifest.json").write_text(json.dumps(
        {"artifact_schema_version": 1, "rmsnorm_weight_format": "mlx_gamma"}))
    # The injected forward, the one the server drafts from, needs caches.
    return _fit(spec, folder, ids, Trainee(
        model, text, logits=lambda x: text(x).logits,
        hidden=lambda x: text(x, cache=text.make_cache(), return_hidden=True)[1],
        mtp_file=folder / "mtp" / "weights.safetensors", inject=inject_mtp_support))


ARCHES = {"qwen3_next": _text, "qwen3_5_vl": _vision_language}


def main(spec_path: str) -> None:
    import numpy as np

    spec = json.loads(Path(spec_path).read_text())
    folder = Path(spec["folder"])
    ids = np.array(json.loads(Path(spec["ids"]).read_text()), dtype=np.int32)
    started = time.monotonic()
    body, head = ARCHES[spec["arch"]](spec, folder, ids)
    # The builder reads this last line into the stand-in's build record.
    sys.stdout.write(json.dumps({"body_loss": round(body, 4), "mtp_loss": round(head, 4),
                                 "train_s": round(time.monotonic() - started, 1)}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
