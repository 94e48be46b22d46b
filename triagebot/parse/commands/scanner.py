"""Command lines pasted into issue text, read into programs, flags and environment.

Reports paste commands in every shape: shell lines with `\\`, `^` or backtick
continuations, prompts and quote markers in front, JSON configs with broken quoting,
docker runs, and Kubernetes / docker-compose argument lists. This module reads them
faithfully into `Invocation`s; deciding what a flag *means* is the caller's job.

Issue text is hostile: nothing here executes anything, every scan is linear in the
input, and no input makes these functions raise.

The reading is split by what it reads: `lines` (prompts, continuations, YAML), `words`
(words and quotes), `programs` (which program and its flags), `jsonish` (config
values), and the scanner's layers `env`, `shell` and `lists`,
which `Scanner` below drives in one pass.
"""

from __future__ import annotations

import contextlib

from triagebot.parse.commands.env import ScanResult
from triagebot.parse.commands.invocation import HEAD_CHARS, Arg, Invocation
from triagebot.parse.commands.jsonish import parse_json_value
from triagebot.parse.commands.lines import (
    BULLET,
    CMD_HEAD,
    ENV_KEY,
    FENCE,
    LIST_KEY,
    strip_prefixes,
)
from triagebot.parse.commands.lists import ListReader
from triagebot.parse.document import PYTHON_LANGUAGES, Layout, read_layout

__all__ = ["Arg", "Invocation", "ScanResult", "find_env_assignments", "find_invocations",
           "parse_json_value", "read_commands"]


def read_commands(lines: list[str], layout: Layout | None = None) -> ScanResult:
    """Every command invocation in the document, in line order, and every environment
    variable it sets (see `find_env_assignments`), in one pass. `layout` says where the
    fenced code is (read from `lines` when not given)."""
    lines = [x if isinstance(x, str) else "" for x in (lines or [])]
    return Scanner(lines, layout or read_layout(lines)).run()


def find_invocations(lines: list[str], layout: Layout | None = None) -> list[Invocation]:
    """Every command invocation in the document, in line order."""
    return read_commands(lines, layout).invocations


def find_env_assignments(lines: list[str],
                         layout: Layout | None = None) -> list[tuple[str, str, int]]:
    """(NAME, value, line) for environment variables the document sets.

    Sources: `export X=1`, `X=1 cmd ...` prefixes, `docker run -e X=1`, compose/k8s
    `env:` / `environment:` blocks, Dockerfile `ENV`, Windows `set`, PowerShell `$env:`.
    Plain shell variables (`X=1` on a line of its own) are not environment variables
    and are not listed; they are still used to resolve `$X` in commands.
    """
    return read_commands(lines, layout).env


class Scanner(ListReader):
    """One linear pass over the document collecting commands, lists and env settings."""

    def run(self) -> ScanResult:
        with contextlib.suppress(RecursionError):  # defensive: never take the parser down
            self._run()
        self.out.env.sort(key=lambda t: t[2])
        return self.out

    def _run(self) -> None:
        i, n = 0, len(self.lines)
        while i < n:
            self.in_fence = self.layout.in_fence(i)
            self.py_fence = self.layout.language(i) in PYTHON_LANGUAGES
            if self.in_fence and FENCE.match(self.lines[i]):
                i += 1  # the fence's own line
                continue
            if i < self.skip_until:
                i += 1
                continue
            i = self._line(i)

    def _line(self, i: int) -> int:
        """Handle the line at index i; return the index of the next unread line."""
        raw = self.lines[i]
        if not raw.strip():
            return i + 1
        if self.py_fence:
            self._inline(i, raw)
            return i + 1
        body, prompt = strip_prefixes(raw)
        head = body[:HEAD_CHARS]
        km = LIST_KEY.match(head)
        if km:
            nxt = self._list_key(i, body, km)
            if nxt is not None:
                return nxt
        em = ENV_KEY.match(head)
        if em:
            return self._env_block(i, body, em)
        if self._env_line(i, head, body):
            return i + 1
        cm = CMD_HEAD.match(head)
        if cm is None or not self._known_word(cm.group(1)):
            bm = BULLET.match(head)  # "1. vllm serve ..." / "- python -m ..."
            bullet = CMD_HEAD.match(head, bm.end()) if bm else None
            if bm and bullet and self._known_word(bullet.group(1)):
                cm, body, head = bullet, body[bm.end() :], head[bm.end() :]
        prose_code = "`" in head and not (self.in_fence or prompt)  # `cmd` quoted in prose
        if cm is not None and not prose_code and self._plausible(cm.group(1), prompt):
            nxt = self._command(i, body, prompt)
            if nxt is not None:
                return nxt
        if raw.count("`") % 2 and i + 1 < len(self.lines) and "`" in self.lines[i + 1] \
                and not self.in_fence:
            # A code span that wraps onto the next line is one span, as markdown reads it.
            self._inline(i, f"{raw} {self.lines[i + 1]}")
            return i + 2
        self._inline(i, raw)
        return i + 1
