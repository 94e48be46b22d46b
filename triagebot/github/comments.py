"""The sticky comment: one bot comment per key, found by its marker, edited in place.

Creating a comment is the one call that must never be repeated blindly: GitHub may store it
and still answer 502, or the answer may be lost. After any such failure the thread is
searched for the marker (by the bot's own login) before a new POST; after a refused
request (a rate limit, a 401), the POST is simply sent again.
"""

from __future__ import annotations

import logging

from triagebot.github.calls import Calls, give_up
from triagebot.github.errors import GitHubError
from triagebot.github.markers import has_marker, with_marker
from triagebot.github.models import ThreadComment
from triagebot.github.thread import scan_comments

# GitHub refuses longer bodies with a 422, which no retry would cure.
MAX_BODY_CHARS = 65536
# How many comments a marker search reads before it gives up looking.
MAX_SCAN = 10_000
_TRUNCATED = "\n\n… (truncated by triagebot: GitHub keeps at most 65,536 characters)\n"
_log = logging.getLogger(__name__)


def find_marked(calls: Calls, repo: str, number: int, key: str,
                bot_login: str) -> ThreadComment | None:
    """The oldest comment by `bot_login` whose first line is the marker for `key`."""
    found = scan_comments(calls, repo, number, limit=MAX_SCAN, first_only=True,
                          keep=lambda c: c.author == bot_login and has_marker(c.body, key))
    return found[0] if found else None


def upsert_comment(calls: Calls, repo: str, number: int, key: str, body: str,
                   bot_login: str, comment_id: int | None = None) -> int:
    text = _bounded(with_marker(key, body))
    where = f"{repo}#{number}"
    if comment_id is not None:
        try:
            edit_comment(calls, repo, number, comment_id, text)
            return comment_id
        except GitHubError as err:
            if not err.not_found:
                raise
            _log.info("%s: comment %d is gone; looking for the marker", where, comment_id)
    existing = find_marked(calls, repo, number, key, bot_login)
    if existing is not None:
        if existing.body != text:
            edit_comment(calls, repo, number, existing.id, text)
        return existing.id
    return _create(calls, repo, number, key, text, bot_login)


def edit_comment(calls: Calls, repo: str, number: int, comment_id: int, text: str) -> None:
    calls.retried(f"edit comment {comment_id} on {repo}#{number}",
                  lambda gh: gh.get_repo(repo).get_issue(number).get_comment(comment_id)
                  .edit(text), write=True)


def _create(calls: Calls, repo: str, number: int, key: str, text: str,
            bot_login: str) -> int:
    what = f"comment on {repo}#{number}"
    attempts = calls.policy.attempts
    backoff = calls.backoff()
    maybe_posted = False
    attempt = 0
    while True:
        attempt += 1
        try:
            return calls.once(what, lambda gh: gh.get_repo(repo).get_issue(number)
                              .create_comment(text).id, write=True)
        except GitHubError as err:
            if not err.transient:
                raise
            failure = err
            # Once a POST may have landed, every later attempt looks for it first: it may
            # also show up late.
            maybe_posted = maybe_posted or err.ambiguous
            if attempt < attempts:
                calls.pause(err, backoff)
        if maybe_posted:
            existing = find_marked(calls, repo, number, key, bot_login)
            if existing is not None:
                _log.info("%s: a failed POST was stored after all (comment %d)", what,
                          existing.id)
                if existing.body != text:
                    edit_comment(calls, repo, number, existing.id, text)
                return existing.id
        if attempt >= attempts:
            raise give_up(failure, attempt)


def _bounded(text: str) -> str:
    if len(text) <= MAX_BODY_CHARS:
        return text
    _log.warning("comment body of %d characters cut to %d", len(text), MAX_BODY_CHARS)
    return text[: MAX_BODY_CHARS - len(_TRUNCATED)] + _TRUNCATED
