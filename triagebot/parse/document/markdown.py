"""Where a report's code and tables are, read from markdown-it-py's block tokens.

Which lines are code decides what every later stage may read as a statement: a fenced
block's language tells Python from shell from a log, and a speed word inside pasted
output is not the reporter's question. markdown-it finds fences the way GitHub renders
them (inside lists and quotes, `~~~` or backticks, an unclosed fence running to the
end), and GFM pipe tables with their cells.

Only block rules run: the inline pass is most of markdown-it's cost and its tokens
carry no line numbers, which evidence needs. Two things stay with our own readers and
say so where they live: tables pasted from spreadsheets (tab separated) or typed
without a `|---|` rule are not markdown tables, and a scraped page has lost its fences
(`parse.python` and `parse.commands` find code there by its shape).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

INDENTED = "indented"  # the language given to an indented code block
# A fence language that holds Python.
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "python2", "pycon", "ipython",
                              "ipython3"})


@dataclass(frozen=True)
class Table:
    """A GFM pipe table: its header cells and each body row with its 0-based line."""

    header_line: int
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]


@dataclass(frozen=True)
class CodeBlock:
    """Lines `start` to `end` (0-based, end excluded, fence lines included) in one code
    block; `closed` is False for a fence left open to the end of the document."""

    start: int
    end: int
    language: str
    closed: bool = True


@dataclass(frozen=True)
class Layout:
    """Per line (0-based), the code block it is in: the fence's language (`""` when the
    fence names none, `INDENTED` for indented code), or None for text. Fence lines
    themselves count as code."""

    code: tuple[str | None, ...]
    blocks: tuple[CodeBlock, ...] = ()
    tables: tuple[Table, ...] = ()

    def language(self, index: int) -> str | None:
        return self.code[index] if 0 <= index < len(self.code) else None

    def is_text(self, index: int) -> bool:
        return self.language(index) is None

    def in_fence(self, index: int) -> bool:
        lang = self.language(index)
        return lang is not None and lang != INDENTED


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("zero").enable(["fence", "code", "table", "blockquote", "list"])
    md.disable("inline", ignoreInvalid=True)
    return md


# A fence left open runs to the end of the document, as GitHub renders it; but a report
# cut short (a search result's excerpt) or sections pasted out of order leave a fence open
# above the reporter's next section. Its `## Heading` ends the code.
_SECTION_RE = re.compile(r"^ {0,3}#{2,6}\s+\S")
_MAX_REOPENED = 20  # sections read again after an open fence; past this, code to the end


def read_layout(lines: list[str]) -> Layout:
    """The code blocks and tables of `lines` (a document's lines, blanked or not)."""
    code: list[str | None] = [None] * len(lines)
    blocks: list[CodeBlock] = []
    tables: list[Table] = []
    offset: int | None = 0
    for _ in range(_MAX_REOPENED):
        if offset is None or offset >= len(lines):
            break
        offset = _read(lines, offset, code, blocks, tables)
    return Layout(tuple(code), tuple(blocks), tuple(tables))


def _read(lines: list[str], offset: int, code: list[str | None], blocks: list[CodeBlock],
          tables: list[Table]) -> int | None:
    """Read `lines[offset:]` into `code`, `blocks` and `tables`; the line to read on from
    when an open fence stops at a section heading, else None."""
    try:
        tokens = _parser().parse("\n".join(lines[offset:]))
    except RecursionError:  # deeply nested quotes or lists: read the rest as text
        return None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type in ("fence", "code_block") and token.map:
            lang = (token.info.strip().split(maxsplit=1) or [""])[0].lower() \
                if token.type == "fence" else INDENTED
            start, end = offset + token.map[0], min(offset + token.map[1], len(lines))
            closed = token.type == "code_block" or (end - start > 1 and \
                lines[end - 1].strip(" \t>").startswith(token.markup))
            section = None if closed else next(
                (k for k in range(start + 1, end) if _SECTION_RE.match(lines[k])), None)
            for k in range(start, section or end):
                code[k] = lang
            blocks.append(CodeBlock(start, section or end, lang, closed))
            if section is not None:
                return section
        elif token.type == "table_open":
            table, i = _table(tokens, i, offset)
            if table is not None:
                tables.append(table)
            continue
        i += 1
    return None


def _table(tokens: list[Token], start: int, offset: int) -> tuple[Table | None, int]:
    """The table opened at `tokens[start]`, and the index past its close."""
    rows: list[tuple[int, tuple[str, ...]]] = []
    cells: list[str] = []
    line = -1
    i = start + 1
    while i < len(tokens) and tokens[i].type != "table_close":
        token = tokens[i]
        if token.type == "tr_open":
            cells, line = [], offset + token.map[0] if token.map else -1
        elif token.type == "inline":
            cells.append(token.content.strip())
        elif token.type == "tr_close":
            rows.append((line, tuple(cells)))
        i += 1
    if not rows:
        return None, i + 1
    (header_line, header), body = rows[0], rows[1:]
    return Table(header_line, header, tuple(body)), i + 1
