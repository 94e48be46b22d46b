"""The common currency of the extractors: a value for a field, with where it came from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# How much a source is believed when fields disagree. Configuration the reporter ran beats
# what their environment dump shows, which beats what their prose says.
WEIGHT = {"config": 5, "env": 4, "title": 3, "prose": 2, "hint": 1}


@dataclass(frozen=True)
class Fact:
    field: str
    value: Any
    line: int  # 1-based line of the input; 0 for the title
    text: str
    source: str  # which extractor: cmdline, python, envdump, results, prose, title, repo
    kind: str = "config"  # a key of WEIGHT

    @property
    def weight(self) -> int:
        return WEIGHT[self.kind]


class Facts:
    """All facts found, grouped by field, in the order they were found."""

    def __init__(self) -> None:
        self._by_field: dict[str, list[Fact]] = defaultdict(list)

    def add(self, field: str, value: Any, line: int, text: str, source: str,
            kind: str = "config") -> None:
        if value is None or value == "" or value == []:
            return
        self._by_field[field].append(Fact(field, value, line, text.strip()[:300], source, kind))

    def extend(self, facts: Iterable[Fact]) -> None:
        for f in facts:
            self._by_field[f.field].append(f)

    def get(self, field: str) -> list[Fact]:
        return self._by_field.get(field, [])

    def strongest(self, field: str) -> list[Fact]:
        """The facts of the highest weight present for a field."""
        facts = self.get(field)
        if not facts:
            return []
        top = max(f.weight for f in facts)
        return [f for f in facts if f.weight == top]

    def values(self, field: str) -> list[Any]:
        seen: list[Any] = []
        for f in self.get(field):
            if f.value not in seen:
                seen.append(f.value)
        return seen

    def fields(self) -> list[str]:
        return list(self._by_field)
