"""Word patterns that scan a whole thread, made fast.

An alternation of words that starts with `\\b` or a look-behind makes the regex engine try
every word at every character. A look-ahead for the characters the words can start with
lets it skip to the next candidate first: several times faster on the prose, logs and
tables a report pastes. `first` must hold every character a match can start with (both
cases are added): tests/parse/test_words.py holds each pattern to finding the same with
and without it.
"""

from __future__ import annotations

import re

# (fast, plain) for every pattern made here, for the test that they find the same.
PREFILTERED: list[tuple[re.Pattern[str], re.Pattern[str]]] = []


def fast(pattern: str, first: str, flags: int = re.I) -> re.Pattern[str]:
    """`pattern` behind a look-ahead for its possible first characters."""
    chars = "".join(sorted({c for ch in first for c in (ch.lower(), ch.upper())}))
    quick = re.compile(f"(?=[{re.escape(chars)}])(?:{pattern})", flags)
    PREFILTERED.append((quick, re.compile(pattern, flags)))
    return quick
