"""The first stage: raw input → a `Document` of clean lines, with the lines that are not
the reporter's own post (site chrome, other people's comments, template text) marked."""

from __future__ import annotations

from triagebot.parse.document.markdown import (
    INDENTED,
    PYTHON_LANGUAGES,
    Layout,
    Table,
    read_layout,
)
from triagebot.parse.document.page import MAX_CHARS, MAX_LINE, Document, Zone, build, decode

__all__ = ["INDENTED", "MAX_CHARS", "MAX_LINE", "PYTHON_LANGUAGES", "Document", "Layout",
           "Table", "Zone", "build", "decode", "read_layout"]
