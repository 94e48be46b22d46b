"""A release feed: an engine's package as a PEP 691 JSON simple index lists it.

PyPI (`https://pypi.org/simple/<name>/`, asked with `Accept:
application/vnd.pypi.simple.v1+json`) and the nightly or per-commit wheel indexes a repo
names answer in this shape. A release is a version with at least one file that is not
yanked; its date is its earliest file's `upload-time`. Anything else in the answer is a
`FeedError` that says what was wrong, never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from triagebot.frozen import Frozen

ACCEPT = "application/vnd.pypi.simple.v1+json"
# A wheel or sdist name: the version follows the project name, `-` separated.
_FILE = re.compile(r"^[A-Za-z0-9_.]+-(?P<version>\d[A-Za-z0-9_.+!]*?)(?:-|\.tar\.gz$|\.zip$)")
_VERSION = re.compile(r"^\d{1,4}(?:\.\d{1,4}){1,3}(?:\.dev\d{1,14}|rc\d{1,4}|\.post\d{1,4})?$")


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
    first: dict[str, str] = {}
    for entry in doc["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            raise FeedError("a file entry without a filename")
        if entry.get("yanked"):
            continue
        match = _FILE.match(entry["filename"])
        version = match["version"] if match else ""
        if not _VERSION.match(version) or ("dev" in version) != nightlies:
            continue
        when = entry.get("upload-time")
        day = when[:10] if isinstance(when, str) else ""
        if version not in first or (day and (not first[version] or day < first[version])):
            first[version] = day
    return sorted((Release(version=v, date=d) for v, d in first.items()),
                  key=lambda r: _key(r.version))


def newer_than(releases: Iterable[Release], version: str) -> list[Release]:
    """The releases after `version`, oldest first."""
    floor = _key(version)
    return [r for r in releases if _key(r.version) > floor]


def _key(version: str) -> tuple[int, ...]:
    head = re.split(r"\.dev|rc|\.post", version)[0]
    tail = re.findall(r"(?:\.dev|rc|\.post)(\d+)", version)
    return (*(int(p) for p in head.split(".")), *(int(t) for t in tail))
