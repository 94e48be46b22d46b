"""`[watch] nightlies = true` with a `nightly_index`: beat's poll reads the nightly index
(a static PEP 503 page served on 127.0.0.1, as wheels.vllm.ai/nightly is) beside the
release feed, with the same conditional requests and error counts, and queues a watch
run for a new nightly build, dated by its build, installed from that index; the
release the nightly leads to still runs after it."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.release_feed import serve_feed
from tests.watch.triage_side import (
    context,
    finish,
    record,
    runs,
    settings_for,
    tick,
    watched,
    watches,
)
from triagebot.run.provision import install_commands
from triagebot.watch.models import WatchRunSpec

NIGHTLY = "0.21.0.dev202602150930"


def test_a_nightly_build_is_polled_queued_and_measured(
        namespace: str, fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", "-",
                          author="reporter")
    with serve_feed() as pypi, serve_feed(html=True) as nightly:
        fake_github.set_file(REPO, ".github/triagebot.toml",
                             f'[watch]\nnightlies = true\nnightly_index = "{nightly.url}"\n')
        ctx = context(settings_for(namespace, fake_github, pypi.url, tmp_path))
        watched(ctx)
        pypi.publish("vllm", "0.20.1", "2026-01-02")
        nightly.publish("vllm", NIGHTLY, local="+g1a2b3c4.cu129")
        nightly.publish("vllm", "0.20.1", local="+cu129")  # a release copy: not a nightly

        assert tick(ctx) == 1
        (run,) = runs(ctx, NIGHTLY)
        assert run.watch is not None
        spec = WatchRunSpec.model_validate_json(run.watch)
        assert (spec.release, spec.against, spec.date, spec.index) == (
            NIGHTLY, "0.20.1", "2026-02-15", nightly.url)
        # The runner installs it from the nightly index, beside PyPI.
        argv = install_commands("vllm", NIGHTLY, tmp_path / "env", uv="uv",
                                base_python="python3", commit_index=spec.index)[-1]
        assert argv[-3:] == ["--extra-index-url", nightly.url, f"vllm=={NIGHTLY}"]

        # Polled again: the index is asked conditionally, and nothing is queued twice.
        assert tick(ctx) == 0
        asked = [headers for path, headers in nightly.requests if path == "/simple/vllm/"]
        assert len(asked) == 2 and "If-None-Match" in asked[1]
        assert "text/html" in asked[0]["Accept"]

        finish(ctx, NIGHTLY, "0.20.1", 0.6)
        assert [(r.release, r.date) for r in record(ctx).rows] == [(NIGHTLY, "2026-02-15")]
        assert record(ctx).last == NIGHTLY

        # The release the nightly led to comes after it, and runs.
        pypi.publish("vllm", "0.21.0", "2026-03-01")
        assert tick(ctx) == 1
        (release_run,) = runs(ctx, "0.21.0")
        spec = WatchRunSpec.model_validate_json(release_run.watch or "")
        assert (spec.against, spec.index) == (NIGHTLY, "")

        # A nightly index answering something that is no index: counted, and kept quiet
        # about what it knew.
        nightly.broken = True
        assert tick(ctx) == 0
        assert watches(ctx).feed_errors() == {("vllm nightlies", "malformed"): 1}
