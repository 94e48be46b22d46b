"""Markdown that stays what we meant when it carries text we do not control.

Reports quote log lines, error messages, reporter labels and environment strings. On
GitHub such text could ping people (`@team`), inject HTML, close a code fence early,
break a table, or turn into links. Every helper here returns text that renders as the
literal input, or as close to it as markdown allows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")


def neutralize_mentions(text: str) -> str:
    """`@name` -> `@<zero-width joiner>name`: shown the same, pings nobody."""
    return _MENTION.sub("@" + ZWJ, text)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}<>|#~!])")


def inline(text: object, limit: int = 500) -> str:
    """Untrusted text for a paragraph or list item: one line, no HTML, no markdown
    syntax, no mentions, at most `limit` characters."""
    s = " ".join(str(text).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("&", "&amp;")
    s = _MD_SPECIAL.sub(lambda m: "&lt;" if m.group(1) == "<" else
                        "&gt;" if m.group(1) == ">" else "\\" + m.group(1), s)
    return neutralize_mentions(s)


def table_cell(text: object, limit: int = 200) -> str:
    """Untrusted text for a table cell (pipes and newlines would end the cell)."""
    return inline(text, limit) or " "


_BACKTICKS = re.compile(r"`+")


def longest_backtick_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS.findall(text)), default=0)


def code_span(text: object, limit: int = 200) -> str:
    """Inline code whose delimiter is longer than any backtick run inside."""
    s = " ".join(str(text).split())[:limit]
    ticks = "`" * (longest_backtick_run(s) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


_LANG = re.compile(r"[^a-z0-9_+-]")


def fence(text: str, lang: str = "") -> str:
    """A fenced block that no content can close: the fence is longer than every
    backtick run in `text`. Mentions inside code blocks do not notify, so the content
    is kept byte for byte."""
    ticks = "`" * max(3, longest_backtick_run(text) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{_LANG.sub('', lang.lower())}\n{body}{ticks}"


_MERMAID_BAD = re.compile(r"[^A-Za-z0-9 _.:=+/()-]+")


def mermaid_label(text: str, limit: int = 40) -> str:
    """A quoted category for a mermaid chart: only characters mermaid cannot misread."""
    cleaned = " ".join(_MERMAID_BAD.sub(" ", text).split())[:limit].strip()
    return '"' + (cleaned or "cell") + '"'


def bar_chart(title: str, labels: Sequence[str], values: Sequence[float], unit: str) -> str:
    """A mermaid `xychart-beta` bar chart, fenced (GitHub renders it)."""
    top = max(values, default=1.0) * 1.15 or 1.0
    cats = ", ".join(mermaid_label(label) for label in labels)
    bars = ", ".join(f"{v:.2f}" for v in values)
    body = (
        "xychart-beta\n"
        f"    title {mermaid_label(title, 80)}\n"
        f"    x-axis [{cats}]\n"
        f"    y-axis {mermaid_label(unit, 20)} 0 --> {top:.0f}\n"
        f"    bar [{bars}]\n"
    )
    return fence(body, "mermaid")


def shorten(text: str, limit: int, what: str = "characters") -> str:
    """Head and tail of `text` within `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    keep = max(limit - 80, 0)
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n... [{cut} {what} left out] ...\n{tail}"


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def close_open_blocks(text: str) -> str:
    """Close a fence or `<details>` that a cut left open, so the rest still renders."""
    open_fence: str | None = None
    for line in text.splitlines():
        m = _FENCE_LINE.match(line)
        if not m:
            continue
        marker = m.group(1)
        if open_fence is None:
            open_fence = marker
        elif marker[0] == open_fence[0] and len(marker) >= len(open_fence) and \
                line.strip() == marker:
            open_fence = None
    out = text
    if open_fence is not None:
        out += "\n" + open_fence
    depth = out.count("<details>") - out.count("</details>")
    out += "\n</details>" * max(depth, 0)
    return out


def cut(text: str, limit: int, note: str) -> str:
    """`text` cut at a line boundary so that it, `note` and any closing markup fit."""
    if len(text) <= limit:
        return text
    budget = max(limit - len(note) - 200, 0)
    head = text[:budget]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    return close_open_blocks(head) + "\n\n" + note + "\n"
