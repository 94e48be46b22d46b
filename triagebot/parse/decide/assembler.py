"""The facts of one report gathered for deciding its fields, with the request being filled."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

from triagebot.parse.common import Fact, Facts
from triagebot.parse.decide.wording import Wording, read_wording
from triagebot.parse.document import Document
from triagebot.parse.runs import RunConfig, spec_config_settings
from triagebot.request_model import Evidence, ReproRequest

_QUOTED_RE = re.compile(r"'([^']{2,120})'|\"([^\"]{2,120})\"")


class Assembler:
    def __init__(self, doc: Document, repo: str | None) -> None:
        self.doc = doc
        self.repo = (repo or "").strip().lower() or None
        self.facts = Facts()
        self.req = ReproRequest()
        self.runs: list[RunConfig] = []
        self.sampling: RunConfig | None = None
        self.env_assignments: list[tuple[str, str, int]] = []
        self.conflicts: dict[str, str] = {}

    @cached_property
    def wording(self) -> Wording:
        """The title and the reporter's prose, apart from what they pasted."""
        return read_wording(self.doc)

    def competing(self, field: str, facts: list[Fact], values: list[Any]) -> None:
        """Record a field stated with different values: it stays null, and the warning
        quotes each reading so the bot can ask the reporter which one ran."""
        seen: list[tuple[Any, Fact]] = []
        for value, fact in zip(values, facts, strict=False):
            if value is not None and value not in [v for v, _ in seen]:
                seen.append((value, fact))
        if len(seen) > 1:
            spans = "; ".join(f"{v!r} at line {f.line}: {f.text.strip()[:80]!r}"
                              for v, f in seen[:4])
            self.conflicts[field] = (f"{field} is stated with {len(seen)} different values "
                                     f"({spans}); left empty for the reporter to confirm")

    # --- evidence -------------------------------------------------------------------

    def cite(self, field: str, facts: list[Fact] | Fact | None) -> None:
        if not facts:
            return
        items = facts if isinstance(facts, list) else [facts]
        out = self.req.evidence.setdefault(field, [])
        for f in items[:5]:
            ev = Evidence(line=f.line, text=f.text, source=f.source)
            if ev not in out:
                out.append(ev)

    def locate(self, field: str, words: list[str]) -> Fact | None:
        """The first line (the title, then the post) holding one of `words`, as a fact
        for `field`: where a value decided from wording came from."""
        lines = [(0, self.doc.title or "", "title"),
                 *((i + 1, text, "prose") for i, text in enumerate(self.doc.body_lines))]
        for word in words:
            low = word.lower().strip()
            if not low:
                continue
            for no, text, kind in lines:
                if low in text.lower():
                    return Fact(field, word, no, text, "prose", kind)
        return None

    def cite_reasons(self, field: str, reasons: list[str]) -> None:
        """Evidence for a value decided from words (the symptom): the line holding the
        words its reasons quote ("slower: 'kills tokens/sec'") or list after a colon
        ("a problem is reported: broken, silently"), else the reason itself."""
        quoted = [a or b for r in reasons for a, b in _QUOTED_RE.findall(r)] or [
            word for r in reasons if ": " in r for word in r.rsplit(": ", 1)[1].split(", ")]
        found = self.locate(field, quoted)
        if found:
            self.cite(field, found)
        elif reasons:
            self.cite(field, Fact(field, reasons[0], 0, reasons[0], "decision"))

    # --- settings from runs -----------------------------------------------------------

    def add_run_facts(self) -> None:
        for run in self.runs + ([self.sampling] if self.sampling else []):
            # Every run's settings under `run:`, the engine's own also under `engine:`.
            prefixes = ("run", "engine") if run.engine_side else ("run",)
            for key, (value, line, text) in [*run.settings.items(), *run.later]:
                for prefix in prefixes:
                    self.facts.add(f"{prefix}:{key}", value, line, text, run.source)
                    if key == "spec_config":
                        for sub, val in spec_config_settings(value).items():
                            self.facts.add(f"{prefix}:{sub}", val, line, text, run.source)

    def values(self, key: str, engine_side_only: bool = False) -> list[Fact]:
        return self.facts.get(f"{'engine' if engine_side_only else 'run'}:{key}")


def single(values: list[Any]) -> Any:
    """The one value stated, or None when none or several different ones were."""
    distinct = []
    for v in values:
        if v is not None and v not in distinct:
            distinct.append(v)
    return distinct[0] if len(distinct) == 1 else None
