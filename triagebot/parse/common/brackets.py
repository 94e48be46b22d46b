"""The one quote-aware bracket scanner the command-line and Python readers share.

Reports paste JSON configs in shell words and Python calls in prose; finding where a
value or a call ends means counting brackets while skipping those inside strings.
"""

from __future__ import annotations

from collections.abc import Iterator

OPENERS = "([{"
CLOSERS = ")]}"


def brackets(s: str, start: int = 0, end: int | None = None,
             quotes: str = "\"'") -> Iterator[tuple[int, str]]:
    """(index, bracket) for each bracket of `s[start:end]` outside quoted strings.

    A character in `quotes` opens a string that the same character closes; inside it a
    backslash escapes the next character. With `quotes=""` every bracket counts. One
    pass, so a caller that stops early has read only up to where it stopped.
    """
    stop = len(s) if end is None else min(end, len(s))
    quote: str | None = None
    i = start
    while i < stop:
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in quotes:
            quote = c
        elif c in OPENERS or c in CLOSERS:
            yield i, c
        i += 1
