"""The values a plan uses when the report is silent, each with the reason the report shows."""

from __future__ import annotations

import re

from triagebot.plan_model import DefaultUsed, NotCompared

TEMPERATURE = (0.0, "greedy sampling makes speculative decoding lossless, so outputs of "
                    "spec and no-spec cells can be compared token for token")
MAX_TOKENS = (256, "long enough for decode to dominate the measured time")
IGNORE_EOS = (True, "every request generates exactly max_tokens, so runs do equal work")
NUM_PROMPTS = {"offline": 1, "serve": 200, "mm_processor": 100}
NUM_PROMPTS_WHY = {
    "offline": "one request at a time: the latency-bound case speculative decoding is "
               "meant for; prompts= sets a batch",
    "serve": "a typical serving benchmark",
    "mm_processor": "a typical multimodal processor benchmark",
}
INPUT_LEN = {"offline": 128, "serve": 1024, "mm_processor": 128}
SERVE_CONCURRENCY = 16
K_BY_METHOD = {"mtp": 1, "eagle": 3, "eagle3": 3, "ngram": 4, "draft_model": 4, "suffix": 4,
               "dflash": 4, "medusa": 3}
GPU_KIND = "h100"

# The reference engine runs a tiny model built from a config; these keep a whole plan
# to a couple of minutes on a laptop-class CPU.
REFERENCE_MODEL = "tiny-random-llama"
REFERENCE_DRAFT = "tiny-random-llama-draft"
REFERENCE_CAPS = {"num_prompts": 4, "max_tokens": 64, "input_len": 64}

_GPU_KINDS = (
    (r"\bGB200\b", "gb200"), (r"\bB200\b", "b200"), (r"\bH200\b", "h200"),
    (r"\bH100\b", "h100"), (r"\bH800\b", "h800"), (r"\bH20\b", "h20"),
    (r"\bA100\b", "a100"), (r"\bA800\b", "a800"), (r"\bA10G?\b", "a10"),
    (r"\bL40S?\b", "l40s"), (r"\bL4\b", "l4"), (r"RTX ?5090", "rtx5090"),
    (r"RTX ?4090", "rtx4090"), (r"RTX ?3090", "rtx3090"), (r"MI300X?", "mi300x"),
    (r"\bM[1-5]\b", "apple-silicon"),
)


def gpu_kind(reported: str | None) -> str | None:
    """The runner queue for a GPU the reporter named, when we know one like it."""
    if not reported:
        return None
    for pattern, kind in _GPU_KINDS:
        if re.search(pattern, reported, re.IGNORECASE):
            return kind
    return None


class Choices:
    """Collects the defaults and notes a plan made, in the order it made them."""

    def __init__(self) -> None:
        self.defaults: list[DefaultUsed] = []
        self.notes: list[str] = []
        self.not_compared: list[NotCompared] = []

    def default(self, field: str, value: object, reason: str) -> None:
        self.defaults.append(DefaultUsed(field=field, value=str(value), reason=reason))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
