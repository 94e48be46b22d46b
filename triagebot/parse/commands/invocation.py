"""What the command-line reader produces: `Invocation`s of programs with their `Arg`s, and
the caps that keep a hostile or enormous paste cheap to read."""

from __future__ import annotations

from dataclasses import dataclass

# Caps that keep a hostile or enormous paste cheap to read.
MAX_VALUE_CHARS = 200_000  # one flag value is cut at this length
MAX_JSON_CHARS = 1_000_000  # parse_json_value gives up above this
MAX_JSON_DEPTH = 64  # ... or above this nesting
MAX_JOIN_LINES = 400  # physical lines joined into one command
MAX_LIST_LINES = 400  # lines read for one YAML / JSON argument list
MAX_WORDS = 5_000  # words read from one command; real ones have a few hundred
TEXT_CHARS = 2000  # Invocation.text is cut at this length
HEAD_CHARS = 400  # how much of a line is looked at to decide if it starts a command
BRACKET_STACK_CAP = 10_000
# The program of flags quoted without one (`--speculative-config '{...}'` in a sentence).
FRAGMENT = "(flags)"


@dataclass(frozen=True)
class Arg:
    """One argument: `--flag value`, `--flag=value`, a boolean `--flag`, or a positional."""

    flag: str | None
    value: str | None
    line: int


@dataclass(frozen=True)
class Invocation:
    """One command as the reporter ran it.

    `program` is normalised (`vllm serve`, `sglang.launch_server`, `docker run`, ...).
    For `docker run`, `inner` names the program the image runs and `args` are that
    program's arguments (docker's own options are dropped, its `-e` go to `env`).
    `source` says where it was read from: `shell`, `list` (YAML/JSON argument list)
    or `inline` (a backtick span in prose).
    """

    program: str
    line: int
    text: str
    args: tuple[Arg, ...]
    env: dict[str, str]
    inner: str | None = None
    image: str | None = None
    source: str = "shell"

    @property
    def engine_program(self) -> str:
        """The program that does the work: the image's program for `docker run`."""
        return self.inner or self.program

    def values(self, *flags: str) -> list[str | None]:
        """Values of every occurrence of any of `flags`, in order."""
        return [a.value for a in self.args if a.flag in flags]

    def value(self, *flags: str) -> str | None:
        """The last value given for any of `flags` (the one argparse keeps)."""
        found = self.values(*flags)
        return found[-1] if found else None

    def has(self, *flags: str) -> bool:
        return any(a.flag in flags for a in self.args)

    def positionals(self) -> list[str]:
        return [a.value for a in self.args if a.flag is None and a.value is not None]
