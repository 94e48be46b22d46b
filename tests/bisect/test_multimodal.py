"""A bisect of a multimodal report on the cpu runner: each step installs the release's
multimodal environment, and a range with releases that have no multimodal lock is refused
before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import seed_path
from triagebot.bisect import envs, runner
from triagebot.bisect.ranges import BisectError, BisectRange
from triagebot.bisect.runner import (
    BisectRun,
    BisectSettings,
    Deeper,
    StepInputs,
    bisect,
    run_step,
)
from triagebot.engines.vllm_cpu import locked_releases, mm_releases
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.request_model import ReproRequest
from triagebot.run import vllm_cpu
from triagebot.run.provision import ProvisionError

OPTIONS = parse_overrides(["gpu=cpu"])


def _seed_001() -> ReproRequest:
    """Seed 001 (a multimodal report), read when a test runs: the corpus may be absent."""
    return parse_report(seed_path("001").read_bytes())


def _run(points: list[str]) -> BisectRun:
    return BisectRun(package="vllm-cpu", range=BisectRange.over("release", "regress", points))


def test_a_range_with_releases_without_a_multimodal_lock_is_refused_before_any_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[str] = []
    monkeypatch.setattr(runner, "run_step", lambda point, *a, **k: steps.append(point))
    points = locked_releases()
    without = [p for p in points if p not in mm_releases()]
    assert without and mm_releases()
    settings = BisectSettings(out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    with pytest.raises(BisectError) as err:
        bisect(_run(points), StepInputs(_seed_001(), OPTIONS, [], settings, log=lambda _m: None))
    words = str(err.value)
    assert f"Releases with a multimodal lock: {', '.join(mm_releases())}." in words
    assert f"have no multimodal lock ({', '.join(without)})" in words
    assert steps == [] and not (tmp_path / "out").exists()


def test_a_text_report_walks_the_same_range(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The refusal is the multimodal plan's, not the range's.
    text = parse_report(seed_path("000").read_bytes())
    asked: list[str] = []

    def step(point: str, *_a: object, **_k: object) -> runner.Step:
        asked.append(point)
        return runner.Step(point=point, verdict="skip", reason="not run here")

    monkeypatch.setattr(runner, "run_step", step)
    settings = BisectSettings(out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                              max_steps=1)
    bisect(_run(locked_releases()), StepInputs(text, OPTIONS, [], settings, log=lambda _m: None))
    assert asked


def test_a_multimodal_range_has_no_level_below_releases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    have = mm_releases()[-1]
    # Two points that both have a multimodal lock: the one from the cache's locks/.
    older = "0.24.0"
    cached = vllm_cpu.cache_locks(tmp_path / "cache")
    cached.mkdir(parents=True)
    (cached / f"vllm-cpu-{older}-mm.txt").write_text("")
    monkeypatch.setattr(runner, "run_step", lambda point, *a, **k: runner.Step(
        point=point, verdict="bad" if point == have else "good"))
    settings = BisectSettings(out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    deeper = Deeper(nightlies=lambda: pytest.fail("a multimodal bisect asked for nightlies"))
    done = bisect(_run([older, have]), StepInputs(_seed_001(), OPTIONS, [], settings,
                                                  log=lambda _m: None), deeper=deeper)
    assert done.range.level == "release"
    assert any("no nightly or commit level" in n for n in done.notes)


def test_a_step_installs_the_releases_multimodal_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    called: dict[str, object] = {}

    def provision(version: str, **kw: object) -> None:
        called.update(kw, version=version)
        raise ProvisionError("stopped here by the test")

    monkeypatch.setattr(vllm_cpu, "provision", provision)
    monkeypatch.setattr(envs, "ensure_lock", lambda *a, **k: pytest.fail(
        "a multimodal step wrote a text lock"))
    settings = BisectSettings(out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    step = run_step(mm_releases()[-1], StepInputs(_seed_001(), OPTIONS, [], settings,
                                                  log=lambda _m: None))
    assert called["version"] == mm_releases()[-1] and called["variant"] == "mm"
    assert step.verdict == "skip" and "stopped here by the test" in step.reason
