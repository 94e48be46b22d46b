"""`@triagebot bisect` end to end: a signed webhook -> uvicorn -> Redis -> a triage worker
talking to the fake GitHub and a runner worker on the h100 queue, over the tiny engine's
local package index (releases and nightlies) and its per-commit wheel index, which the
repo's `.github/triagebot.toml` names. One comment, edited after each step, ends as the
bisect section with the culprit commit."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bisect.tiny_engine import (
    BROKEN,
    CHANGE,
    CHANGE_NIGHTLY,
    CULPRIT,
    LAST_GOOD,
    RELEASES,
    REPORT,
    build_index,
    compare,
    compare_shas,
    serve_commit_index,
)
from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.services import Uvicorn, Worker, settings_env, wait_for
from tests.service.test_end_to_end import SECRET, bot_comments, deliver, finished_job, logs
from triagebot.jobs.store import JobStore
from triagebot.web.app import create_app
from triagebot.workers.runner_bisect import RedisSteps, steps_key

COMMAND = "@triagebot bisect modes=eager runs=4 warmups=0 max_tokens=32 prompts=1"


@pytest.fixture
def service(fake_github: FakeGitHub, namespace: str,
            tmp_path: Path) -> Iterator[dict[str, Any]]:
    settings = make_settings(
        namespace, github_api_url=fake_github.base_url, app_id=fake_github.app_id,
        app_private_key=fake_github.private_key_pem, webhook_secrets=[SECRET],
        data_dir=tmp_path / "jobs", env_cache_dir=tmp_path / "envs", run_local=False,
        gpu_kinds=["h100"], default_gpu="h100", public_url="http://triagebot.test",
        bisect_find_links=build_index(tmp_path / "index"))
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", REPORT,
                          author="reporter")
    fake_github.set_permission(REPO, "maint", "write")
    compare(fake_github, REPO)
    index = contextlib.ExitStack()
    template = index.enter_context(serve_commit_index(tmp_path / "commits"))
    fake_github.set_file(REPO, ".github/triagebot.toml",
                         f'[bisect]\ncommit_index = "{template}"\n')
    triage = Worker("triage", settings_env(settings, github=True), tmp_path / "triage.log",
                    f"triage-{namespace}@test")
    gpu = Worker("gpu-h100", settings_env(settings, github=False), tmp_path / "gpu.log",
                 f"gpu-{namespace}@test")
    with contextlib.ExitStack() as stack:
        stack.enter_context(index)
        stack.callback(triage.stop)
        stack.callback(lambda: service_gpu[0].stop())
        service_gpu = [gpu]
        web = stack.enter_context(Uvicorn(create_app(settings)))
        yield {"settings": settings, "web": web, "triage": triage, "gpu": gpu,
               "gpus": service_gpu, "store": JobStore(settings), "fake": fake_github,
               "tmp": tmp_path, "namespace": namespace}


def _steps(service: dict[str, Any], job_id: str) -> list[Any]:
    store: JobStore = service["store"]
    return RedisSteps(store.redis, steps_key(store, job_id), 600).load()


def test_bisect_comment_to_one_converging_comment(service: dict[str, Any]) -> None:
    _, response = deliver(service, COMMAND)
    assert response.status_code == 202, response.text
    job = finished_job(service, timeout=600)
    assert job.state == "done", f"{job.error}\n{logs(service)}"
    assert job.command.startswith(f"bisect good={RELEASES[0]} bad={RELEASES[-1]}")
    [comment] = bot_comments(service["fake"])
    body = comment.body
    # Releases, then nightlies, then the commits of the nightlies' days: the culprit.
    assert f"**first bad: {CULPRIT[:10]}**" in body
    assert (f"Narrowed from releases {LAST_GOOD} .. {CHANGE}, then nightlies" in body
            and f".. {CHANGE_NIGHTLY}." in body)
    assert "**Culprit:** [[Spec Decode] ngram: look up every step (#3013)]" in body
    assert "## Bisect" in body and "### Nightlies" in body and "### Commits" in body
    assert f"triagebot bisect {service['fake'].web_url}/acme/engine/issues/42" in body
    steps = _steps(service, job.id)
    assert {s.point: s.verdict for s in steps if s.level == "release"}[BROKEN] == "skip"
    assert {s.level for s in steps} == {"release", "nightly", "commit"}
    # The comment was edited as steps finished: some edit shows a step table but no answer.
    edits = service["fake"].calls_to("PATCH", rf"/repos/acme/engine/issues/comments/{comment.id}")
    partial = [c.body["body"] for c in edits if "| 1 |" in c.body["body"]
               and "In progress" in c.body["body"]]
    assert partial, [c.body["body"][:200] for c in edits]
    # The commits of the final bracket, ranked against the report's subject (ngram).
    assert "Candidates, ranked" in body
    assert body.index("1. [[Spec Decode] ngram: look up every step") < body.index(
        "2. [[Misc]")
    assert "https://github.com/acme/engine/pull/3013" in body
    page = httpx.get(f"{service['web'].url}/jobs/{job.id}.json", timeout=10).json()
    assert page["state"] == "done" and "Candidates, ranked" in page["report"]
    html = httpx.get(f"{service['web'].url}/jobs/{job.id}", timeout=10)
    assert html.status_code == 200 and "Bisect" in html.text


def test_bisect_comment_with_two_shas_searches_the_commits_between(
        service: dict[str, Any]) -> None:
    good, bad = compare_shas(service["fake"], REPO, 7, 15)
    _, response = deliver(service, f"{COMMAND} good={good} bad={bad}")
    assert response.status_code == 202, response.text
    job = finished_job(service, timeout=600)
    assert job.state == "done", f"{job.error}\n{logs(service)}"
    [comment] = bot_comments(service["fake"])
    body = comment.body
    assert f"**first bad: {CULPRIT[:10]}**" in body and "Narrowed from" not in body
    assert "starts at commits" in body and "### Releases" not in body
    assert f"The good end {good} at its own build: good" in body
    assert "**Culprit:** [[Spec Decode] ngram: look up every step (#3013)]" in body
    assert "1. [[Spec Decode] ngram: look up every step (#3013)]" in body
    assert {s.level for s in _steps(service, job.id)} == {"commit"}


def _started(service: dict[str, Any], steps: int) -> Any:
    """Ask for the bisect and wait until `steps` steps have finished; the job record."""
    store: JobStore = service["store"]
    assert deliver(service, COMMAND)[1].status_code == 202
    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    wait_for(lambda: len(_steps(service, job.id)) >= steps, 300, f"{steps} finished steps",
             lambda: logs(service))
    return job


def test_a_killed_runner_resumes_from_the_last_finished_step(service: dict[str, Any]) -> None:
    job = _started(service, 2)
    before = _steps(service, job.id)
    for pid in service["gpu"].pool_children():
        os.kill(pid, signal.SIGKILL)
    done = finished_job(service, timeout=600)
    assert done.state == "done", f"{done.error}\n{logs(service)}"
    assert done.attempts == 2
    after = _steps(service, job.id)
    assert after[:len(before)] == before
    # No point was run again after the crash except to confirm the answer.
    points = [s.point for s in after]
    assert len(points) - len(set(points)) <= 1


def test_cancel_mid_bisect_stops_it(service: dict[str, Any]) -> None:
    job = _started(service, 1)
    assert deliver(service, "@triagebot cancel")[1].status_code == 202
    done = finished_job(service, timeout=120)
    assert done.state == "cancelled", f"{done.state} {done.error}\n{logs(service)}"
    steps = len(_steps(service, job.id))
    bot = [c.body for c in bot_comments(service["fake"]) if f"job={job.id}" in c.body]
    assert bot and "Cancelled" in bot[0]
    assert steps < 5  # the search needs 5+ steps over this range; it stopped before
