"""Issues the App opens itself (the sentinel's tracking issues): open one, find it again
by its marker, rewrite its body.

Opening an issue is, like creating a comment, the one call never repeated blindly: after
a failure that may have stored it, the repository's open issues (by the bot, with the
label) are searched for the marker before another POST.
"""

from __future__ import annotations

import logging
from typing import Any

from triagebot.github.calls import Calls, give_up
from triagebot.github.comments import MAX_BODY_CHARS
from triagebot.github.errors import GitHubError
from triagebot.github.markers import has_marker, with_marker

_log = logging.getLogger(__name__)


def find_issue(calls: Calls, repo: str, label: str, key: str, bot_login: str) -> int | None:
    """The newest open issue by `bot_login`, labelled `label`, whose body opens with the
    marker for `key` (the first 100 such issues are read)."""
    found = calls.get_json(f"list issues of {repo}", f"/repos/{repo}/issues", {
        "state": "open", "labels": label, "creator": bot_login, "per_page": 100})
    for item in found or []:
        if isinstance(item, dict) and "pull_request" not in item \
                and has_marker(str(item.get("body") or ""), key):
            user = item.get("user") or {}
            if str(user.get("login", "")).lower() == bot_login.lower():
                return int(item["number"])
    return None


def open_issue(calls: Calls, repo: str, title: str, key: str, body: str, label: str,
               bot_login: str) -> int:
    """Open the issue for `key` (or find the one a failed POST stored); its number."""
    text = with_marker(key, body)[:MAX_BODY_CHARS]
    payload: dict[str, Any] = {"title": title, "body": text, "labels": [label]}
    what = f"open an issue in {repo}"
    backoff = calls.backoff()
    attempt, maybe_opened = 0, False
    while True:
        attempt += 1
        try:
            _, data = calls.once(what, lambda gh: gh.requester.requestJsonAndCheck(
                "POST", f"/repos/{repo}/issues", input=payload), write=True)
            return int(data["number"])
        except GitHubError as err:
            if not err.transient:
                raise
            failure = err
            maybe_opened = maybe_opened or err.ambiguous
            if attempt < calls.policy.attempts:
                calls.pause(err, backoff)
        if maybe_opened:
            existing = find_issue(calls, repo, label, key, bot_login)
            if existing is not None:
                _log.info("%s: a failed POST was stored after all (#%d)", what, existing)
                return existing
        if attempt >= calls.policy.attempts:
            raise give_up(failure, attempt)


def edit_body(calls: Calls, repo: str, number: int, key: str, body: str) -> None:
    text = with_marker(key, body)[:MAX_BODY_CHARS]
    calls.retried(f"edit the body of {repo}#{number}",
                  lambda gh: gh.requester.requestJsonAndCheck(
                      "PATCH", f"/repos/{repo}/issues/{number}", input={"body": text}),
                  write=True)
