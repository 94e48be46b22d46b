"""Which characters of a markdown comment are prose, where a command may be read.

A command quoted in a reply, shown in a code block, written as link text or hidden in an
HTML comment must not run: people quote the bot's own help, paste earlier commands, and
reports quote each other. So everything below is *ignored*:

- fenced code (``` or ~~~, any length; an unclosed fence runs to the end) and indented
  code blocks;
- block quotes at any depth, with their lazy continuation lines up to the next blank line;
- HTML comments, HTML blocks and inline tags (with the text of `<a>`, `<code>` and the like);
- inline code (backtick runs of any length);
- links and images `[text](target)`, `[text][ref]`, `[ref]` with a definition, the
  definitions themselves, autolinks `<https://...>` and bare URLs.

This follows CommonMark closely enough for commands, and where it is unsure it ignores
more: a missed command costs the user a retry, a command read from a quote costs a GPU run.
Every step is linear in the text (one scan per kind, failed searches remembered), so a
65,536-character body full of brackets or backticks still takes milliseconds.
"""

from __future__ import annotations

import re
from bisect import bisect_right

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LIST_PREFIX = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_MAX_LABEL = 999  # CommonMark's longest link label
_REF_DEF = re.compile(r" {0,3}\[((?:[^\[\]\\]|\\.){1,999})\]:")
# CommonMark HTML block type 6: these tags open a block even inside a paragraph.
_BLOCK_TAG_NAMES = """
    address article aside base basefont blockquote body caption center col colgroup dd
    details dialog dir div dl dt fieldset figcaption figure footer form frame frameset h1
    h2 h3 h4 h5 h6 head header hr html iframe legend li link main menu menuitem nav noframes
    ol optgroup option p param search section summary table tbody td tfoot th thead title tr
    track ul"""
_BLOCK_TAGS = frozenset(_BLOCK_TAG_NAMES.split())
_RAW_TAGS = ("script", "pre", "style", "textarea")
_RAW_OPEN = re.compile(r"<(script|pre|style|textarea)(?:[\s>]|$)", re.I)
_RAW_CLOSE = re.compile(r"</(?:script|pre|style|textarea)>", re.I)
_TAG_START = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)(?:[\s/>]|$)")
_WHOLE_TAG = re.compile(r"(?:<[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*")

# `<` only where a tag, comment or autolink could open, so runs of `<` stay cheap.
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~]|`+|<(?=[!?/A-Za-z])")
_BACKTICKS = re.compile(r"`+")
_AUTOLINK = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*"
    r"|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9][A-Za-z0-9.-]*)>")
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?>")
_CLOSE_TAG = re.compile(r"</[A-Za-z][A-Za-z0-9-]*\s*>")
# Inline tags whose text is code or link text, not prose.
_CONTENT_TAGS = frozenset({"a", "code", "kbd", "samp", "tt", "var", *_RAW_TAGS})
_BRACKETS = re.compile(r"\\[\s\S]|[\[\]]")
_PARENS = re.compile(r"\\[\s\S]|[()]")
_COMMENT_END = re.compile("-->")
# Openers of comments, CDATA, processing instructions and declarations, with their closers.
_SPECIALS = (("<!--", _COMMENT_END), ("<![CDATA[", re.compile(r"\]\]>")),
             ("<?", re.compile(r"\?>")), ("<!", re.compile(">")))
_BARE_URL = re.compile(r"(?<![\w/])(?:(?:https?|ftp)://|www\.)[^\s<]*", re.I)

_BLANK_UNTIL = re.compile(r"(?!)")  # an HTML block that ends at the next blank line


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, the line break excluded; `\\r\\n`, `\\r`, `\\n` break."""
    spans = []
    start = 0
    for m in _LINE_BREAK.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def ignored_mask(text: str) -> bytearray:
    """One byte per character of `text`: 1 where it is not prose."""
    mask = bytearray(len(text))
    regions, refs = _blocks(text, mask)
    for start, end in regions:
        _inline(text, start, end, mask, refs)
    return mask


def prose_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every maximal run of prose characters, in order."""
    mask = ignored_mask(text)
    spans = []
    pos = 0
    while pos < len(text):
        start = mask.find(0, pos)
        if start < 0:
            break
        end = mask.find(1, start)
        end = len(text) if end < 0 else end
        spans.append((start, end))
        pos = end
    return spans


def _fill(mask: bytearray, start: int, end: int) -> None:
    if end > start:
        mask[start:end] = b"\x01" * (end - start)


def _indent(line: str) -> int:
    width = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _label(raw: str) -> str:
    return " ".join(raw.split()).casefold()


def _fence_closes(line: str, char: str, length: int) -> bool:
    stripped = line.strip(" \t")
    return len(stripped) >= length and stripped == char * len(stripped)


def _special(text: str, at: int) -> tuple[str, re.Pattern[str]] | None:
    """The `<!--`-like opener at `at` and the pattern that closes it, or None."""
    for opener, closer in _SPECIALS:
        if text.startswith(opener, at):
            letter = text[at + 2:at + 3]
            if opener != "<!" or (letter.isascii() and letter.isalpha()):
                return opener, closer
    return None


def _html_start(content: str, paragraph: bool) -> re.Pattern[str] | None:
    """The end condition of an HTML block starting on this line, or None."""
    if special := _special(content, 0):
        return special[1]
    if _RAW_OPEN.match(content):
        return _RAW_CLOSE
    tag = _TAG_START.match(content)
    if tag and tag.group(1).lower() in _BLOCK_TAGS:
        return _BLANK_UNTIL
    # Any other tag alone on its line opens a block, but cannot interrupt a paragraph.
    if not paragraph and _WHOLE_TAG.fullmatch(content):
        return _BLANK_UNTIL
    return None


def _blocks(text: str, mask: bytearray) -> tuple[list[tuple[int, int]], set[str]]:
    """Mask code, quote and HTML blocks whole; return the prose regions and link labels."""
    regions: list[tuple[int, int]] = []
    refs: set[str] = set()
    fence: tuple[str, int] | None = None
    until: re.Pattern[str] | None = None
    quoted = paragraph = False
    region: list[int] | None = None
    spans = line_spans(text)
    for index, (start, end) in enumerate(spans):
        line = text[start:end]
        # A masked line takes its line break along, so prose spans hold only prose lines.
        through = spans[index + 1][0] if index + 1 < len(spans) else end
        blank = not line.strip(" \t")
        prose = False
        if fence is not None:
            _fill(mask, start, through)
            if _fence_closes(line, *fence):
                fence = None
        elif until is not None:
            if until is _BLANK_UNTIL and blank:
                until = None
            else:
                _fill(mask, start, through)
                if until.search(line):
                    until = None
        elif blank:
            quoted = paragraph = False
        elif _indent(line) >= 4 and not paragraph and not quoted:
            _fill(mask, start, through)  # indented code
        else:
            lead = _LIST_PREFIX.match(line)
            content = line[lead.end() if lead else 0:]
            opened = _FENCE.match(content)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                # A fence anywhere (in a list, after a quote) opens code: ignore more.
                _fill(mask, start, through)
                fence = (opened.group(1)[0], len(opened.group(1)))
                quoted = paragraph = False
            elif content.startswith(">") or quoted:
                _fill(mask, start, through)
                quoted = True
            elif (html := _html_start(content, paragraph)) is not None:
                _fill(mask, start, through)
                paragraph = False
                closed = html is not _BLANK_UNTIL and html.search(content, 2) is not None
                until = None if closed else html
            elif ref := _REF_DEF.match(line):
                _fill(mask, start, through)
                refs.add(_label(ref.group(1)))
            else:
                prose = True
                paragraph = not _HEADING.match(content)
        if prose:
            if region is None:
                region = [start, end]
            else:
                region[1] = end
        elif region is not None:
            regions.append((region[0], region[1]))
            region = None
    if region is not None:
        regions.append((region[0], region[1]))
    return regions, refs


def _inline(text: str, start: int, end: int, mask: bytearray, refs: set[str]) -> None:
    _atoms(text, start, end, mask)
    _links(text, start, end, mask, refs)
    for m in _BARE_URL.finditer(text, start, end):
        if not mask[m.start()]:
            _fill(mask, m.start(), m.end())


class _Search:
    """Forward searches inside one region that remember failures, so each fails once."""

    def __init__(self, text: str, end: int) -> None:
        self.text = text
        self.end = end
        self.failed: dict[str, int] = {}  # pattern -> position from which it is absent

    def find(self, pattern: re.Pattern[str], pos: int) -> tuple[int, int] | None:
        if self.failed.get(pattern.pattern, self.end + 1) <= pos:
            return None
        m = pattern.search(self.text, pos, self.end)
        if m is None:
            self.failed[pattern.pattern] = pos
            return None
        return m.start(), m.end()


def _atoms(text: str, start: int, end: int, mask: bytearray) -> None:
    """Code spans, HTML comments, autolinks and tags: the first to open wins, left to right."""
    runs: dict[int, list[int]] | None = None
    search = _Search(text, end)
    pos = start
    while (m := _INLINE.search(text, pos, end)) is not None:
        token = m.group()
        pos = m.end()
        if token[0] == "\\":
            continue
        if token[0] == "`":
            if runs is None:
                runs = {}
                for run in _BACKTICKS.finditer(text, start, end):
                    runs.setdefault(len(run.group()), []).append(run.start())
            starts = runs.get(len(token), [])
            i = bisect_right(starts, m.start())
            if i < len(starts):
                pos = starts[i] + len(token)
                _fill(mask, m.start(), pos)
            continue
        pos = _angle(text, m.start(), end, mask, search)


def _angle(text: str, at: int, end: int, mask: bytearray, search: _Search) -> int:
    """Mask the HTML or autolink construct opening with `<` at `at`; the next scan position."""
    if special := _special(text, at):
        opener, closer = special
        # `<!-->` is a whole comment, so its closer is looked for from the first dash.
        found = search.find(closer, at + (2 if opener == "<!--" else len(opener)))
        if found is None and opener == "<!--":
            found = (end, end)  # GitHub hides an unclosed comment: ignore the paragraph's rest
        if found is None:
            return at + 1
        _fill(mask, at, found[1])
        return found[1]
    if m := _AUTOLINK.match(text, at, end):
        _fill(mask, at, m.end())
        return m.end()
    if m := _CLOSE_TAG.match(text, at, end):
        _fill(mask, at, m.end())
        return m.end()
    if m := _OPEN_TAG.match(text, at, end):
        stop = m.end()
        name = m.group(1).lower()
        if name in _CONTENT_TAGS and not m.group().endswith("/>"):
            found = search.find(re.compile(rf"</{name}\s*>", re.I), stop)
            stop = found[1] if found else stop
        _fill(mask, at, stop)
        return stop
    return at + 1


def _links(text: str, start: int, end: int, mask: bytearray, refs: set[str]) -> None:
    """Mask `[text](target)`, `[text][ref]`, `[ref]` (when defined) and images."""
    brackets = _pairs(_BRACKETS, "[", text, start, end, mask)
    if not brackets:
        return
    parens = _pairs(_PARENS, "(", text, start, end, mask)
    covered = -1
    for open_at in sorted(brackets):
        if open_at <= covered:
            continue
        close_at = brackets[open_at]
        after = close_at + 1
        if text.startswith("^", open_at + 1):
            continue  # a footnote reference is prose
        if after in parens:
            stop = parens[after]
        elif after in brackets:
            stop = brackets[after]
        elif refs and close_at - open_at <= _MAX_LABEL and (
                _label(text[open_at + 1:close_at]) in refs):
            stop = close_at
        else:
            continue
        first = open_at - 1 if open_at > start and text[open_at - 1] == "!" else open_at
        _fill(mask, first, stop + 1)
        covered = stop


def _pairs(pattern: re.Pattern[str], opener: str, text: str, start: int, end: int,
           mask: bytearray) -> dict[int, int]:
    """Matching unescaped, unmasked brackets or parens: open position -> close position."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for m in pattern.finditer(text, start, end):
        at = m.start()
        if len(m.group()) > 1 or mask[at]:
            continue
        if m.group() == opener:
            stack.append(at)
        elif stack:
            pairs[stack.pop()] = at
    return pairs
