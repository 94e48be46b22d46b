"""`@triagebot watch [engine=E] [gpu=KIND]` and `@triagebot unwatch`.

`watch` follows the thread's reproduced report across new releases of its engine: each
release is measured against the last one measured, side by side, and the thread hears
when the state changes. `engine=` and `gpu=` (the runner kind) default to the report's
job; nothing else is read, since a watch repeats the comparison that decided the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.commands.base import CommandSpec, Malformed, Parsed, Word
from triagebot.overrides import OptionsError, parse_overrides

KEYS = ("engine", "gpu")


def parse_watch(words: Sequence[Word]) -> Parsed:
    for word in words:
        key = word.text.partition("=")[0].strip().lower()
        if "=" not in word.text or key not in KEYS:
            raise Malformed(f"`watch` takes only {', '.join(k + '=' for k in KEYS)}; "
                            f"{word.text[:40]!r} is not one of them", word.position)
    try:
        options = parse_overrides([w.text for w in words])
    except OptionsError as exc:
        raise Malformed(f"`watch`: {exc}", words[0].position if words else None) from None
    args = options.as_args()
    return Parsed(text=" ".join(["watch", *args]), words=tuple(args), options=options)


def parse_unwatch(words: Sequence[Word]) -> Parsed:
    if words:
        raise Malformed(f"`unwatch` takes no arguments, but {words[0].text[:40]!r} follows "
                        "it", words[0].position)
    return Parsed(text="unwatch")


SPEC = CommandSpec(
    name="watch",
    usage="[engine=E] [gpu=KIND]",
    summary="Re-measure this thread's reproduced report on every new release and say "
            "here when it changes (fixed, worse, back, broken).",
    parse=parse_watch,
)
UNWATCH = CommandSpec(
    name="unwatch",
    usage="",
    summary="Stop watching this thread's report on new releases.",
    parse=parse_unwatch,
)
