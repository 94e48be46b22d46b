"""Watch state survives a Redis restart with persistence: a redis-server of the test's
own, started from the deployment's `redis.conf` (AOF), holds a watch and the row of a
release it processed; after a restart the watch and its row are intact, a repeated poll
neither runs that release again nor loses its row, and the next release runs once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_server import RedisServer, redis_server
from tests.fakes.release_feed import ReleaseFeed, serve_feed
from tests.watch.triage_side import context, finish, runs, settings_for, tick, watched
from triagebot.jobs.watches import WatchStore

NAMESPACE = "tbrestart"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as started:
        yield started


def test_a_watch_and_its_rows_survive_a_redis_restart(
        server: RedisServer, fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", "-",
                          author="reporter")
    feed: ReleaseFeed
    with serve_feed() as feed:
        settings = settings_for(NAMESPACE, fake_github, feed.url, tmp_path,
                                redis_url=server.url)
        ctx = context(settings)
        watched(ctx)
        feed.publish("vllm", "0.20.1", "2026-01-02")
        feed.publish("vllm", "0.21.0", "2026-02-01")
        assert tick(ctx) == 1
        finish(ctx, "0.21.0", "0.20.1", 0.6)
        watches = WatchStore(ctx.store.redis, NAMESPACE)
        before = watches.get(REPO, 42)
        assert before is not None
        assert [(r.release, r.state, r.date) for r in before.rows] == [
            ("0.21.0", "reproduced", "2026-02-01")]
        assert before.last == "0.21.0"

        server.restart()
        ctx = context(settings)
        watches = WatchStore(ctx.store.redis, NAMESPACE)
        assert watches.get(REPO, 42) == before
        assert watches.watching("vllm") == [before]
        # Nothing that says what a thread has seen expires (only the poll's interval
        # gate and a day's runner minutes are meant to).
        meant = (f"{NAMESPACE}:watch-poll-gate", f"{NAMESPACE}:watch-minutes:")
        expiring = [k for k in map(bytes.decode, ctx.store.redis.scan_iter(
            match=f"{NAMESPACE}:watch*")) if not k.startswith(meant)
            and ctx.store.redis.ttl(k) != -1]
        assert expiring == []

        # The tick repeated after the restart runs nothing again and keeps the row.
        assert tick(ctx) == 0
        assert len(runs(ctx, "0.21.0")) == 1
        # The next release runs once, however many ticks ask, and adds its row.
        feed.publish("vllm", "0.22.0", "2026-03-01")
        assert tick(ctx) == 1
        assert tick(ctx) == 0
        finish(ctx, "0.22.0", "0.21.0", 1.0)
        after = watches.get(REPO, 42)
        assert after is not None
        assert [r.release for r in after.rows] == ["0.21.0", "0.22.0"]
        assert after.rows[0] == before.rows[0]
