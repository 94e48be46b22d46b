"""The `@triagebot ...` comment grammar: comment text in, typed commands or user errors out.

A command is a mention of the bot in prose (see `ignore` for what is not prose), followed on
the same line by a command word and its arguments:

    @triagebot repro engine=vllm k=1,2
    @triagebot help

The mention must stand alone (`x@triagebot`, `@triagebot-dev` and the bot's own login
`@triagebot[bot]` are not mentions), open its line (after indentation, list or heading
markers only) and be followed by whitespace, optionally after a colon. Anything else is
people talking about the bot: "thanks @triagebot for this", and just as much "No need to
@triagebot cancel", which must not cancel anything. An unknown word after a mention that
opens its line is an error that lists the commands.

Each command lives in its own module and is listed once in `COMMANDS`; the help text is
built from that table. Nothing here raises on any input: what cannot be read is ignored,
what is meant but wrong becomes a `CommandError` with its position.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache

from triagebot.commands import bisect as bisect_command
from triagebot.commands import cancel, not_regression, repro, status, watch
from triagebot.commands import help as help_command
from triagebot.commands.base import (
    Command,
    CommandError,
    CommandSpec,
    Malformed,
    Parsed,
    Position,
    Word,
)
from triagebot.commands.ignore import ignored_mask, line_spans
from triagebot.overrides import KEYS

__all__ = [
    "COMMANDS",
    "MAX_BODY_CHARS",
    "MAX_COMMANDS",
    "Command",
    "CommandError",
    "Position",
    "help_text",
    "new_commands",
    "parse_comment",
]

COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec for spec in (repro.SPEC, bisect_command.SPEC, help_command.SPEC,
                                 cancel.SPEC, status.SPEC, watch.SPEC, watch.UNWATCH,
                                 not_regression.SPEC)
}

MAX_COMMANDS = 5
MAX_BODY_CHARS = 65_536  # GitHub's own cap on a comment body

# Invisible characters that change nothing a reader sees: dropped before reading, so a
# zero-width space before `@` or a word joiner after a command word does not hide it.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
# Direction controls can make what GitHub shows differ from what would be read: a command
# line that holds one is not read, and the reply says why.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_WORD = re.compile(r"\S+")
# Whitespace, then the command word; sentence punctuation may follow it: "@triagebot help."
_HEAD = re.compile(r"\s+([A-Za-z][A-Za-z0-9_-]{0,39})[.!?]*(?!\S)")
# What may stand before a mention that addresses the bot: indentation, list and heading marks.
# (Direction controls count as indentation here, so the line is answered, not skipped.)
_LINE_OPENING = re.compile(
    r"[ \t\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*"
    r"(?:(?:[-*+]|\d{1,9}[.)]|#{1,6})[ \t]+[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*)*")


@lru_cache(maxsize=8)
def _mention(bot: str) -> re.Pattern[str]:
    login = re.escape(bot.removeprefix("@").removesuffix("[bot]"))
    return re.compile(rf"(?<![\w/])@{login}(?![A-Za-z0-9_-])(?!\[bot\])", re.I)


def _lookup(word: str) -> CommandSpec | None:
    return next((spec for spec in COMMANDS.values() if spec.matches(word)), None)


class _Body:
    """The scanned text with its mask and line starts, to turn offsets into positions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.mask = ignored_mask(text)
        self.lines = line_spans(text)
        self.starts = [start for start, _ in self.lines]
        self._openings: dict[int, int] = {}

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def position(self, offset: int) -> Position:
        index = self.line_of(offset)
        return Position(line=index + 1, column=offset - self.starts[index] + 1)

    def prose(self, start: int, end: int) -> bool:
        return self.mask.find(1, start, end) < 0

    def opens_line(self, offset: int) -> bool:
        """Whether only indentation and list or heading marks stand before `offset`."""
        index = self.line_of(offset)
        start, end = self.lines[index]
        if index not in self._openings:
            # Once per line, not per mention, so a long line of mentions stays linear.
            opening = _LINE_OPENING.match(self.text, start, end)
            self._openings[index] = opening.end() if opening else start
        return self._openings[index] == offset and self.prose(start, offset)


def _read(body: _Body, at: int, after: int) -> Command | CommandError | None:
    """The command of the mention at `at..after`, or None when it is not one."""
    text = body.text
    if not body.opens_line(at):
        return None  # a mention in mid-sentence is talk about the bot, never a command
    line_start, line_end = body.lines[body.line_of(at)]
    control = _BIDI.search(text, line_start, line_end)
    if control is not None:
        return CommandError(
            name=None, position=body.position(control.start()),
            message=f"this line was not read as a command: it holds an invisible direction "
                    f"control (U+{ord(control.group()):04X}), which can make what GitHub "
                    "shows differ from what would run; write the command again without it")
    pos = after + 1 if text.startswith(":", after) else after
    head = _HEAD.match(text, pos, line_end)
    if head is None or not body.prose(pos, head.end()):
        return None
    word_at = body.position(head.start(1))
    spec = _lookup(head.group(1))
    if spec is None:
        return CommandError(
            name=None, position=word_at,
            message=f"unknown command {head.group(1)!r}; the commands are "
                    f"{', '.join(COMMANDS)}")
    # Only a known command reads the rest of its line, so a long line of mentions stays linear.
    cut = body.mask.find(1, head.end(), line_end)
    if cut >= 0:
        return CommandError(
            name=spec.name, position=body.position(cut),
            message=f"`{spec.name}`: write its arguments as plain words on the command's "
                    "line; code, links, URLs and HTML there are not read")
    words = [Word(m.group(), body.position(m.start()))
             for m in _WORD.finditer(text, head.end(), line_end)]
    try:
        parsed: Parsed = spec.parse(words)
    except Malformed as exc:
        return CommandError(name=spec.name, message=str(exc), position=exc.position or word_at)
    return Command(name=spec.name, words=parsed.words, options=parsed.options,
                   text=parsed.text, position=body.position(at))


def _scan(body: _Body, bot: str) -> list[Command | CommandError]:
    items: list[Command | CommandError] = []
    seen: set[str] = set()
    for m in _mention(bot).finditer(body.text):
        if not body.prose(m.start(), m.end()):
            continue
        item = _read(body, m.start(), m.end())
        if item is None:
            continue
        if isinstance(item, Command):
            if item.text in seen:
                continue  # the same command twice in one comment runs once
            seen.add(item.text)
        if len(items) == MAX_COMMANDS:
            return [CommandError(
                name=None, position=item.position,
                message=f"a comment may hold at most {MAX_COMMANDS} commands, so none of "
                        "these were run; split them over several comments")]
        items.append(item)
    return items


def parse_comment(body: str, bot: str = "triagebot") -> list[Command | CommandError]:
    """Every command and command error in `body`, in order; [] when it has none."""
    text = body[:MAX_BODY_CHARS].translate(_INVISIBLE)
    if _mention(bot).search(text) is None:
        return []  # most comments never name the bot: skip the markdown scan
    return _scan(_Body(text), bot)


def new_commands(body: str, previous: str | None,
                 bot: str = "triagebot") -> list[Command | CommandError]:
    """For an edited comment: the items of `body` that `previous` did not already hold.

    A command is old when a command with the same normalised text was in `previous`, so
    re-spacing or reordering its words changes nothing; an error is old when its line was.
    """
    items = parse_comment(body, bot)
    if previous is None or not items:
        return items
    old_texts = {item.text for item in parse_comment(previous, bot)
                 if isinstance(item, Command)}
    old_lines = set(_stripped_lines(previous))
    lines = _stripped_lines(body)
    return [item for item in items
            if (item.text not in old_texts if isinstance(item, Command)
                else lines[item.position.line - 1] not in old_lines)]


def _stripped_lines(body: str) -> list[str]:
    text = body[:MAX_BODY_CHARS].translate(_INVISIBLE)
    return [text[start:end].strip() for start, end in line_spans(text)]


def help_text(bot: str = "triagebot", *, gpu_kinds: Sequence[str] = (),
              default_gpu: str | None = None) -> str:
    """The reply to `help`, in markdown, built from the registry and the options' keys;
    `gpu` lists the runner kinds this deployment serves, where they are given."""
    mention = f"@{bot.removeprefix('@').removesuffix('[bot]')}"
    rows = [f"| `{_usage(mention, spec)}` | {spec.summary} |" for spec in COMMANDS.values()]
    key_help = dict(repro.KEY_HELP)
    if gpu_kinds:
        kinds = ", ".join(f"`{kind}`" for kind in gpu_kinds)
        default = f" (default `{default_gpu}`)" if default_gpu else ""
        key_help["gpu"] = f"runner kind to run on; here: {kinds}{default}"
    keys = [f"| `{key}` | {key_help.get(key, '')} |" for key in KEYS]
    return "\n".join([
        f"**{mention} commands.** Write one at the start of a line, outside code, quotes "
        f"and links; at most {MAX_COMMANDS} per comment.",
        "",
        "| command | what it does |",
        "| --- | --- |",
        *rows,
        "",
        "`repro` takes `key=value` words, each key at most once; lists are comma-separated, "
        "as in `spec=mtp:1,none`. Keys left out come from the report and the repo's "
        "`.github/triagebot.toml`.",
        "",
        "| key | what it sets |",
        "| --- | --- |",
        *keys,
        "",
        *RULES,
        "",
    ])


# How comments are read, in plain words; part of the help.
RULES = (
    "**How comments are read.**",
    "- `help` and `status` answer people with triage access or more; `repro`, `bisect` "
    "and `cancel` need write access (or a listing in `.github/triagebot.toml`). Anyone "
    "else gets one short answer per thread and day at most (or a reaction, or nothing, "
    "as the repository's `[access] strangers` says), and answers to them are capped per "
    "thread and per person.",
    "- The same `help` or `status` answer is not posted twice on a thread within a day: "
    "a repeat gets a 👀 reaction.",
    "- Several commands in one comment run in the order written, except `cancel`, which "
    "acts first, on the jobs queued or running before the comment: `cancel` and `repro` "
    "together restart a reproduction. The reply says what was cancelled.",
    "- Editing a comment runs only the commands the edit added. An edit that changes a "
    "`repro` or `bisect` replaces the job that comment started: a queued or running one "
    "is cancelled and the edited command runs.",
    "- Deleting a comment withdraws its commands: a job it started is cancelled, and its "
    "comment says why.",
    "- Invisible characters (zero-width spaces, word joiners) are ignored. A command line "
    "that holds a direction control (such as a right-to-left override) is not run, since "
    "what GitHub shows could differ from what would run; the reply says so.",
)


def _usage(mention: str, spec: CommandSpec) -> str:
    return " ".join(part for part in (mention, spec.name, spec.usage) if part)
