"""`triagebot bisect` end to end over a local package index of a tiny engine: twenty
releases (speculation turns slower at a known one, one build does not import), daily
nightlies between the last good and the first bad release, and per-commit wheels in a
simple-API index per commit, with the fake GitHub server answering the compare API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bisect.tiny_engine import (
    BROKEN,
    CHANGE,
    CHANGE_NIGHTLY,
    COMMITS,
    CULPRIT,
    CULPRIT_AT,
    LAST_GOOD,
    NIGHTLIES,
    NO_WHEEL,
    RELEASES,
    REPORT,
    build_index,
    compare,
    compare_shas,
    serve_commit_index,
)
from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub

TRIAGEBOT = Path(sys.executable).parent / "triagebot"
WORDS = ["modes=eager", "runs=4", "warmups=0", "max_tokens=32", "prompts=1"]


def _bisect(tmp_path: Path, *words: str, nightlies: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    report = tmp_path / "report.md"
    report.write_text(REPORT)
    index = build_index(tmp_path / "index", nightlies=nightlies)
    return subprocess.run(
        [str(TRIAGEBOT), "bisect", str(report), *WORDS, *words, "--find-links", str(index),
         "--cache", str(tmp_path / "envs"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, **(env or {})})


def _github(fake: FakeGitHub, *, template: str | None) -> list[str]:
    compare(fake, REPO)
    if template is not None:
        fake.set_file(REPO, ".github/triagebot.toml", f'[bisect]\ncommit_index = "{template}"\n')
    return ["--repo", REPO, "--github-url", fake.base_url]


def test_releases_then_nightlies_then_the_first_bad_commit(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    with serve_commit_index(tmp_path / "commits") as template:
        proc = _bisect(tmp_path, *_github(fake_github, template=template),
                       env={"TRIAGEBOT_GITHUB_TOKEN": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # The answer names the culprit commit and its PR; the levels above say how it narrowed.
    assert f"**first bad: {CULPRIT[:10]}**, last good: {COMMITS[CULPRIT_AT - 1]['sha'][:10]}" in out
    assert "**Culprit:** [[Spec Decode] ngram: look up every step (#3013)]" in out
    assert f"https://github.com/{REPO}/pull/3013" in out
    day_before = NIGHTLIES[NIGHTLIES.index(CHANGE_NIGHTLY) - 1]
    assert (f"releases {LAST_GOOD} .. {CHANGE}, then nightlies {day_before} .. "
            f"{CHANGE_NIGHTLY}") in out
    assert "### Releases" in out and "### Nightlies" in out and "### Commits" in out
    run = json.loads((tmp_path / "out" / "bisect.json").read_text())
    levels = [lv["range"]["level"] for lv in run["earlier"]] + [run["range"]["level"]]
    assert levels == ["release", "nightly", "commit"]
    release = run["earlier"][0]
    assert release["outcome"]["first_new"] == CHANGE
    assert {s["point"]: s["verdict"] for s in release["steps"]}[BROKEN] == "skip"
    nightly = run["earlier"][1]
    assert nightly["outcome"]["first_new"] == CHANGE_NIGHTLY
    assert nightly["range"]["points"] == [LAST_GOOD, *NIGHTLIES, CHANGE]
    # The nightlies' days (01-04 .. 01-05) hold six commits; the last one before is good.
    assert run["range"]["points"] == [COMMITS[8]["sha"]] + [c["sha"] for c in COMMITS[9:15]]
    assert run["culprit"]["sha"] == CULPRIT
    # The commit without a wheel is the first probe: a skip, never a guess.
    [skipped] = [s for s in run["steps"] if s["point"] == NO_WHEEL]
    assert skipped["verdict"] == "skip" and "build/install failed" in skipped["reason"]
    # Each step shows its measured ratio with its interval and verdict.
    assert "spec/no_spec" in out or "x [" in out
    # Candidates come from the same compare answer, the spec-decode commit first.
    assert "1. [[Spec Decode] ngram: look up every step (#3013)]" in out
    # Rerunning over the same folder resumes every level: nothing is run again.
    again = _bisect(tmp_path, "--repo", REPO, "--github-url", fake_github.base_url,
                    "--commit-index", template)
    assert again.returncode == 0 and "resuming after" in again.stderr, again.stderr
    assert json.loads((tmp_path / "out" / "bisect.json").read_text())["steps"] == run["steps"]


def test_without_per_commit_builds_it_stops_at_nightlies_and_ranks(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    proc = _bisect(tmp_path, *_github(fake_github, template=None))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"**first bad: {CHANGE_NIGHTLY}**" in proc.stdout
    assert "no per-commit builds" in proc.stdout
    assert "1. [[Spec Decode] ngram: look up every step (#3013)]" in proc.stdout


def test_releases_only_without_github_says_so(tmp_path: Path) -> None:
    title = "ngram speculation is slower than no speculation"
    proc = _bisect(tmp_path, "--title", title, nightlies=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    previous = RELEASES[RELEASES.index(CHANGE) - 1]
    assert f"**first bad: {CHANGE}**, last good: {previous}" in proc.stdout
    # good and bad came from the report's own words, and the plan says so.
    assert f"good={RELEASES[0]} comes from the report" in proc.stdout
    assert "no nightly build lies between" in proc.stdout
    assert "no candidates: no GitHub repo to read commits from" in proc.stdout
    # The title decides the question, so the command to rerun carries it.
    assert f"--title '{title}'" in proc.stdout
    run = json.loads((tmp_path / "out" / "bisect.json").read_text())
    verdicts = {s["point"]: s["verdict"] for s in run["steps"]}
    assert verdicts[BROKEN] == "skip"
    skipped = next(s for s in run["steps"] if s["point"] == BROKEN)
    assert "build/install failed" in skipped["reason"]
    # ceil(log2 19) + 1 to confirm, + 1 for the skipped build.
    assert len(run["steps"]) <= 7


def test_an_inverted_range_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, f"good={RELEASES[-1]}", f"bad={RELEASES[0]}")
    assert proc.returncode == 3
    assert "regress=success" in proc.stderr
    assert not (tmp_path / "envs").exists()


def test_a_point_past_the_known_releases_is_refused(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, "good=0.14.0", "bad=0.33.0")
    assert proc.returncode == 3
    assert "past the newest known release, 0.25.0" in " ".join(proc.stderr.split())


def test_a_bad_commit_index_template_is_a_usage_error(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, "--commit-index", "https://wheels.example/{commit}")
    assert proc.returncode == 2
    assert "--commit-index" in proc.stderr and "{sha}" in proc.stderr


def test_two_shas_bisect_the_commits_between_directly(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    # Commits 7 .. 15: the first probe, the middle, is the commit without a wheel.
    good, bad = compare_shas(fake_github, REPO, 7, 15)
    with serve_commit_index(tmp_path / "commits") as template:
        proc = _bisect(tmp_path, f"good={good}", f"bad={bad}", "--commit-index", template,
                       *_github(fake_github, template=None), nightlies=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"**first bad: {CULPRIT[:10]}**, last good: {COMMITS[CULPRIT_AT - 1]['sha'][:10]}" in out
    assert "**Culprit:** [[Spec Decode] ngram: look up every step (#3013)]" in out
    assert "starts at commits" in out and "### Releases" not in out
    # Both ends were checked at their own builds before the search.
    assert f"The good end {good} at its own build: good" in out
    assert f"The bad end {bad} at its own build: bad" in out
    assert "1. [[Spec Decode] ngram: look up every step (#3013)]" in out
    run = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert run["earlier"] == [] and run["range"]["level"] == "commit"
    assert run["range"]["points"] == [c["sha"] for c in COMMITS[7:16]]
    assert run["culprit"]["sha"] == CULPRIT
    assert [e["verdict"] for e in run["ends"]] == ["good", "bad"]
    [skipped] = [s for s in run["steps"] if s["point"] == NO_WHEEL]
    assert skipped["verdict"] == "skip" and "build/install failed" in skipped["reason"]
    # Rerunning over the same folder resumes: the ends and steps are not run again.
    again = _bisect(tmp_path, f"good={good}", f"bad={bad}", "--commit-index", template,
                    "--repo", REPO, "--github-url", fake_github.base_url, nightlies=False)
    assert again.returncode == 0 and "checking the" not in again.stderr, again.stderr
    assert json.loads((tmp_path / "out" / "bisect.json").read_text())["steps"] == run["steps"]


def test_sha_ends_that_cannot_be_searched_are_refused_before_any_step(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    good, bad = compare_shas(fake_github, REPO, 8, 16)
    # Without a per-commit index: refused, naming the key, with the candidates ranked.
    proc = _bisect(tmp_path, f"good={good}", f"bad={bad}",
                   *_github(fake_github, template=None), nightlies=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "[bisect] commit_index" in " ".join(proc.stderr.split())
    assert "1. [[Spec Decode] ngram: look up every step (#3013)]" in proc.stdout
    # Without a repo to ask: refused, naming --repo.
    proc = _bisect(tmp_path, f"good={good}", f"bad={bad}", nightlies=False)
    assert proc.returncode == 3 and "--repo" in proc.stderr, proc.stderr
    # Inverted: GitHub says the head is behind the base.
    new, old = compare_shas(fake_github, REPO, 16, 8, status="behind")
    proc = _bisect(tmp_path, f"good={new}", f"bad={old}", "--commit-index",
                   "http://127.0.0.1:9/{sha}", *_github(fake_github, template=None),
                   nightlies=False)
    assert proc.returncode == 3 and "newer than bad" in proc.stderr, proc.stderr
    assert not (tmp_path / "envs").exists()


def test_an_end_that_is_not_what_it_says_is_a_clear_error(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    bad_good, bad = compare_shas(fake_github, REPO, CULPRIT_AT, 15)
    no_wheel, _ = compare_shas(fake_github, REPO, 11, 15)
    with serve_commit_index(tmp_path / "commits") as template:
        github = ["--commit-index", template, *_github(fake_github, template=None)]
        proc = _bisect(tmp_path, f"good={bad_good}", f"bad={bad}", *github, nightlies=False)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert f"the good end {bad_good} is bad at its own build" in " ".join(
            proc.stderr.split())
        proc = _bisect(tmp_path, f"good={no_wheel}", f"bad={bad}", *github,
                       "--out", str(tmp_path / "out2"), nightlies=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"the good end {no_wheel} cannot be judged: build/install failed" in said


def test_two_nightlies_start_at_the_nightly_level(tmp_path: Path) -> None:
    proc = _bisect(tmp_path, f"good={NIGHTLIES[0]}", f"bad={NIGHTLIES[-1]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"**first bad: {CHANGE_NIGHTLY}**" in proc.stdout
    assert "starts at nightlies" in proc.stdout and "### Releases" not in proc.stdout
    run = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert run["range"]["points"] == NIGHTLIES and run["earlier"] == []
    inverted = _bisect(tmp_path, f"good={NIGHTLIES[-1]}", f"bad={NIGHTLIES[0]}")
    assert inverted.returncode == 3 and "newer than bad" in inverted.stderr
