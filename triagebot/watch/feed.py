"""A release feed: an engine's package as a PEP 691 JSON simple index lists it.

PyPI (`https://pypi.org/simple/<name>/`, asked with `Accept:
application/vnd.pypi.simple.v1+json`) and the nightly or per-commit wheel indexes a repo
names answer in this shape. A release is a version with at least one file that is not
yanked; its date is its earliest file's `upload-time`. Anything else in the answer is a
`FeedError` that says what was wrong, never a guess.

A static nightly index (wheels.vllm.ai/nightly) is a PEP 503 HTML page instead: its
links name the files, and a nightly's date is its build date, which its dev number
carries where it is one (PEP 503 has no upload time). A wheel's local label
(`+g1a2b3c.cu129`) is dropped: `pip install vllm==<version>` finds the file with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from html.parser import HTMLParser
from urllib.parse import unquote

from triagebot.frozen import Frozen

ACCEPT = "application/vnd.pypi.simple.v1+json"
# A PEP 691 index answers JSON; a static one (PEP 503) can only answer its HTML.
ACCEPT_ANY = f"{ACCEPT}, text/html;q=0.1"
# A wheel or sdist name: the version follows the project name, `-` separated.
_FILE = re.compile(r"^[A-Za-z0-9_.]+-(?P<version>\d[A-Za-z0-9_.+!]*?)(?:-|\.tar\.gz$|\.zip$)")
_VERSION = re.compile(
    r"^\d{1,4}(?:\.\d{1,4}){1,3}(?:rc\d{1,4})?(?:\.dev\d{1,14}|\.post\d{1,4})?$")
_PARTS = re.compile(r"^(?P<release>[\d.]+?)(?:rc(?P<rc>\d+))?(?:\.dev(?P<dev>\d+))?"
                    r"(?:\.post(?P<post>\d+))?$")
# A dev number that is a build date: YYYYMMDD, or YYYYMMDDHHMM (indexes mix both).
_DAY = re.compile(r"\.dev(20\d{6})(\d{4})?$")


class FeedError(ValueError):
    """The index answered something that is not a PEP 691 project page."""


class Release(Frozen):
    version: str
    date: str = ""  # YYYY-MM-DD of its first file, when the index says


def parse_feed(body: bytes | str, *, nightlies: bool = False) -> list[Release]:
    """The releases the project page lists, oldest first by version; dev builds only
    where `nightlies`."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FeedError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        raise FeedError("no `files` list: not a PEP 691 project page")
    meta = doc.get("meta")
    api = meta.get("api-version") if isinstance(meta, dict) else None
    if not isinstance(api, str) or not api.startswith("1."):
        raise FeedError(f"api-version {api!r}: only 1.x is read")
    files: list[tuple[str, str]] = []
    for entry in doc["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            raise FeedError("a file entry without a filename")
        if entry.get("yanked"):
            continue
        when = entry.get("upload-time")
        files.append((entry["filename"], when[:10] if isinstance(when, str) else ""))
    return _releases(files, nightlies)


def parse_simple_html(body: bytes | str, *, nightlies: bool = False) -> list[Release]:
    """The releases a PEP 503 project page links to (yanked links left out), as
    `parse_feed` gives them."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    links = _Links()
    links.feed(text)
    if not links.seen_html:
        raise FeedError("no HTML: not a PEP 503 project page")
    return _releases([(name, "") for name in links.files], nightlies)


class _Links(HTMLParser):
    """The file names of a simple page's `<a>` links (the link text, else the URL's
    last part), skipping those marked `data-yanked`."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []
        self.seen_html = False
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen_html = True
        if tag == "a":
            named = dict(attrs)
            yanked = "data-yanked" in named
            self._href = None if yanked else (named.get("href") or "")
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            name = self._text.strip() or unquote(self._href.split("#")[0].rsplit("/", 1)[-1])
            self.files.append(name)
            self._href = None


def _releases(files: Iterable[tuple[str, str]], nightlies: bool) -> list[Release]:
    """(file name, upload day) pairs as releases, each dated by its earliest file (a
    nightly without one by its build date); dev builds only where `nightlies`."""
    first: dict[str, str] = {}
    for filename, day in files:
        match = _FILE.match(filename)
        version = match["version"].split("+")[0] if match else ""
        if not _VERSION.match(version) or ("dev" in version) != nightlies:
            continue
        if not day and (built := _DAY.search(version)):
            day = f"{built[1][:4]}-{built[1][4:6]}-{built[1][6:]}"
        if version not in first or (day and (not first[version] or day < first[version])):
            first[version] = day
    return sorted((Release(version=v, date=d) for v, d in first.items()),
                  key=lambda r: _key(r.version))


def newer_than(releases: Iterable[Release], version: str) -> list[Release]:
    """The releases after `version`, oldest first (nightlies in their place)."""
    floor = _key(version)
    return sorted((r for r in releases if _key(r.version) > floor), key=lambda r: _key(r.version))


def _key(version: str) -> tuple[int, ...]:
    """PEP 440's order for the versions a feed holds: a nightly (dev) before the release
    candidates and the release it leads to, a post release after it; two nightlies of
    one release by their dev numbers, a date's 8 digits widened to 12 so that
    YYYYMMDD and YYYYMMDDHHMM compare as times."""
    parts = _PARTS.match(version)
    if parts is None:
        return (-1,)
    release = [int(p) for p in parts["release"].split(".")][:4]
    dev = int(parts["dev"]) * (10_000 if len(parts["dev"]) == 8 else 1) if parts["dev"] else -1
    if parts["post"]:
        phase = (3, int(parts["post"]), 0)
    elif parts["rc"]:
        phase = (1, int(parts["rc"]), dev if dev >= 0 else 10**15)
    elif dev >= 0:
        phase = (0, 0, dev)
    else:
        phase = (2, 0, 0)
    return (*release, *[0] * (4 - len(release)), *phase)
