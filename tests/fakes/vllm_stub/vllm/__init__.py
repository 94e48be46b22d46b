"""A fake `vllm` for tests: records what it is given and answers in the real shapes."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from vllm.fake_spec import per_request, split
from vllm.v1.metrics.reader import Counter, Gauge, Histogram, Metric, Vector

__version__ = os.environ.get("FAKE_VLLM_VERSION", "0.33.0")


def _record(event: str, **data: Any) -> None:
    path = os.environ.get("FAKE_VLLM_RECORD")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": event, **data}, default=repr) + "\n")


class SamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.max_tokens = int(kwargs.get("max_tokens", 16))
        self.seed = kwargs.get("seed")
        _record("sampling_params", kwargs=kwargs)


class Tokenizer:
    """Whitespace words <-> ids, enough for prompt trimming and chat templates."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.ids: dict[str, int] = {}

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        out = []
        for word in text.split():
            if word not in self.ids:
                self.ids[word] = len(self.words)
                self.words.append(word)
            out.append(self.ids[word])
        return out

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids)

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool = False,
                            add_generation_prompt: bool = False) -> str:
        parts = []
        for message in messages:
            content = message["content"]
            if isinstance(content, str):
                parts.append(content)
                continue
            for item in content:
                parts.append(item["text"] if item["type"] == "text" else f"<{item['type']}>")
        return "<user> " + " ".join(parts) + (" <assistant>" if add_generation_prompt else "")


@dataclass
class CompletionOutput:
    token_ids: list[int]
    text: str = ""


@dataclass
class RequestOutput:
    prompt: str
    outputs: list[CompletionOutput] = field(default_factory=list)


class LLM:
    def __init__(self, **kwargs: Any) -> None:
        _record("llm_init", kwargs=kwargs)
        self.kwargs = kwargs
        self.log_stats = not kwargs.get("disable_log_stats", True)
        spec = kwargs.get("speculative_config") or {}
        self.k = int(spec.get("num_speculative_tokens", 0))
        self.totals = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0}
        self.per_pos = [0] * self.k
        self.tokenizer = Tokenizer()

    def get_tokenizer(self) -> Tokenizer:
        return self.tokenizer

    def _run(self, prompts: list[Any], params: SamplingParams, api: str) -> list[RequestOutput]:
        _record("batch", api=api, n=len(prompts), first=prompts[0] if prompts else None)
        outs = []
        for prompt in prompts:
            key = hashlib.sha256(json.dumps(prompt, default=repr).encode()).digest()
            ids = [(key[i % len(key)] + i + (params.seed or 0)) % 1000
                   for i in range(params.max_tokens)]
            outs.append(RequestOutput(prompt=str(prompt)[:40], outputs=[CompletionOutput(ids)]))
            if self.k:
                add = per_request(self.k)
                for name in self.totals:
                    self.totals[name] += int(add[name])
                for i, v in enumerate(add["per_position_accepted"]):
                    self.per_pos[i] += v
        return outs

    def generate(self, prompts: list[Any], sampling_params: SamplingParams,
                 use_tqdm: bool = True) -> list[RequestOutput]:
        return self._run(list(prompts), sampling_params, "generate")

    def chat(self, messages: list[Any], sampling_params: SamplingParams,
             use_tqdm: bool = True) -> list[RequestOutput]:
        return self._run(list(messages), sampling_params, "chat")

    def get_metrics(self) -> list[Metric]:
        assert self.log_stats, "Stat logging disabled"
        metrics: list[Metric] = [
            Gauge("vllm:num_requests_running", {"engine": "0"}, 0.0),
            Histogram("vllm:e2e_request_latency_seconds", {"engine": "0"}, 1, 0.5, {"+Inf": 1}),
        ]
        if not self.k:
            return metrics
        for name, total in self.totals.items():
            for engine, part in enumerate(split(total)):
                labels = {"engine": str(engine), "model_name": "fake"}
                metrics.append(Counter(f"vllm:spec_decode_{name}", labels, part))
        pos_parts = [split(v) for v in self.per_pos]
        for engine in (0, 1):
            labels = {"engine": str(engine), "model_name": "fake"}
            metrics.append(Vector("vllm:spec_decode_num_accepted_tokens_per_pos", labels,
                                  [p[engine] for p in pos_parts]))
        return metrics
