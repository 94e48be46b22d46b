"""Known engine log messages, matched line by line against each cell's log.

The catalogue lives in `data/log_signatures.yaml` (package data). Each line of a log has
its engine prefix removed first (vLLM's `LEVEL MM-DD HH:MM:SS [file:line]`, with or
without a `(Process pid=N)` decoration, engines.md §4); lines without that prefix
(tracebacks, SGLang, stderr) are matched as they are. A line is claimed by the first
signature that matches it, so the catalogue lists specific messages before generic ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import Field, field_validator

from triagebot.analyze.findings_models import Severity, SignatureHit
from triagebot.frozen import Frozen

# The tolerant vLLM line prefix (engines.md §4): optional process decoration, level,
# timestamp, [file:line], then the message.
VLLM_PREFIX = re.compile(
    r"^(?:\(\S+ pid=\d+\)\s+)?(DEBUG|INFO|WARNING|ERROR)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+"
    r"\[[^\]]+\]\s+(.*)$"
)
MAX_EVIDENCE = 5
MAX_LINE = 2000
EVIDENCE_CHARS = 300
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Signature(Frozen):
    """One catalogue entry (see the YAML file's header)."""

    id: str = Field(pattern=r"^[a-z0-9_]{1,64}$")
    severity: Severity
    pattern: str
    hint: str
    related: tuple[str, ...] = ()
    unless: str | None = None
    engines: tuple[str, ...] = ()
    # Runner kinds where the engine always prints this line, so it tells nothing there
    # (vLLM's CPU build always falls back from Model Runner V2, for one).
    expected_on: tuple[str, ...] = ()

    @field_validator("pattern", "unless")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a valid regex: {exc}") from None
        return value

    @field_validator("related")
    @classmethod
    def _upstream_refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ref in value:
            if not re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", ref):
                raise ValueError(f"related entry {ref!r} is not owner/repo#number")
        return value

    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)

    def unless_regex(self) -> re.Pattern[str] | None:
        return _compiled(self.unless) if self.unless else None


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def parse_signatures(data: Any) -> tuple[Signature, ...]:
    """Validate a catalogue (the YAML's list of mappings); ids must be unique."""
    if not isinstance(data, list):
        raise ValueError("a signature catalogue is a list of mappings")
    sigs = tuple(Signature.model_validate(item) for item in data)
    ids = [s.id for s in sigs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate signature ids: {', '.join(dupes)}")
    return sigs


@cache
def load_signatures() -> tuple[Signature, ...]:
    """The packaged catalogue, parsed once."""
    text = (
        resources.files("triagebot.analyze")
        .joinpath("data", "log_signatures.yaml")
        .read_text(encoding="utf-8")
    )
    return parse_signatures(yaml.safe_load(text))


def message_of(line: str) -> str:
    """The message part of a log line: the vLLM prefix removed when there is one."""
    m = VLLM_PREFIX.match(line)
    return m.group(2) if m else line


def _lines(text: str) -> list[str]:
    # Colour codes only appear on a TTY, but a reporter may paste them; lines are capped
    # so that no regex ever sees unbounded input.
    return [_ANSI.sub("", ln)[:MAX_LINE].rstrip() for ln in text.splitlines()]


def match_log(
    text: str,
    signatures: Sequence[Signature] | None = None,
    *,
    cell_id: str = "",
    engine: str | None = None,
    runner: str | None = None,
    max_evidence: int = MAX_EVIDENCE,
) -> list[SignatureHit]:
    """Signatures found in `text`, in catalogue order, each with up to `max_evidence`
    matching lines (cut to 300 characters) and the count of all matching lines. A line a
    signature expects on `runner` is claimed by it but not reported."""
    sigs = [
        s
        for s in (load_signatures() if signatures is None else signatures)
        if engine is None or not s.engines or engine in s.engines
    ]
    lines = _lines(text)
    found: dict[str, list[str]] = {}
    for line in lines:
        msg = message_of(line)
        for sig in sigs:
            if sig.regex().search(msg):
                found.setdefault(sig.id, []).append(line.strip())
                break
    hits: list[SignatureHit] = []
    for sig in sigs:
        matched = found.get(sig.id)
        if not matched or _vetoed(sig, lines) or (runner is not None
                                                     and runner in sig.expected_on):
            continue
        hits.append(
            SignatureHit(
                id=sig.id,
                severity=sig.severity,
                hint=sig.hint,
                related=list(sig.related),
                cell_id=cell_id,
                count=len(matched),
                evidence=[ln[:EVIDENCE_CHARS] for ln in matched[:max_evidence]],
            )
        )
    return hits


def _vetoed(sig: Signature, lines: Iterable[str]) -> bool:
    veto = sig.unless_regex()
    return veto is not None and any(veto.search(message_of(ln)) for ln in lines)
