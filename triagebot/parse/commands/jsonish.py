"""JSON-ish config values as reports write them (`--speculative-config '{...}'`), read
tolerantly: shell quotes around them, Python literals, trailing commas, missing closers."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

from triagebot.parse.commands.invocation import MAX_JSON_CHARS, MAX_JSON_DEPTH
from triagebot.parse.common import brackets


def parse_json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """Tolerantly read a JSON-ish config value (`--speculative-config` and friends).

    Accepts JSON, Python literals (single quotes, True/False/None), surrounding shell
    quotes, trailing commas, missing closing brackets and bare YAML-flow words
    (`{method: mtp}`). Returns None for anything else, for values over
    MAX_JSON_CHARS, or nested deeper than MAX_JSON_DEPTH.
    """
    if not isinstance(text, str):
        return None
    t = text.strip()
    if len(t) > MAX_JSON_CHARS:
        return None
    t = _strip_outer_quotes(t)
    if not t or t[0] not in "{[":
        return None
    depth, closers = _nesting(t)
    if depth > MAX_JSON_DEPTH:
        return None
    for candidate in _json_candidates(t, closers):
        value = _loads(candidate)
        if isinstance(value, dict | list):
            return value
    return None


def _strip_outer_quotes(t: str) -> str:
    while len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" and t[1:2] in ("{", "["):
        t = t[1:-1].strip()
    # A value cut from a broken quote may keep only one of its quotes.
    if t[:1] in "'\"" and t[1:2] in ("{", "["):
        t = t[1:]
    if t[-1:] in "'\"" and t[-2:-1] in ("}", "]"):
        t = t[:-1]
    return t


def _nesting(t: str) -> tuple[int, str]:
    """Maximum bracket depth and the closers needed to balance `t` (strings skipped)."""
    stack: list[str] = []
    deepest = 0
    for _, c in brackets(t):
        if c in "{[":
            stack.append("}" if c == "{" else "]")
            deepest = max(deepest, len(stack))
            if deepest > MAX_JSON_DEPTH:
                return deepest, ""
        elif c in "}]" and stack:
            stack.pop()
    return deepest, "".join(reversed(stack))


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:")
_BARE_VALUE = re.compile(r"(:\s*)([A-Za-z_][\w.\-/]*)(\s*[,}\]])")
_JSON_WORDS = {"true", "false", "null", "True", "False", "None"}


def _json_candidates(t: str, closers: str) -> Iterator[str]:
    yield t
    if '\\"' in t:  # escaped quotes left from a double-quoted shell word
        t = t.replace('\\"', '"')
        closers = _nesting(t)[1]
        yield t
    fixed = _TRAILING_COMMA.sub(r"\1", t + closers)
    if fixed != t:
        yield fixed
    bare = _BARE_KEY.sub(r'\1"\2":', fixed)
    bare = _BARE_VALUE.sub(
        lambda m: (
            m.group(0) if m.group(2) in _JSON_WORDS else f'{m.group(1)}"{m.group(2)}"' + m.group(3)
        ),
        bare,
    )
    if bare != fixed:
        yield bare


def _loads(s: str) -> object:
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        pass
    if len(s) > 100_000:  # ast.literal_eval is slower; JSON-sized configs only
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
