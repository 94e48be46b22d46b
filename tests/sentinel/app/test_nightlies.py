"""`[sentinel] nightly_index`: beat's poll reads that index (a static PEP 503 page served on
127.0.0.1, as wheels.vllm.ai/nightly is) beside the release feed, and queues a sentinel run
for a new nightly build against the last release, installed from that index; without it
a nightly is never queued."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.release_feed import serve_feed
from tests.watch.triage_side import context, settings_for
from triagebot.jobs.record import JobRecord
from triagebot.jobs.sentinels import SentinelStore
from triagebot.workers import sentinel
from triagebot.workers.sentinel_runner import SentinelRunSpec
from triagebot.workers.triage_facts import TriageContext

NIGHTLY = "0.21.0.dev202602150930"


def _tick(ctx: TriageContext) -> int:
    """One beat tick with the sentinel's poll due."""
    ctx.store.redis.delete(ctx.settings.key("sentinel-poll-gate"))
    with httpx.Client(timeout=10) as http:
        return sentinel.poll(ctx, http)


def _runs(ctx: TriageContext) -> list[JobRecord]:
    return [j for j in ctx.store.thread_jobs(REPO, 0) if j.sentinel is not None]


def _follow(ctx: TriageContext, config: str, fake_github: FakeGitHub) -> None:
    fake_github.set_file(REPO, ".github/triagebot.toml", config)
    SentinelStore(ctx.store.redis, ctx.settings.namespace).enrol(REPO, INSTALLATION_ID)


def test_a_nightly_is_run_against_the_last_release_from_the_named_index(
        namespace: str, fake_github: FakeGitHub, tmp_path: Path) -> None:
    with serve_feed() as pypi, serve_feed(html=True) as nightly:
        ctx = context(settings_for(namespace, fake_github, pypi.url, tmp_path))
        _follow(ctx, '[sentinel]\nauto = true\nrunners = ["h100"]\n'
                f'nightly_index = "{nightly.url}"\n', fake_github)
        pypi.publish("vllm", "0.20.1", "2026-01-02")
        assert _tick(ctx) == 0  # the newest release is where the sentinel starts
        nightly.publish("vllm", NIGHTLY, local="+g1a2b3c4.cu129")

        assert _tick(ctx) == 1
        (run,) = _runs(ctx)
        assert run.sentinel is not None
        spec = SentinelRunSpec.model_validate_json(run.sentinel)
        assert (spec.release, spec.previous, spec.index) == (NIGHTLY, "0.20.1", nightly.url)
        assert _tick(ctx) == 0  # polled again: nothing is queued twice
        assert len(_runs(ctx)) == 1


def test_without_a_nightly_index_only_releases_run(
        namespace: str, fake_github: FakeGitHub, tmp_path: Path) -> None:
    with serve_feed() as pypi, serve_feed(html=True) as nightly:
        ctx = context(settings_for(namespace, fake_github, pypi.url, tmp_path))
        _follow(ctx, '[sentinel]\nauto = true\nrunners = ["h100"]\n', fake_github)
        pypi.publish("vllm", "0.20.1", "2026-01-02")
        assert _tick(ctx) == 0
        nightly.publish("vllm", NIGHTLY, local="+g1a2b3c4.cu129")
        assert _tick(ctx) == 0
        assert not nightly.requests
        pypi.publish("vllm", "0.21.0", "2026-03-01")
        assert _tick(ctx) == 1
        (run,) = _runs(ctx)
        assert run.sentinel is not None
        spec = SentinelRunSpec.model_validate_json(run.sentinel)
        assert (spec.release, spec.previous, spec.index) == ("0.21.0", "0.20.1", "")
