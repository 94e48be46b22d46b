"""Facts stated in sentences, titles and tables rather than in commands or code.

Prose is the weakest evidence: each pattern asks for an explicit statement ("TP=4",
"vLLM 0.17.1", "8x H200") and never infers from loose words. Each extractor adds what
it finds to a `Facts`; `decide` weighs them below what the reporter ran.
"""

from __future__ import annotations

from triagebot.parse.prose.hardware import gpus
from triagebot.parse.prose.lines import Line, iter_lines
from triagebot.parse.prose.models import models, table_models
from triagebot.parse.prose.settings import numbers, table_spec_tokens
from triagebot.parse.prose.versions import (
    ENGINE_WORDS,
    engine_mentions,
    printed_versions,
    versions,
)

__all__ = ["ENGINE_WORDS", "Line", "engine_mentions", "gpus", "iter_lines", "models",
           "numbers", "printed_versions", "table_models", "table_spec_tokens", "versions"]
