"""One request at a time per installation, across every process of the deployment.

GitHub asks an integration to send the requests of one installation serially, reads
included, and to wait a second between mutating ones. PyGithub spaces the writes of one
client only, and the triage worker runs several processes (and a deployment may run
several workers), each with its own. So the turn lives in Redis: a lock per installation
with a lease (a holder that dies frees it when the lease runs out), and the time the last
write ended, read from Redis's own clock so hosts need not agree on theirs. Every request
waits for the lock; a write then also waits until a spacing has passed since the last
write ended. A read leaves that time alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from triagebot.github.calls import RetryPolicy
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.jobs.store import connect
from triagebot.settings import Settings

# Longer than any one write (PyGithub's timeout, a token refresh) takes.
LEASE_S = 60.0
# A write that waits this long for its turn fails as transient; its task tries again.
WAIT_S = 180.0
_POLL_S = 0.02

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] ~= '' then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  end
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _now(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return float(seconds) + float(micros) / 1e6


class RedisWriteTurns:
    """`turn(write)` for one installation, kept in Redis (see the module docstring)."""

    def __init__(self, client: redis.Redis, settings: Settings, installation_id: int,
                 spacing_s: float, *, lease_s: float = LEASE_S, wait_s: float = WAIT_S) -> None:
        self._redis = client
        self._lock = settings.key("github-writes", str(installation_id), "lock")
        self._last = settings.key("github-writes", str(installation_id), "last")
        self._installation_id = installation_id
        self._spacing_s = spacing_s
        self._lease_ms = int(lease_s * 1000)
        self._wait_s = wait_s
        self._release = client.register_script(_RELEASE)

    @contextmanager
    def turn(self, write: bool = True) -> Iterator[None]:
        token = uuid.uuid4().hex
        deadline = time.monotonic() + self._wait_s
        while not self._redis.set(self._lock, token, nx=True, px=self._lease_ms):
            if time.monotonic() > deadline:
                raise GitHubError(f"no turn for installation {self._installation_id} "
                                  f"within {self._wait_s:.0f} s: another process held it",
                                  transient=True)
            time.sleep(_POLL_S)
        try:
            last = self._redis.get(self._last) if write else None
            if last is not None:
                wait = float(last) + self._spacing_s - _now(self._redis)
                if wait > 0:
                    time.sleep(wait)
            yield
        finally:
            # Only the holder releases, and stamps the end of its write as it does.
            self._release(keys=[self._lock, self._last],
                          args=[token, repr(_now(self._redis)) if write else "",
                                max(1000, int(self._spacing_s * 2000))])


def installation_client(settings: Settings, installation_id: int, *,
                        policy: RetryPolicy | None = None,
                        client: redis.Redis | None = None) -> GitHubClient:
    """The service's client for an installation: its requests take the shared turn."""
    policy = policy or RetryPolicy()
    turns = RedisWriteTurns(client or connect(settings), settings, installation_id,
                            policy.seconds_between_writes)
    return GitHubClient.for_installation(settings, installation_id, policy=policy,
                                         turns=turns)
