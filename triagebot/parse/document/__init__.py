"""The first stage: raw input → a `Document` of clean lines, with the lines that are not
the reporter's own post (site chrome, other people's comments, template text) marked."""

from __future__ import annotations

from triagebot.parse.document.page import MAX_CHARS, MAX_LINE, Document, Zone, build, decode

__all__ = ["MAX_CHARS", "MAX_LINE", "Document", "Zone", "build", "decode"]
