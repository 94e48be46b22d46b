"""Shell words: a command split into words, operators and redirections.

`split_words` lets the standard library's `shlex` apply the POSIX quoting rules to a
command on one line that needs nothing else: an inline command in prose, a compose
`command:` string, the script of `bash -c`. `tokenize`, our own reader, stays for what
shlex cannot do: a command continued over several lines, where each word's offset tells
which line it came from (the evidence for every setting); `$VAR`, `${VAR:-3}` and
`${VAR:=3}` expanded from values the report set earlier (shlex leaves `$` alone); a JSON
config pasted with broken quoting (`'{"method": "mtp"}` with no closing quote, which
shlex refuses); and a bound on the work a hostile paste can cause, since shlex reads
character by character in Python with no limit.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from triagebot.parse.commands.invocation import BRACKET_STACK_CAP, MAX_VALUE_CHARS, MAX_WORDS
from triagebot.parse.common import brackets

_STOP = frozenset(" \t\r\n|&;<>")
_PLAIN = re.compile(r"[^\s|&;<>'\"\\$\[{]+")
_VAR = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?:(:?[-=+?])([^}]*))?\}|([A-Za-z_]\w*))")
_REDIR = re.compile(r"\d*(?:&>>?|>>?|<<?)(&\d*-?)?")
_OPS = ("&&", "||", "|&", "|", ";", "&")
ASSIGN = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


@dataclass
class Word:
    text: str
    pos: int
    kind: str = "word"  # "word" | "op" | "redir"


def _expand_var(m: re.Match[str], env: Mapping[str, str], depth: int = 0) -> str:
    """`$X`, `${X}`, `${X:-d}`, `${X:=d}`: known value, else the default, else as written."""
    name = m.group(1) or m.group(4)
    op, default = m.group(2), m.group(3)
    if name in env and not (op and op.startswith(":") and env[name] == ""):
        if op in (":+", "+"):
            return default or ""
        return env[name]
    if op in (":-", "-", ":=", "="):
        return expand_plain(default or "", env, depth + 1)
    return m.group(0)


def expand_plain(s: str, env: Mapping[str, str], depth: int = 0) -> str:
    """Expand variables in text that is not shell-quoted (YAML items, defaults)."""
    if "$" not in s or depth > 3:
        return s
    return _VAR.sub(lambda m: _expand_var(m, env, depth), s)


def match_brackets(s: str, i: int, strings: bool = True, budget: list[int] | None = None) -> int:
    """Index just past the bracket that closes the one at `s[i]`, or -1.

    JSON strings are skipped when `strings` is set so that a `}` inside a value does
    not end the object early.
    """
    if budget is not None and budget[0] <= 0:
        return -1  # this command already spent its scanning budget: stay linear
    stack: list[str] = []
    start, stop = i, len(s)
    for j, c in brackets(s, i, quotes='"' if strings else ""):
        if c in "{[":
            if len(stack) >= BRACKET_STACK_CAP:
                stop = j
                break
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                stop = j
                break
            if not stack:
                return j + 1
    if budget is not None:
        budget[0] -= stop - start
    return -1


_NEXT_FLAG = re.compile(r"\s-{1,2}[A-Za-z]")


def _recover_end(s: str, i: int) -> int:
    """End of an unbalanced JSON value: the next ` --flag`, else the end of the text."""
    m = _NEXT_FLAG.search(s, i)
    return m.start() if m else len(s)


def _eol(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j


def _read_dquote(s: str, i: int, env: Mapping[str, str]) -> tuple[str | None, int]:
    """Bash double quotes from `s[i] == '"'`: (content, index past the close) or None."""
    out: list[str] = []
    j, n = i + 1, len(s)
    while j < n:
        c = s[j]
        if c == '"':
            return "".join(out), j + 1
        if c == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
            if s[j + 1] != "\n":
                out.append(s[j + 1])
            j += 2
            continue
        if c == "$":
            m = _VAR.match(s, j)
            if m:
                out.append(_expand_var(m, env))
                j = m.end()
                continue
        out.append(c)
        j += 1
    return None, n


def _starts_json(text: str) -> bool:
    return text[:1] in ("{", "[")


def _balanced(content: str) -> bool:
    body = content.rstrip()
    return match_brackets(body, 0) == len(body)


def _read_json_word(s: str, i: int, quote: str, budget: list[int]) -> tuple[str, int]:
    """A JSON value starting at `s[i]` whose quoting is broken: match brackets instead."""
    j = match_brackets(s, i, quote != '"', budget)
    if j < 0:
        j = _recover_end(s, i)
        text = s[i:j].rstrip().rstrip("'\"")
    else:
        text = s[i:j]
        if j < len(s) and s[j] == quote:
            j += 1
    if quote == '"':
        text = text.replace('\\"', '"')
    return text, j


def _read_word(s: str, i: int, env: Mapping[str, str], budget: list[int]) -> tuple[str, int]:
    n = len(s)
    buf: list[str] = []
    size = 0
    while i < n and s[i] not in _STOP:
        c = s[i]
        m = _PLAIN.match(s, i)
        if m:
            buf.append(m.group(0))
            i = m.end()
        elif c in "{[":
            at_value = not buf or buf[-1].endswith("=")
            j = match_brackets(s, i, True, budget) if at_value else -1
            if j > 0:
                buf.append(s[i:j])
                i = j
            elif at_value and c == "{":
                text, i = _read_json_word(s, i, "", budget)
                buf.append(text)
            else:
                buf.append(c)
                i += 1
        elif c == "'":
            j = s.find("'", i + 1)
            content = s[i + 1 : j] if j >= 0 else None
            if content is not None and (not _starts_json(content) or _balanced(content)):
                buf.append(content)
                i = j + 1
            elif s[i + 1 : i + 2] in ("{", "["):
                text, i = _read_json_word(s, i + 1, "'", budget)
                buf.append(text)
            else:  # unclosed quote: the rest of this physical line
                e = _eol(s, i + 1)
                buf.append(s[i + 1 : e])
                i = e
        elif c == '"':
            dq, j = _read_dquote(s, i, env)
            if dq is not None and (not _starts_json(dq) or _balanced(dq)):
                buf.append(dq)
                i = j
            elif s[i + 1 : i + 2] in ("{", "["):
                text, i = _read_json_word(s, i + 1, '"', budget)
                buf.append(text)
            else:
                e = _eol(s, i + 1)
                buf.append(s[i + 1 : e])
                i = e
        elif c == "\\":
            if i + 1 < n and s[i + 1] != "\n":
                buf.append(s[i + 1])
            i += 2
        else:  # "$"
            vm = _VAR.match(s, i)
            if vm:
                buf.append(_expand_var(vm, env))
                i = vm.end()
            elif s.startswith("$(", i):
                j = s.find(")", i)
                j = n if j < 0 else j + 1
                buf.append(s[i:j])
                i = j
            else:
                buf.append(c)
                i += 1
        size += len(buf[-1]) if buf else 0
        if size > MAX_VALUE_CHARS:
            # Keep reading to the end of the word but stop storing it.
            while i < n and s[i] not in _STOP:
                i += 1
            break
    return "".join(buf)[:MAX_VALUE_CHARS], i


def tokenize(s: str, env: Mapping[str, str]) -> list[Word]:
    """Split one logical command into shell words, operators and redirections."""
    out: list[Word] = []
    i, n = 0, len(s)
    budget = [2 * n + 100_000]  # bracket scanning allowed for this command
    while i < n and len(out) < MAX_WORDS:
        c = s[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c == "#":  # a comment runs to the end of its physical line
            i = _eol(s, i)
            continue
        op = next((o for o in _OPS if s.startswith(o, i)), None)
        if op and not (op == "&" and s.startswith("&>", i)):
            out.append(Word(op, i, "op"))
            i += len(op)
            continue
        rm = _REDIR.match(s, i)
        if rm and rm.end() > i and s[rm.start() : rm.end()].lstrip("0123456789")[:1] in "<>&":
            start = i
            i = rm.end()
            if not rm.group(1):  # `> file`: the target is not an argument
                while i < n and s[i] in " \t":
                    i += 1
                _, i = _read_word(s, i, env, budget)
            out.append(Word(s[start:i], start, "redir"))
            continue
        start = i
        text, i = _read_word(s, i, env, budget)
        if i == start:  # defensive: never loop without progress
            i += 1
            continue
        out.append(Word(text, start))
    return out


def split_ops(words: list[Word]) -> Iterator[list[Word]]:
    """Commands joined by `&&`, `;`, `|`, `&` are separate invocations."""
    seg: list[Word] = []
    for w in words:
        if w.kind == "op":
            if seg:
                yield seg
            seg = []
        else:
            seg.append(w)
    if seg:
        yield seg


# A file descriptor written against its redirection (`2>&1`): shlex would read the 2 as
# a word of its own.
_FD_RE = re.compile(r"(?<=\s)[0-9](?=[<>])")
_SHLEX_CHARS = 20_000  # past this a line goes to `tokenize`, whose work is bounded
_OPERATOR_CHARS = frozenset("<>&|;")


def split_words(text: str, env: Mapping[str, str]) -> list[Word]:
    """The words, operators and redirections of a command on one line (see the module's
    docstring for when `tokenize` reads it instead). Positions are 0: one line's words
    need no offsets to tell their line."""
    if "$" in text or "\n" in text or len(text) > _SHLEX_CHARS:
        return tokenize(text, env)
    lexer = shlex.shlex(_FD_RE.sub("", text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # a quote shlex cannot close: a JSON value pasted half-quoted
        return tokenize(text, env)
    words: list[Word] = []
    target = False  # the word after a redirection is its file, not an argument
    for token in tokens[:MAX_WORDS]:
        if target:
            target = False
        elif token and set(token) <= _OPERATOR_CHARS:
            redirect = "<" in token or ">" in token
            words.append(Word(token, 0, "redir" if redirect else "op"))
            target = redirect
        else:
            words.append(Word(token[:MAX_VALUE_CHARS], 0))
    return words
