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


def read_layout(lines: list[str]) -> Layout:
    """The code blocks and tables of `lines` (a document's lines, blanked or not)."""
    code: list[str | None] = [None] * len(lines)
    blocks: list[CodeBlock] = []
    tables: list[Table] = []
    try:
        tokens = _parser().parse("\n".join(lines))
    except RecursionError:  # deeply nested quotes or lists: read it all as text
        return Layout(tuple(code))
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type in ("fence", "code_block") and token.map:
            lang = (token.info.strip().split(maxsplit=1) or [""])[0].lower() \
                if token.type == "fence" else INDENTED
            start, end = token.map[0], min(token.map[1], len(lines))
            for k in range(start, end):
                code[k] = lang
            closed = token.type == "code_block" or (end - start > 1 and \
                lines[end - 1].strip(" \t>").startswith(token.markup))
            blocks.append(CodeBlock(start, end, lang, closed))
        elif token.type == "table_open":
            table, i = _table(tokens, i)
            if table is not None:
                tables.append(table)
            continue
        i += 1
    return Layout(tuple(code), tuple(blocks), tuple(tables))


def _table(tokens: list[Token], start: int) -> tuple[Table | None, int]:
    """The table opened at `tokens[start]`, and the index past its close."""
    rows: list[tuple[int, tuple[str, ...]]] = []
    cells: list[str] = []
    line = -1
    i = start + 1
    while i < len(tokens) and tokens[i].type != "table_close":
        token = tokens[i]
        if token.type == "tr_open":
            cells, line = [], token.map[0] if token.map else -1
        elif token.type == "inline":
            cells.append(token.content.strip())
        elif token.type == "tr_close":
            rows.append((line, tuple(cells)))
        i += 1
    if not rows:
        return None, i + 1
    (header_line, header), body = rows[0], rows[1:]
    return Table(header_line, header, tuple(body)), i + 1
