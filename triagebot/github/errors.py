"""GitHubError, and how a failed PyGithub call becomes one.

`classify` is the one place that reads GitHub's answers to decide what a failure means:
rate limited (and for how long), worth retrying (5xx, a dropped connection), or final.
"""

from __future__ import annotations

import email.utils
from typing import Any

import requests
from github import GithubException
from github.Requester import Requester

_MESSAGE_CHARS = 300


class GitHubError(Exception):
    """A GitHub call failed.

    `transient`: worth retrying later (5xx, connection errors, rate limits longer than we are
    willing to wait); the others need a person or a code change. `retry_after_s` is the wait
    GitHub asked for, when it said. `rate_limited` marks 403/429 rate-limit answers, which
    GitHub refused before doing anything. `token` marks a failure to mint the installation
    token the call needed: its status is the mint's, and says nothing of the resource.
    """

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False,
                 retry_after_s: float | None = None, rate_limited: bool = False,
                 token: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient
        self.retry_after_s = retry_after_s
        self.rate_limited = rate_limited
        self.token = token

    @property
    def not_found(self) -> bool:
        """GitHub answered that the resource does not exist (not that it gave no token)."""
        return self.status == 404 and not self.token

    @property
    def ambiguous(self) -> bool:
        """The request may have been carried out although it failed (a 5xx, a lost answer)."""
        return self.transient and not self.rate_limited


def classify(exc: BaseException, what: str, now: float,
             reset_margin_s: float = 1.0) -> GitHubError | None:
    """The GitHubError for an exception a PyGithub call raised; None for anything else."""
    if isinstance(exc, GithubException):
        return _from_answer(exc, what, now, reset_margin_s)
    if isinstance(exc, requests.ConnectionError | requests.Timeout
                  | requests.exceptions.ChunkedEncodingError):
        return GitHubError(f"{what}: no answer from GitHub ({type(exc).__name__})",
                           transient=True)
    if isinstance(exc, AssertionError):
        # PyGithub asserts that every URL it follows (pagination Link headers, `url` fields)
        # stays on the host, port and path prefix of base_url.
        return GitHubError(f"{what}: PyGithub refused an answer pointing outside base_url "
                           f"({_clip(str(exc))})")
    return None


def _from_answer(exc: GithubException, what: str, now: float,
                 reset_margin_s: float) -> GitHubError:
    status = exc.status
    headers = {k.lower(): str(v) for k, v in (exc.headers or {}).items()}
    message = _message_of(exc)
    text = f"{what}: GitHub answered {status}" + (f": {message}" if message else "")
    if status in (403, 429):
        wait = _requested_wait(headers, now, reset_margin_s)
        limited = (wait is not None or status == 429
                   or Requester.isRateLimitError(message.lower()))
        if limited:
            return GitHubError(text, status=status, transient=True, retry_after_s=wait,
                               rate_limited=True)
    return GitHubError(text, status=status, transient=status >= 500)


def _requested_wait(headers: dict[str, str], now: float, margin_s: float) -> float | None:
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        return _parse_retry_after(retry_after, now)
    reset = headers.get("x-ratelimit-reset")
    if headers.get("x-ratelimit-remaining") == "0" and reset is not None:
        try:
            # The reset is a whole second; the margin covers where in it the reset happens.
            return max(float(reset) - now, 0.0) + margin_s
        except ValueError:
            return None
    return None


def _parse_retry_after(value: str, now: float) -> float | None:
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


def _message_of(exc: GithubException) -> str:
    data: Any = exc.data
    message = exc.message
    if not message and isinstance(data, dict):
        message = data.get("message") if isinstance(data.get("message"), str) else None
    return _clip(message or "")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "…"
