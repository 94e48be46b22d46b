"""The syntax around commands in a report's lines: quote markers and prompts, continuations,
fences, YAML scalars and flow lists, and the keys of compose / Kubernetes lists.

Continuations are joined here, before any word is split, because reports use three kinds
and the standard library knows one: a trailing `\\` (with a comment after it, even),
Windows' `^` and PowerShell's backtick. Compose and Kubernetes argument lists are read
line by line rather than by a YAML parser: a report pastes a fragment of a file (one
service's `command:` without its document, indentation broken by the quote markers of an
email reply), which a YAML parser rejects as a whole.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

from triagebot.parse.commands.words import match_brackets

_QUOTE_PREFIX = re.compile(r"[ \t]{0,12}(?:>[ \t]?){1,8}")
_PROMPTS = (
    re.compile(
        r"[ \t]{0,12}(?:\([\w.\-]{1,64}\)[ \t]*)?"
        r"(?:[\w.\-]{1,64}@[\w.\-]{1,64}:[^\s$#]{0,200})?[$%][ \t]+"
    ),
    re.compile(r"[ \t]{0,12}PS [^>\n]{0,200}>[ \t]*"),
    re.compile(r"[ \t]{0,12}[A-Za-z]:\\[^>\n]{0,200}>[ \t]*"),
)  # fmt: skip
BULLET = re.compile(r"[ \t]{0,12}(?:\d{1,3}[.)]|[-*+•])[ \t]+")
FENCE = re.compile(r"[ \t]{0,12}(`{3,}|~{3,})")
COMMENT = re.compile(r"[ \t]*#")
FLAG_LINE = re.compile(r"[ \t]*--?[A-Za-z]")
CMD_HEAD = re.compile(
    r"[ \t]*(?:(?:[A-Za-z_]\w{0,100}=(?:'[^'\n]{0,500}'|\"[^\"\n]{0,500}\"|[^\s'\"]{0,500})"
    r"|sudo(?:[ \t]+-[A-Za-z]{1,4})*|env|nohup|time|exec|command|(?:uv|poetry|pipenv)[ \t]+run)"
    r"[ \t]+){0,12}([\w./~\\:+\-]{1,200})(?:[ \t]|$)"
)
INLINE_CODE = re.compile(r"`([^`\n]{4,4000})`")


def strip_prefixes(line: str) -> tuple[str, bool]:
    """Drop markdown quote markers and shell prompts; True when a prompt was seen."""
    m = _QUOTE_PREFIX.match(line)
    if m:
        line = line[m.end() :]
    for rx in _PROMPTS:
        pm = rx.match(line)
        if pm and pm.end() < len(line):
            return line[pm.end() :], True
    return line, False


class LineMap:
    """Offset in a joined logical command -> 1-based document line."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.lines: list[int] = []

    def add(self, offset: int, line: int) -> None:
        self.starts.append(offset)
        self.lines.append(line)

    def __call__(self, pos: int) -> int:
        idx = bisect_right(self.starts, pos) - 1
        return self.lines[max(idx, 0)] if self.lines else 0


def cut_continuation(body: str) -> tuple[str, bool]:
    """Drop a trailing `\\`, Windows `^` or PowerShell backtick (and a comment after `\\`)."""
    t = body.rstrip()
    if t.endswith("\\"):
        return t[:-1], True
    if t[-1:] in ("^", "`") and t[-2:-1] in (" ", "\t"):
        return t[:-1], True
    b = t.rfind("\\")
    if b >= 0 and t[b + 1 :].lstrip(" \t").startswith("#"):  # `--tp 2 \\  # why`
        return t[:b], True
    return body, False


class QuoteState:
    """Tracks, line by line, whether a quoted JSON value is still open (multi-line JSON)."""

    def __init__(self) -> None:
        self.quote: str | None = None
        self.depth = 0

    def feed(self, text: str) -> bool:
        if self.quote is None and "'" not in text and '"' not in text:
            return False
        for c in text:
            if self.quote is None:
                if c in ("'", '"'):
                    self.quote, self.depth = c, 0
            elif c == self.quote:
                self.quote = None
            elif c in ("{", "["):
                self.depth += 1
            elif c in ("}", "]"):
                self.depth -= 1
        return self.quote is not None and self.depth > 0
LIST_KEY = re.compile(
    r"([ \t]*)(?:-[ \t]+)?[\"']?(command|args|entrypoint|cmd|Cmd|Entrypoint)[\"']?"
    r"[ \t]*:[ \t]*(.*)$"
)
ENV_KEY = re.compile(r"([ \t]*)(?:-[ \t]+)?[\"']?(env|environment)[\"']?[ \t]*:[ \t]*(.*)$")
IMAGE_KEY = re.compile(r"[ \t]*(?:-[ \t]+)?[\"']?image[\"']?[ \t]*:[ \t]*[\"']?([^\s\"']+)")
FOLLOW = {"command": ("args",), "cmd": ("args",), "entrypoint": ("command", "args")}
ITEM = re.compile(r"([ \t]*)-[ \t]+(.*)$")
INLINE_LIST = re.compile(
    r"\[[ \t]*[\"'](?:vllm|vllm-mlx|python3?|sglang|llama-server|trtllm-serve|docker)[\"']"
)


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def yaml_scalar(text: str) -> str:
    """A YAML scalar as written in a list item or mapping value."""
    t = text.strip()
    if t[:1] == '"':
        end = _dquote_end(t)
        if end > 0:
            try:
                val = json.loads(t[:end])
                return val if isinstance(val, str) else t[1 : end - 1]
            except ValueError:
                return t[1 : end - 1]
        return t[1:]
    if t[:1] == "'":
        end = t.find("'", 1)
        while end > 0 and t[end + 1 : end + 2] == "'":
            end = t.find("'", end + 2)
        return (t[1:end] if end > 0 else t[1:]).replace("''", "'")
    hash_at = t.find(" #")
    return (t[:hash_at] if hash_at >= 0 else t).strip()


def bracket_delta(text: str) -> int:
    return text.count("[") + text.count("{") - text.count("]") - text.count("}")


def _dquote_end(t: str) -> int:
    i = 1
    while i < len(t):
        if t[i] == "\\":
            i += 2
            continue
        if t[i] == '"':
            return i + 1
        i += 1
    return -1


def flow_items(s: str, base: int) -> list[tuple[str, int]]:
    """Items of a YAML/JSON flow list `s` (starting with `[`), with their offsets."""
    end = match_brackets(s, 0)
    body_end = end - 1 if end > 0 else len(s)
    try:
        parsed = json.loads(s[:end]) if end > 0 else None
    except (ValueError, RecursionError):
        parsed = None
    items: list[tuple[str, int]] = []
    i = 1
    while i < body_end:
        while i < body_end and s[i] in " \t\r\n,":
            i += 1
        if i >= body_end:
            break
        start = i
        if s[i] in "\"'":
            j = _dquote_end(s[i:body_end]) if s[i] == '"' else s.find("'", i + 1) + 1 - i
            j = body_end - i if j <= 0 else j
            raw = s[i : i + j]
            i += j
        else:
            j = i
            while j < body_end and s[j] != ",":
                if s[j] in "{[":
                    k = match_brackets(s, j)  # unbalanced: the rest is one item (linear)
                    j = k if 0 < k <= body_end else body_end
                else:
                    j += 1
            raw = s[i:j]
            i = j
        items.append((yaml_scalar(raw), base + start))
    if isinstance(parsed, list) and len(parsed) == len(items):
        items = [
            (str(v) if not isinstance(v, str) else v, pos)
            for v, (_, pos) in zip(parsed, items, strict=True)
        ]
    return items
