"""Poll one release feed with a conditional request.

The validators of the last answer (`ETag`, `Last-Modified`) go back as `If-None-Match` /
`If-Modified-Since`, so an index that has not changed answers 304 with no body. An index
that cannot be reached, or answers something that is not a PEP 691 project page, is an
`error` with one log line saying which; the caller counts it (`/metrics`) and keeps the
releases it knew.
"""

from __future__ import annotations

import logging
import random

import httpx

from triagebot.frozen import Frozen
from triagebot.watch.feed import ACCEPT, FeedError, Release, parse_feed

log = logging.getLogger(__name__)


class FeedState(Frozen):
    """What the last good answer said, kept between polls."""

    etag: str = ""
    modified: str = ""
    releases: tuple[Release, ...] = ()


class Polled(Frozen):
    state: FeedState
    changed: bool = False
    error: str = ""  # "unreachable" or "malformed", with the reason after a colon


def poll(url: str, state: FeedState, client: httpx.Client, *, nightlies: bool = False
         ) -> Polled:
    headers = {"Accept": ACCEPT}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.modified:
        headers["If-Modified-Since"] = state.modified
    try:
        answer = client.get(url, headers=headers, follow_redirects=True)
    except httpx.HTTPError as exc:
        return _failed(url, state, f"unreachable: {type(exc).__name__}: {exc}")
    if answer.status_code == 304:
        return Polled(state=state)
    if answer.status_code != 200:
        return _failed(url, state, f"unreachable: HTTP {answer.status_code}")
    try:
        releases = tuple(parse_feed(answer.content, nightlies=nightlies))
    except FeedError as exc:
        return _failed(url, state, f"malformed: {exc}")
    new = FeedState(etag=answer.headers.get("etag", ""),
                    modified=answer.headers.get("last-modified", ""), releases=releases)
    return Polled(state=new, changed=releases != state.releases)


def next_poll_s(interval_s: float, rng: random.Random, jitter: float = 0.2) -> float:
    """The wait before the next poll: the interval, moved by up to ±`jitter` of it, so
    deployments started together do not ask the index at the same second."""
    return interval_s * (1 + rng.uniform(-jitter, jitter))


def _failed(url: str, state: FeedState, error: str) -> Polled:
    log.warning("release feed %s %s; keeping the %d releases known", url, error,
                len(state.releases))
    return Polled(state=state, error=error)
