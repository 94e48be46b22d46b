"""The lines prose extractors read (the title first, as line 0), and the rows of tables.

Table rows are split here rather than taken from the document's markdown tables: a table
pasted from a spreadsheet is tab separated, and one typed without its `|---|` rule (or
with a header row of a different width) is no markdown table, yet both state settings
per row as plainly as a GFM table does.
"""

from __future__ import annotations

from collections.abc import Iterator

from triagebot.parse.document import Layout

Line = tuple[int, str, str]  # (line number, text, kind: "title" | "prose" | "code")


def iter_lines(title: str | None, body: list[str], layout: Layout | None = None) -> Iterator[Line]:
    """The title (line 0), then each non-empty line; a line inside a code block is of kind
    "code" when `layout` says where code is."""
    if title:
        yield (0, title, "title")
    for i, text in enumerate(body, start=1):
        if text:
            yield (i, text, "code" if layout is not None and not layout.is_text(i - 1)
                   else "prose")


def table_rows(lines: list[Line]) -> Iterator[tuple[int, str, str, list[str], list[str]]]:
    """(line, text, kind, header cells, row cells) for every row of every table, markdown
    or pasted from a spreadsheet, the header being the table's first line."""
    header: list[str] | None = None
    sep = "|"
    for no, text, kind in lines:
        if kind == "title":
            continue
        cells = cells_of(text)
        if cells is None:
            header = None
        elif header is None:
            header, sep = cells, ("|" if "|" in text else "\t")
        elif cells and sep in text:
            yield no, text, kind, header, cells


def cells_of(text: str) -> list[str] | None:
    if "|" in text:
        stripped = text.strip().strip("|")
        if set(stripped.replace("|", "").strip()) <= set("-: "):
            return []  # the |---|---| rule keeps the table open
        return [c.strip() for c in stripped.split("|")]
    if "\t" in text:
        return [c.strip() for c in text.split("\t")]
    return None
