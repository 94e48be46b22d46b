"""How GitHub's answers are read: what is final, what is retried, how long to wait."""

from __future__ import annotations

import email.utils

import pytest
import requests
from github import GithubException

from triagebot.github.errors import GitHubError, classify

NOW = 1_800_000_000.0


def _answer(status: int, message: str | None = None,
            headers: dict[str, str] | None = None) -> GithubException:
    data = {"message": message} if message is not None else None
    return GithubException(status, data, headers or {})


@pytest.mark.parametrize(("exc", "transient", "limited", "wait"), [
    (_answer(502, "Server Error"), True, False, None),
    (_answer(500), True, False, None),
    (_answer(404, "Not Found"), False, False, None),
    (_answer(422, "Validation Failed"), False, False, None),
    (_answer(401, "Bad credentials"), False, False, None),
    # A 403 that is not a rate limit is a refusal: waiting will not change it.
    (_answer(403, "Resource not accessible by integration"), False, False, None),
    (_answer(403, "Resource not accessible", {"x-ratelimit-remaining": "4"}), False, False,
     None),
    (_answer(403, "You have exceeded a secondary rate limit. Please wait a few minutes "
                  "before you try again."), True, True, None),
    (_answer(403, "API rate limit exceeded for installation ID 1."), True, True, None),
    (_answer(403, "You have exceeded a secondary rate limit", {"Retry-After": "30"}), True,
     True, 30.0),
    (_answer(429, None), True, True, None),
    (_answer(429, "slow down", {"retry-after": "7"}), True, True, 7.0),
    (_answer(429, "slow down", {"retry-after": "-3"}), True, True, 0.0),
    (_answer(403, "API rate limit exceeded",
             {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 10)}), True,
     True, 11.0),
    # A reset already past still waits the margin.
    (_answer(429, "", {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 5)}),
     True, True, 1.0),
])
def test_answers(exc: GithubException, transient: bool, limited: bool,
                 wait: float | None) -> None:
    err = classify(exc, "GET thing", NOW)
    assert isinstance(err, GitHubError)
    assert (err.status, err.transient, err.rate_limited) == (exc.status, transient, limited)
    assert err.retry_after_s == wait
    assert str(err).startswith(f"GET thing: GitHub answered {exc.status}")
    # Only 5xx can mean "done but the answer was lost".
    assert err.ambiguous == (transient and not limited)


def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(NOW + 42, usegmt=True)
    err = classify(_answer(429, "", {"Retry-After": when}), "x", NOW)
    assert err is not None and err.retry_after_s == pytest.approx(42, abs=1)


@pytest.mark.parametrize("exc", [requests.ConnectionError("reset"), requests.ReadTimeout("slow"),
                                 requests.exceptions.ChunkedEncodingError("cut")])
def test_lost_answers_are_transient_and_ambiguous(exc: Exception) -> None:
    err = classify(exc, "POST comment", NOW)
    assert err is not None and err.transient and err.ambiguous and err.status is None


def test_url_assertions_are_final() -> None:
    err = classify(AssertionError("evil.example.com"), "read comments", NOW)
    assert err is not None and not err.transient
    assert "outside base_url" in str(err) and "evil.example.com" in str(err)


def test_other_exceptions_are_not_ours() -> None:
    assert classify(ValueError("bug"), "x", NOW) is None


def test_long_messages_are_clipped() -> None:
    err = classify(_answer(422, "x" * 5000), "x", NOW)
    assert err is not None and len(str(err)) < 400
