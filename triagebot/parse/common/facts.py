"""The common currency of the extractors: a value for a field, with where it came from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fact:
    field: str
    value: Any
    line: int  # 1-based line of the input; 0 for the title
    text: str
    source: str  # which extractor: cmdline, python, envdump, results, prose, title, repo
    # config (a flag or kwarg the reporter ran), env (their environment dump), title, prose,
    # or hint (the repository). `decide` prefers them in that order when fields disagree.
    kind: str = "config"


class Facts:
    """All facts found, grouped by field, in the order they were found."""

    def __init__(self) -> None:
        self._by_field: dict[str, list[Fact]] = defaultdict(list)

    def add(self, field: str, value: Any, line: int, text: str, source: str,
            kind: str = "config") -> None:
        if value is None or value == "" or value == []:
            return
        self._by_field[field].append(Fact(field, value, line, text.strip()[:300], source, kind))

    def get(self, field: str) -> list[Fact]:
        return self._by_field.get(field, [])
