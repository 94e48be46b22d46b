"""Poll one release feed with a conditional request.

The same poll reads a PyPI project page (PEP 691 JSON) and a static nightly index's
(PEP 503 HTML), by the answer's content type. The validators of the last answer (`ETag`,
`Last-Modified`) go back as `If-None-Match` / `If-Modified-Since`, so an index that has
not changed answers 304 with no body. An index that cannot be reached, or answers
something that is not a project page, is an `error` with one log line saying which; the
caller counts it (`/metrics`) and keeps the releases it knew.
"""

from __future__ import annotations

import logging
import random

import httpx

from triagebot.bisect import envs
from triagebot.frozen import Frozen
from triagebot.jobs.watches import WatchStore
from triagebot.watch.feed import ACCEPT_ANY, FeedError, Release, parse_feed, parse_simple_html

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
    headers = {"Accept": ACCEPT_ANY}
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
    # PyPI answers PEP 691 JSON; a static nightly index, PEP 503 HTML.
    html = answer.headers.get("content-type", "").startswith("text/html")
    try:
        releases = tuple((parse_simple_html if html else parse_feed)(
            answer.content, nightlies=nightlies))
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


class Feeds:
    """The feeds one beat tick reads, each at most once however many watches follow it;
    what a feed last answered well is kept in Redis (its validators too), and a failed
    poll is counted under the feed's name for `/metrics`."""

    def __init__(self, watches: WatchStore, http: httpx.Client) -> None:
        self.watches = watches
        self.http = http
        self.read: dict[str, tuple[Release, ...]] = {}

    def releases(self, index: str, package: str, *, nightlies: bool = False
                 ) -> tuple[Release, ...]:
        url = f"{index.rstrip('/')}/{package}/"
        if url not in self.read:
            # Release feeds keep their state under the package's name, nightly ones
            # under the index's URL (a repo may name its own).
            key = url if nightlies else package
            raw = self.watches.feed(key)
            state = FeedState.model_validate_json(raw) if raw else FeedState()
            polled = poll(url, state, self.http, nightlies=nightlies)
            if polled.error:
                name = f"{package} nightlies" if nightlies else package
                self.watches.feed_error(name, polled.error.split(":", 1)[0])
            elif polled.state != state:
                self.watches.save_feed(key, polled.state.model_dump_json())
            self.read[url] = polled.state.releases
        return self.read[url]

    def with_nightlies(self, index: str, package: str, nightly_index: str) -> list[Release]:
        """The package's releases, and its nightlies from `nightly_index` where one is
        named ("" for none): what a watch or the sentinel follows."""
        found = list(self.releases(index, package))
        if nightly_index:
            found += self.releases(nightly_index, envs.nightly_package_for(package),
                                   nightlies=True)
        return found
