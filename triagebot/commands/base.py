"""The shapes every command grammar shares: positions, results, and one command's spec.

Command modules import only from here, so the registry in `__init__` can import them all
without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from triagebot.frozen import Frozen
from triagebot.overrides import ReproOptions

CommandName = Literal["repro", "help", "cancel", "status", "bisect", "watch", "unwatch",
                      "not-a-regression"]


class Position(Frozen):
    """1-based line and column of a character in the comment body as GitHub stores it."""

    line: int
    column: int


class Command(Frozen):
    """One well-formed command. `text` is its normalised form: equal for equal commands."""

    name: CommandName
    words: tuple[str, ...] = ()
    options: ReproOptions | None = None
    text: str
    position: Position


class CommandError(Frozen):
    """A command the user meant but wrote wrongly; `message` says what to write instead."""

    name: str | None
    message: str
    position: Position


@dataclass(frozen=True)
class Word:
    """One whitespace-separated word after the command word, where it was written."""

    text: str
    position: Position


class Malformed(ValueError):
    """Raised by a grammar for a recognised command with unusable arguments."""

    def __init__(self, message: str, position: Position | None = None) -> None:
        self.position = position
        super().__init__(message)


@dataclass(frozen=True)
class Parsed:
    """What a grammar gives back: the normalised text and, for repro, its options."""

    text: str
    words: tuple[str, ...] = ()
    options: ReproOptions | None = None


@dataclass(frozen=True)
class CommandSpec:
    """One entry of the registry: the command word, its help line and its grammar."""

    name: CommandName
    usage: str  # arguments after the command word, for the help text
    summary: str
    parse: Callable[[Sequence[Word]], Parsed]
    aliases: tuple[str, ...] = ()

    def matches(self, word: str) -> bool:
        low = word.lower()
        return low == self.name or low in self.aliases


def no_arguments(name: CommandName) -> Callable[[Sequence[Word]], Parsed]:
    """The grammar of a command that takes nothing after its word."""

    def parse(words: Sequence[Word]) -> Parsed:
        if words:
            raise Malformed(f"`{name}` takes no arguments, but {words[0].text[:40]!r} "
                            "follows it", words[0].position)
        return Parsed(text=name)

    return parse
