"""`@triagebot repro [key=value ...]`: reproduce the thread's report, with overrides.

The words are the CLI's overrides (`triagebot.overrides`), so a comment and
`triagebot repro FILE key=value ...` mean the same thing. The normalised text lists the
options in `ReproOptions.as_args()` order, so reordered or re-spaced words give the same
text, and so the same job id.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.commands.base import CommandSpec, Malformed, Parsed, Position, Word
from triagebot.overrides import OptionsError, parse_overrides

# One line per key for the help text; tests check that every key of ReproOptions has one.
KEY_HELP: dict[str, str] = {
    "engine": "engine to run: vllm, sglang, vllm-mlx or transformers",
    "version": "engine release to install, as in 0.17.1",
    "model": "target model id (ORG/NAME)",
    "draft": "draft model id for draft-model or EAGLE speculation",
    "spec": "speculative levels to compare, as in mtp:1,none",
    "k": "num_speculative_tokens values to sweep, as in 1,2,4",
    "modes": "execution modes to compare, as in eager,graph",
    "workload": "offline, serve or mm_processor",
    "runs": "timed runs per cell (1-100)",
    "warmups": "discarded warm-up runs per cell (0-20)",
    "gpu": "GPU kind to run on, as in h100",
    "tp": "tensor-parallel size",
    "temperature": "sampling temperature (0 for greedy)",
    "max_tokens": "tokens generated per request",
    "concurrency": "concurrent requests (serve workload)",
    "prompts": "number of prompts per run",
}


def _key(word: str) -> str:
    # The same folding as options.parse_overrides, to point at the word it refused.
    return word.partition("=")[0].strip().lower().replace("-", "_")


def _culprit(words: Sequence[Word], exc: OptionsError) -> Position | None:
    if exc.key:
        same = [w for w in words if _key(w.text) == exc.key]
        if same:
            return same[1].position if len(same) > 1 else same[0].position
    for word in words:
        try:
            parse_overrides([word.text])
        except OptionsError:
            return word.position
    return None


def parse(words: Sequence[Word]) -> Parsed:
    try:
        options = parse_overrides(w.text for w in words)
    except OptionsError as exc:
        raise Malformed(f"`repro`: {exc}", _culprit(words, exc)) from None
    text = " ".join(["repro", *options.as_args()])
    return Parsed(text=text, words=tuple(w.text for w in words), options=options)


SPEC = CommandSpec(
    name="repro",
    usage="[key=value ...]",
    summary="Reproduce the report on a GPU runner and post the measured answer here.",
    parse=parse,
    aliases=("reproduce",),
)
