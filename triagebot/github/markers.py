"""Hidden markers that tie a bot comment to its job: `<!-- triagebot:v1 job=abc123 -->`.

The marker is the first line of the comment. Anyone can paste one, so a comment counts as
ours only when the marker is there *and* the author is the App's bot login.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"[a-z]+=[A-Za-z0-9_.-]{1,80}", re.ASCII)


def marker(key: str) -> str:
    """The hidden marker for `key`, such as "job=abc123" or "reply=<comment id>"."""
    if not _KEY.fullmatch(key):
        raise ValueError(f"marker key {key!r} must match {_KEY.pattern}")
    return f"<!-- triagebot:v1 {key} -->"


def has_marker(body: str, key: str) -> bool:
    """Whether the first line of `body` is the marker for `key`."""
    return body.split("\n", 1)[0].strip() == marker(key)


def with_marker(key: str, body: str) -> str:
    """`body` with the marker for `key` as its first line (added once)."""
    if has_marker(body, key):
        return body
    return f"{marker(key)}\n{body}"
