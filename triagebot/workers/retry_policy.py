"""When a task that failed on GitHub or Redis runs again, or that it gives up.

Two kinds of "not now", counted apart:

- A rate limit is GitHub saying when: the next try comes no earlier than `retry-after`
  or `x-ratelimit-reset` said (a 403/429 that named no wait gets at least a minute,
  doubling), with a margin and a little jitter, later never earlier. GitHub says an
  integration that keeps going while limited may be banned. Waiting is not failing: it
  never uses up the tries, so an event is never dropped for waiting.
- Anything else transient (a 5xx, a dropped connection, Redis away) backs off
  exponentially with jitter, `MAX_FAILURES` times, and then the caller gives up loudly.

A non-transient GitHub error is not retried at all.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from triagebot.github.errors import GitHubError

MAX_FAILURES = 8
BACKOFF_BASE_S = 5.0
BACKOFF_MAX_S = 600.0
# A rate limit that names no wait: GitHub asks for at least a minute, then more.
UNHINTED_FLOOR_S = 60.0
UNHINTED_MAX_S = 3600.0
# Added to GitHub's wait: its reset is a whole second, and clocks differ a little.
MARGIN_S = 2.0


@dataclass(frozen=True)
class NextTry:
    seconds: float
    wait: bool  # a rate-limit wait, which does not count as a failure


def next_try(exc: Exception, *, failures: int, waits: int,
             rng: random.Random | None = None) -> NextTry | None:
    """The next try after `exc`, or None to give up; `failures` and `waits` are the
    tries already spent on each kind."""
    rng = rng or random.Random()
    if isinstance(exc, GitHubError):
        if not exc.transient:
            return None
        if exc.rate_limited:
            asked = exc.retry_after_s
            if asked is None:
                asked = min(UNHINTED_MAX_S, UNHINTED_FLOOR_S * 2 ** min(waits, 10))
            return NextTry(asked + MARGIN_S + rng.uniform(0, min(30.0, asked / 10)), True)
    if failures >= MAX_FAILURES:
        return None
    delay = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** failures)
    return NextTry(delay / 2 + rng.uniform(0, delay / 2), False)
