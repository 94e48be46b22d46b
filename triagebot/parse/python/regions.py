"""Where Python is in a report, and parsing it with salvage: fenced and unfenced regions,
prompts and quote markers removed, broken regions parsed piece by piece, and one-line
snippets in prose."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from triagebot.parse.common import OPENERS, brackets
from triagebot.parse.document import INDENTED, PYTHON_LANGUAGES, Layout

MAX_BLOCK_LINES = 3000  # a region longer than this is parsed in pieces
MAX_SALVAGE_TRIES = 40  # parse attempts on one invalid region

# --- finding Python ------------------------------------------------------------------

_UNLABELED = {"", "text", "txt", "plain", "plaintext", "code"}
_STRONG = re.compile(
    r"[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import[ \t]|def[ \t]+\w+[ \t]*\(|"
    r"class[ \t]+\w+[ \t]*[(:]|async[ \t]+def[ \t]|@\w|if[ \t]+__name__|"
    r"[A-Za-z_][\w.]{0,100}(?:\[[^\]\n]{0,100}\])?[ \t]*(?::[^=\n]{1,60})?=[ \t]*[^=\s]|"
    r"[A-Za-z_][\w.]{0,100}\()"
)
_WEAK = re.compile(
    r"[ \t]+\S|\.\.\.[ \t]|[ \t]*(?:[)\]}]|#|[\"'].{0,200}[\"'][ \t]*:|\w+=|return\b|"
    r"for[ \t]|while[ \t]|"
    r"if[ \t]|elif[ \t]|else\b|try\b|except\b|finally\b|with[ \t]|print\(|pass\b|raise\b|"
    r"assert\b|del[ \t]|global[ \t]|yield\b|\"\"\"|''')"
)
_SHELLISH = re.compile(r"(?:^|[ \t])--[A-Za-z][\w-]*|[ \t]\\[ \t]*$|^[ \t]*\$[ \t]")
# An unindented sentence ending in punctuation ends a run even if it looked like code.
_PROSE_END = re.compile(r"[A-Za-z][^=(){}\[\]#]*[.:!?]$")
_KEYWORD_START = re.compile(
    r"(?:for|if|elif|else|try|except|finally|with|while|def|class|async|return|import|from)\b"
)
_REPL = re.compile(r"(?:>>>|\.\.\.)(?: |$)")
_QUOTE = re.compile(r"[ \t]{0,12}(?:>[ \t]?){1,4}(?!>)")


@dataclass
class _Region:
    start: int  # 0-based index of the first line
    lines: list[str]
    required: bool  # a ```python fence: counts as a block even when nothing parses


def _line_kind(line: str) -> str:
    """ "strong" starts Python, "weak" may continue it, "shell"/"prose" end it."""
    if not line.strip():
        return "blank"
    head = line[:400]
    if _SHELLISH.search(head) and not _quoted_flags(head):
        return "shell"
    if _STRONG.match(head):
        return "strong"
    if _WEAK.match(head):
        return "weak"
    return "prose"


def _quoted_flags(head: str) -> bool:
    """`parser.add_argument("--model")` has flags only inside string literals."""
    return bool(re.search(r"[\"']--?[A-Za-z]", head)) and "(" in head


def find_regions(lines: list[str], layout: Layout) -> Iterator[_Region]:
    """Fenced Python, unlabeled fences that read as Python, and runs of Python-looking
    lines outside fences (a scraped page has lost its fences)."""
    fences = {b.start: b for b in layout.blocks if b.language != INDENTED}
    i, n = 0, len(lines)
    while i < n:
        block = fences.get(i)
        if block is not None:
            body = lines[block.start + 1 : block.end - 1 if block.closed else block.end]
            if block.language in PYTHON_LANGUAGES:
                yield from _split_big(_Region(block.start + 1, body, True))
            elif not block.closed:
                i += 1  # an unclosed non-Python fence hides nothing: read on
                continue
            elif block.language in _UNLABELED and _looks_python(body):
                yield from _split_big(_Region(block.start + 1, body, False))
            i = block.end
            continue
        if lines[i] and _line_kind(_unquote(lines[i])) == "strong":
            end = _run_end(lines, i, set(fences))
            if end - i >= 1:
                yield from _split_big(_Region(i, lines[i:end], False))
            i = max(end, i + 1)
            continue
        i += 1


def _looks_python(body: list[str]) -> bool:
    kinds = [_line_kind(x) for x in body[:200]]
    strong = kinds.count("strong")
    bad = kinds.count("shell") + kinds.count("prose")
    return strong >= 1 and bad * 3 <= strong + kinds.count("weak")


def _run_end(lines: list[str], i: int, fence_starts: set[int]) -> int:
    """End of a run of Python-looking lines outside fences (scraped pages lose them)."""
    j, n = i + 1, len(lines)
    blanks = 0
    last = i + 1
    while j < n and j - i < MAX_BLOCK_LINES * 4:
        if j in fence_starts:
            break
        kind = _line_kind(_unquote(lines[j]))
        if kind == "blank":
            blanks += 1
            if blanks > 3:
                break
        elif kind in ("strong", "weak") and not _sentence(_unquote(lines[j])):
            blanks = 0
            last = j + 1
        else:
            break
        j += 1
    return last


def _sentence(line: str) -> bool:
    if line[:1] in (" ", "\t") or _KEYWORD_START.match(line):
        return False
    return bool(_PROSE_END.match(line.strip()[:300]))


def _split_big(region: _Region) -> Iterator[_Region]:
    if len(region.lines) <= MAX_BLOCK_LINES:
        yield region
        return
    for k in range(0, len(region.lines), MAX_BLOCK_LINES):
        yield _Region(region.start + k, region.lines[k : k + MAX_BLOCK_LINES], region.required)


def _unquote(line: str) -> str:
    m = _QUOTE.match(line)
    return line[m.end() :] if m else line


# --- parsing with salvage ------------------------------------------------------------


class ParseBudget:
    def __init__(self, chars: int) -> None:
        self.left = chars

    def take(self, n: int) -> bool:
        self.left -= n
        return self.left >= 0


def _clean(lines: list[str]) -> list[str]:
    """Drop REPL prompts or quote markers, then the common indentation."""
    if any(x.lstrip().startswith(">>>") for x in lines[:50]):
        out = [_unprompt(x) for x in lines]
    else:
        out = [_unquote(x).rstrip("\r") for x in lines]
    widths = [len(x) - len(x.lstrip(" \t")) for x in out if x.strip()]
    cut = min(widths) if widths else 0
    return [x[cut:] if x[:cut].strip() == "" else x.lstrip() for x in out]


def _unprompt(line: str) -> str:
    s = line.lstrip().rstrip("\r")
    if _REPL.match(s):
        return s[4:]
    return s[3:] if s in (">>>", "...") else _unquote(line).rstrip("\r")


def _try_parse(src: str, budget: ParseBudget) -> ast.Module | SyntaxError | None:
    if not budget.take(len(src)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in pasted strings
            return ast.parse(src)
    except SyntaxError as e:
        return e
    except (ValueError, MemoryError, RecursionError, OverflowError):
        return None


def _top_level(line: str) -> bool:
    """A line that can start a top-level statement (used to cut invalid code)."""
    return (
        bool(line)
        and line[0] not in " \t)]}#"
        and not line.startswith(("else", "elif", "except", "finally"))
    )


def parse_region(
    region: _Region, budget: ParseBudget
) -> tuple[list[tuple[ast.Module, list[str], int]], bool]:
    """Parse what can be parsed of a region: [(module, source lines, first line index)].

    On a syntax error the code before the failing top-level statement is kept, the
    failing statement skipped, and the rest parsed again (bounded tries and budget).
    """
    src = _clean(region.lines)
    out: list[tuple[ast.Module, list[str], int]] = []
    ok = True
    start, tries = 0, 0
    while start < len(src) and tries < MAX_SALVAGE_TRIES:
        tries += 1
        chunk = src[start:]
        res = _try_parse("\n".join(chunk), budget)
        if isinstance(res, ast.Module):
            out.append((res, chunk, region.start + start))
            break
        ok = False
        if res is None:
            break
        err = min(max((res.lineno or 1) - 1, 0), len(chunk) - 1)
        cut = err
        while cut > 0 and not _top_level(chunk[cut]):
            cut -= 1
        if cut > 0:
            prefix = _try_parse("\n".join(chunk[:cut]), budget)
            if isinstance(prefix, ast.Module):
                out.append((prefix, chunk[:cut], region.start + start))
        nxt = err + 1
        while nxt < len(chunk) and not _top_level(chunk[nxt]):
            nxt += 1
        start += nxt
    return [m for m in out if m[0].body], ok


# --- one-line snippets in prose -------------------------------------------------------

_INLINE_CALL = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w{0,60}\.){0,3}(?:LLM|SamplingParams|Engine|GenerationConfig|"
    r"from_pretrained|generate|chat|EngineArgs|AsyncEngineArgs|SpeculativeConfig|"
    r"CompilationConfig))\("
)
_INLINE_ASSIGN = re.compile(r"`([A-Za-z_]\w{0,60}[ \t]*=[ \t]*[^`\n]{1,2000})`")


def inline_snippets(
    lines: list[str], covered: bytearray, budget: ParseBudget
) -> Iterator[tuple[ast.Module, list[str], int]]:
    for idx, line in enumerate(lines):
        if covered[idx] or ("(" not in line and "`" not in line):
            continue
        for count, m in enumerate(_INLINE_CALL.finditer(line)):
            if count >= 20:
                break
            end = _close_paren(line, m.end() - 1)
            if end < 0:
                continue
            snippet = line[m.start() : end]
            res = _try_parse(snippet, budget)
            if isinstance(res, ast.Module) and res.body:
                yield res, [snippet], idx
        for count, am in enumerate(_INLINE_ASSIGN.finditer(line)):
            if count >= 20:
                break
            res = _try_parse(am.group(1), budget)
            if isinstance(res, ast.Module) and res.body and isinstance(res.body[0], ast.Assign):
                yield res, [am.group(1)], idx


def _close_paren(s: str, i: int, limit: int = 5000) -> int:
    depth = 0
    for j, c in brackets(s, i, i + limit):
        if c in OPENERS:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1
