"""Turn raw input into lines the extractors can trust, and mark which lines to read.

A report arrives as a GitHub body, or as a scraped page where the body sits between site
navigation, other people's comments, bot reviews, downstream commit messages and even
AI-written "fix plans" that invent config values. Facts come only from the reporter's own
post: every other line is blanked (kept as "" so line numbers stay those of the input).

Telling the post from the page around it is our own line reading: a scraped page has no
markup left for a markdown parser to see, only the site's words ("Copy link",
"commented") between one post and the next.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from triagebot.parse.document.markdown import Layout, read_layout

Zone = Literal["body", "comment", "chrome"]

# GitHub bodies are capped at 65,536 characters; a scraped thread is rarely 10x that.
# Past this the rest is ignored with a warning, which keeps a 5 MB paste fast.
MAX_CHARS = 1_000_000
MAX_LINE = 20_000

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")
# Chinese, Japanese and Korean write no space between their words and a Latin name or a
# number ("开启mtp性能下降30%"); to a regex both are word characters, so `\bmtp\b` would
# never match. A space at each such seam lets every extractor read these reports like any
# other.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_SCRIPT_SEAM_RE = re.compile(f"(?<=[{_CJK}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{_CJK}])")


@dataclass
class Document:
    lines: list[str]
    zones: list[Zone]
    title: str | None = None
    scraped: bool = False
    truncated: bool = False
    chars: int = 0
    warnings: list[str] = field(default_factory=list)

    @cached_property
    def body_lines(self) -> list[str]:
        """All lines, with those outside the reporter's post blanked."""
        return [ln if z == "body" else "" for ln, z in zip(self.lines, self.zones, strict=True)]

    @cached_property
    def layout(self) -> Layout:
        """Where the code and tables of the reporter's post are."""
        return read_layout(self.body_lines)


def decode(data: str | bytes) -> tuple[str, list[str]]:
    """Bytes or text → clean text. Undecodable bytes become U+FFFD, never an exception."""
    warnings: list[str] = []
    if isinstance(data, bytes):
        sample = data[:4096]
        if sample.count(b"\x00") > len(sample) // 10:
            warnings.append("input looks binary; only its printable text was read")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            warnings.append("input is not valid UTF-8; undecodable bytes were replaced")
    else:
        text = data
    return text, warnings


def build(data: str | bytes, title: str | None = None) -> Document:
    text, warnings = decode(data)
    chars = len(text)
    truncated = chars > MAX_CHARS
    if truncated:
        text = text[:MAX_CHARS]
        warnings.append(f"input has {chars:,} characters; only the first {MAX_CHARS:,} were read")
    # NFKC folds full-width punctuation (`，` `：`) that reports from some locales carry.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii():
        text = _SCRIPT_SEAM_RE.sub(" ", unicodedata.normalize("NFKC", text))
    text = _CONTROL_RE.sub("", text).replace("\u00a0", " ")
    lines = [ln[:MAX_LINE] for ln in text.split("\n")]
    clean_title = None
    if title:
        clean_title = _CONTROL_RE.sub("", unicodedata.normalize("NFKC", title)).strip()[:1000]
        if not clean_title.isascii():
            clean_title = _SCRIPT_SEAM_RE.sub(" ", clean_title)
    scraped = _looks_scraped(lines)
    zones: list[Zone] = _zones_scraped(lines) if scraped else ["body"] * len(lines)
    _mark_boilerplate(lines, zones)
    return Document(lines, zones, clean_title or None, scraped, truncated, chars, warnings)


_SCRAPE_MARKERS = (
    "skip to content",
    "copy link",
    "sign up for free to join this conversation",
    "view on github",
    "raw_bufferclick to expand / collapse",
    "recommended tools",
)


def _looks_scraped(lines: list[str]) -> bool:
    head = [ln.strip().lower() for ln in lines[:400] if ln.strip()]
    hits = sum(1 for ln in head if any(ln.startswith(m) for m in _SCRAPE_MARKERS))
    return hits >= 1 and (head[:1] == ["skip to content"] or hits >= 2)


_COMMENTED_RE = re.compile(r"^@?[\w.-]+\s+(?:[\w.-]+\s+)?commented\b", re.I)
_ROLE_WORDS = frozenset(
    {"copy link", "copy markdown", "collaborator", "contributor", "member", "owner", "author",
     "first-time contributor", "edited", "edited by", "·", "•", "conversation", "", "commits",
     "checks", "files changed"}
)
_END_OF_POST = (
    "extent analysis",
    "fix plan",
    "vote matrix",
    "still need to ship something?",
    "back to top recommendations",
    "sign up for free to join this conversation",
)
_TIMELINE_RE = re.compile(
    r"^@?[\w.\[\]-]+(?: [\w.\[\]-]+)?(?: bot)? (?:added|removed|requested|merged|pushed|"
    r"force-pushed|marked|mentioned|closed|reopened|enabled|deleted|approved|moved|"
    r"dismissed|assigned|unassigned|self-assigned|changed the title|referenced|linked)\b"
)


def _zones_scraped(lines: list[str]) -> list[Zone]:
    """Body = the first post; before it chrome, after it comments, page footer chrome."""
    n = len(lines)
    zones: list[Zone] = ["chrome"] * n
    start = _first_post_start(lines)
    end = next((i for i in range(start, n)
                if any(lines[i].strip().lower().startswith(m) for m in _END_OF_POST)), n)
    i = start
    while i < end and not (i > start and _starts_next_post(lines, i)):
        zones[i] = "body"
        i += 1
    for j in range(i, end):
        zones[j] = "comment"
    return zones


def _starts_next_post(lines: list[str], i: int) -> bool:
    line = lines[i].strip()
    low = line.lower()
    return (low in ("copy link", "copy markdown") or _is_comment_header(lines, i)
            or bool(_TIMELINE_RE.match(line) or _COMMENTED_RE.match(line))
            or low.startswith("signed-off-by:") or " left a comment" in low[:80]
            or " left a review" in low[:80])


def _first_post_start(lines: list[str]) -> int:
    """Index of the first line of the reporter's post in a scraped page."""
    n = len(lines)
    for i, ln in enumerate(lines):
        low = ln.strip().lower()
        if low in ("copy link", "copy markdown") or _COMMENTED_RE.match(ln.strip()):
            j = i
            while j < n and (lines[j].strip().lower() in _ROLE_WORDS
                             or _COMMENTED_RE.match(lines[j].strip())
                             or (lines[j].strip().startswith("@") and len(lines[j].split()) <= 2)):
                j += 1
            return j
        if low in ("code example", "timeline (top)"):
            return i + 1
    return 0


def _is_comment_header(lines: list[str], i: int) -> bool:
    """`@user` followed within two lines by `Copy link`: the start of someone's comment."""
    if not lines[i].strip().startswith("@"):
        return False
    nxt = [ln.strip().lower() for ln in lines[i + 1:i + 3]]
    return "copy link" in nxt


# Issue/PR template text: instructions to the reporter, never facts about their run.
_BOILERPLATE = (
    "make sure you already searched for relevant issues",
    "essential elements of an effective pr description",
    "the purpose of the pr, such as",
    "the test plan, such as",
    "the test results, such as",
    "(optional) the necessary documentation update",
    "(optional) release notes update",
    "i have searched related issues but cannot get the expected help",
    "the bug has not been fixed in the latest version",
    "please note that if the bug-related issue you submitted lacks",
    "if the issue you raised is not a bug but a question",
    "please use english, otherwise it will be closed",
    "before submitting a new issue",
    "the output of `python collect_env.py`",
    "the output of python collect_env.py",
    "bisect-ing it on",
)


_BOILERPLATE_RE = re.compile("|".join(re.escape(b) for b in _BOILERPLATE))


def _mark_boilerplate(lines: list[str], zones: list[Zone]) -> None:
    for i, ln in enumerate(lines):
        if zones[i] == "body" and ln:
            low = ln.strip().lower().lstrip("-*•[]x >").strip()
            if _BOILERPLATE_RE.search(low, 0, 120 + 60):
                zones[i] = "chrome"
