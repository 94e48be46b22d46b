"""Every GitHub call goes through `Calls`: retries, rate limits, token refresh.

PyGithub's own retry is off (the connectors pass `retry=None`): its default retries POST
on 5xx, which posts a comment twice when GitHub stored it and then answered 502. Here:

- `retried` is for idempotent calls (GET, PATCH, DELETE, adding labels, reactions): 5xx and
  dropped connections back off exponentially with jitter; rate limits wait as GitHub asks
  (`Retry-After`, else `x-ratelimit-reset` when `x-ratelimit-remaining` is 0, else at least
  `rate_limit_floor_s`, doubling); after `attempts` tries the error is raised.
- `once` makes one attempt, for creating content; the caller decides what a retry needs
  (for comments: look for the marker first).
- Both repeat a call once after a 401 with a newly minted installation token: GitHub
  refused the request, so repeating it cannot act twice.
- A wait above `max_rate_limit_wait_s` is not slept: the call raises a transient
  GitHubError so the task can be retried later instead of holding a worker.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from github import Github
from pydantic import Field

from triagebot.frozen import Frozen
from triagebot.github.errors import GitHubError, classify

T = TypeVar("T")
_log = logging.getLogger(__name__)


class RetryPolicy(Frozen):
    """How hard to try. Tests lower the waits; production keeps GitHub's advice."""

    attempts: int = Field(default=5, ge=1, le=20)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    # 403/429 rate limits that name no wait: GitHub says wait at least a minute.
    rate_limit_floor_s: float = Field(default=60.0, ge=0)
    # Added to a wait until x-ratelimit-reset, which is a whole second.
    reset_margin_s: float = Field(default=1.0, ge=0)
    # PyGithub's pacing; GitHub asks for a second between mutating requests.
    seconds_between_requests: float = Field(default=0.25, ge=0)
    seconds_between_writes: float = Field(default=1.0, ge=0)
    timeout_s: int = Field(default=15, ge=1)


class WriteTurns(Protocol):
    """Who may call GitHub for an installation now: one request at a time, writes spaced,
    shared by every process that acts for it (GitHub asks for serial requests per
    installation, reads included)."""

    def turn(self, write: bool = True) -> AbstractContextManager[None]: ...


class Connector(Protocol):
    """Builds the PyGithub client; `refreshable` connectors can mint a new token, and
    `stale` says when the one they hold is about to expire."""

    refreshable: bool

    def connect(self) -> Github: ...

    def stale(self) -> bool: ...

    def close(self) -> None: ...


class Backoff:
    """The waits of one operation: exponential with jitter, or what a rate limit asks."""

    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self._policy = policy
        self._rng = rng
        self.failures = 0
        self._unhinted = 0

    def next_wait(self, err: GitHubError) -> float:
        self.failures += 1
        if err.rate_limited:
            if err.retry_after_s is not None:
                return err.retry_after_s
            wait = self._policy.rate_limit_floor_s * 2 ** self._unhinted
            self._unhinted += 1
            return wait
        delay = min(self._policy.backoff_max_s,
                    self._policy.backoff_base_s * 2 ** (self.failures - 1))
        return delay / 2 + self._rng.uniform(0, delay / 2)


class Calls:
    """Runs functions of a PyGithub `Github` with the retry rules above."""

    def __init__(self, connector: Connector, *, policy: RetryPolicy, max_wait_s: float,
                 sleep: Callable[[float], None], rng: random.Random | None = None,
                 turns: WriteTurns | None = None) -> None:
        self._connector = connector
        self._turns = turns
        self._policy = policy
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self._rng = rng or random.Random()
        # Connected on first use: minting a token is a call like any other.
        self._gh: Github | None = None

    @property
    def policy(self) -> RetryPolicy:
        return self._policy

    def backoff(self) -> Backoff:
        return Backoff(self._policy, self._rng)

    def close(self) -> None:
        if self._gh is not None:
            self._gh.close()
        self._connector.close()

    def once(self, what: str, fn: Callable[[Github], T], *, write: bool = False) -> T:
        """One attempt (two after a 401 answered to an expired or revoked token). Every
        call waits for the installation's turn, when there are turns to take; a `write`
        also waits out the spacing after the last write.

        A token GitHub will not mint raises a GitHubError marked `token`, whose status is
        the mint's answer: it says nothing about the resource `fn` would have asked for.
        """
        refreshed = False
        while True:
            if self._gh is None or self._connector.stale():
                self._reconnect()
            gh = self._gh
            assert gh is not None
            try:
                if self._turns is not None:
                    with self._turns.turn(write):
                        return fn(gh)
                return fn(gh)
            except Exception as exc:
                err = classify(exc, what, time.time(), self._policy.reset_margin_s)
                if err is None:
                    raise
                if err.status == 401 and self._connector.refreshable and not refreshed:
                    refreshed = True
                    _log.info("%s: token refused; minting a new one", what)
                    self._reconnect()
                    continue
                raise err from exc

    def retried(self, what: str, fn: Callable[[Github], T], *, write: bool = False) -> T:
        """`fn` retried on transient failures; only for calls that are safe to repeat."""
        backoff = self.backoff()
        while True:
            try:
                return self.once(what, fn, write=write)
            except GitHubError as err:
                if not err.transient:
                    raise
                if backoff.failures + 1 >= self._policy.attempts:
                    raise give_up(err, backoff.failures + 1) from err
                self.pause(err, backoff)

    def get_json(self, what: str, path: str,
                 parameters: dict[str, Any] | None = None) -> Any:
        """The JSON of a GET below the API's base URL (retried), or None when GitHub
        answers that it does not exist; a token it would not mint is an error, not that."""
        try:
            _, data = self.retried(
                what, lambda gh: gh.requester.requestJsonAndCheck("GET", path, parameters))
        except GitHubError as err:
            if err.not_found:
                return None
            raise
        return data

    def pause(self, err: GitHubError, backoff: Backoff) -> None:
        """Sleep before the next attempt, or raise when GitHub wants a wait above the cap."""
        wait = backoff.next_wait(err)
        if err.rate_limited and wait > self._max_wait_s:
            raise GitHubError(f"{err}; it asks for a wait of {wait:.0f} s, above "
                              f"max_rate_limit_wait_s={self._max_wait_s:.0f}",
                              status=err.status, transient=True, retry_after_s=wait,
                              rate_limited=True, token=err.token) from err
        _log.warning("%s; retrying in %.1f s", err, wait)
        self._sleep(wait)

    def _reconnect(self) -> None:
        old, self._gh = self._gh, None
        if old is not None:
            old.close()
        self._gh = self._connector.connect()


def give_up(err: GitHubError, attempts: int) -> GitHubError:
    """The error raised once the attempts are spent: still transient, for a later retry."""
    return GitHubError(f"{err} (gave up after {attempts} attempts)", status=err.status,
                       transient=True, retry_after_s=err.retry_after_s,
                       rate_limited=err.rate_limited, token=err.token)
