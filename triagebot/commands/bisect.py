"""`@triagebot bisect [good=V] [bad=V] [regress=success] [key=value ...]`.

V is a release (`0.17.0`), a nightly (`0.22.2.dev20260611`) or a commit SHA. good and bad
may be left out where the report states a working and a broken version; the plan then
says which words it took them from. `regress=success` searches where it started working
(the older point is the broken one). Every other key is a `repro` override
(`triagebot.overrides`), so `triagebot bisect FILE ...` and a comment mean the same thing,
and the normalised text gives equal commands the same job id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from triagebot.commands.base import CommandSpec, Malformed, Parsed, Position, Word
from triagebot.overrides import OptionsError, ReproOptions, parse_overrides

BISECT_KEYS = ("good", "bad", "regress")
# A release, a nightly or a commit SHA: nothing else reaches a plan or a shell.
_POINT = re.compile(r"^(?:v?\d{1,6}(?:\.\d{1,6}){0,4}(?:\.?(?:post|dev)\d{1,14}){0,2}"
                    r"|[0-9a-f]{7,40})$")
Direction = Literal["regress", "success"]
_REGRESS: dict[str, Direction] = {"success": "success", "error": "regress",
                                  "regress": "regress", "failure": "regress"}

KEY_HELP: dict[str, str] = {
    "good": "a release, nightly or commit SHA where the report's behaviour is good",
    "bad": "a release, nightly or commit SHA where it is bad",
    "regress": "error (default: find where it broke) or success (find where it "
               "started working)",
}


class BisectWordsError(ValueError):
    def __init__(self, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


@dataclass(frozen=True)
class BisectArgs:
    good: str | None
    bad: str | None
    direction: Direction
    options: ReproOptions
    overrides: tuple[str, ...]  # the repro words, as given

    def as_args(self) -> list[str]:
        words = [f"good={self.good}"] if self.good else []
        words += [f"bad={self.bad}"] if self.bad else []
        words += ["regress=success"] if self.direction == "success" else []
        return [*words, *self.options.as_args()]


def _key(word: str) -> str:
    return word.partition("=")[0].strip().lower().replace("-", "_")


def parse_words(words: Iterable[str]) -> BisectArgs:
    """Split bisect's own keys from the repro overrides; a clear error for bad values."""
    found: dict[str, str] = {}
    direction: Direction = "regress"
    rest: list[str] = []
    for word in words:
        key, sep, raw = word.partition("=")
        key = _key(word)
        if key not in BISECT_KEYS:
            rest.append(word)
            continue
        raw = raw.strip()
        if key in found:
            raise BisectWordsError(f"{key} is given twice", key=key)
        if not sep or not raw:
            raise BisectWordsError(f"{key}= needs a value", key=key)
        if key == "regress":
            if raw.lower() not in _REGRESS:
                raise BisectWordsError(f"regress={raw[:20]!r}: use error or success", key=key)
            found[key] = raw
            direction = _REGRESS[raw.lower()]
            continue
        if not _POINT.match(raw.lower()):
            raise BisectWordsError(f"{key}={raw[:40]!r} is not a release (0.17.1), a "
                                   "nightly (0.22.2.dev20260611) or a commit SHA", key=key)
        found[key] = raw.lower().removeprefix("v")
    try:
        options = parse_overrides(rest)
    except OptionsError as exc:
        raise BisectWordsError(str(exc), key=exc.key) from None
    if options.version is not None:
        raise BisectWordsError("version= makes no sense in a bisect: every step picks its "
                               "own; use good= and bad=", key="version")
    return BisectArgs(good=found.get("good"), bad=found.get("bad"),
                      direction=direction, options=options,
                      overrides=tuple(rest))


def _culprit(words: Sequence[Word], key: str | None) -> Position | None:
    if key:
        same = [w for w in words if _key(w.text) == key]
        if same:
            return same[-1].position
    return words[0].position if words else None


def parse(words: Sequence[Word]) -> Parsed:
    try:
        args = parse_words(w.text for w in words)
    except BisectWordsError as exc:
        raise Malformed(f"`bisect`: {exc}", _culprit(words, exc.key)) from None
    text = " ".join(["bisect", *args.as_args()])
    return Parsed(text=text, words=tuple(w.text for w in words), options=args.options)


SPEC = CommandSpec(
    name="bisect",
    usage="[good=V] [bad=V] [regress=success] [key=value ...]",
    summary="Find the first release, nightly or commit where the report's behaviour "
            "changed (good=/bad= may be any of the three; left out, they come from the "
            "versions the report names), one repro per step, and post the range, the "
            "steps and ranked candidates.",
    parse=parse,
)
