"""End to end, with real parts: a signed webhook -> uvicorn -> Redis -> real Celery workers
(a triage worker that talks to the fake GitHub, a "GPU" worker on the cpu queue running the
transformers engine) -> exactly one comment, edited from acknowledgement to final report.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.services import Uvicorn, Worker, settings_env, wait_for
from tests.report.layout import assert_layout, first_screen, sections
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.web.app import create_app
from triagebot.web.signature import sign

# Measured figures go to the log: pytest shows them with a failure or with --log-cli-level=INFO.
log = logging.getLogger(__name__)


ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "webhooks"
SECRET = "end-to-end-secret"
# Small enough for a 2-core CI machine: eager only, two runs per cell, short outputs.
COMMAND = "@triagebot repro engine=transformers modes=eager runs=2 prompts=2 max_tokens=24"


@pytest.fixture
def clocks() -> dict[str, Any]:
    """Settings a test may replace (by parametrizing `clocks`); the tests' short ones."""
    return {}


@pytest.fixture
def service(fake_github: FakeGitHub, namespace: str, tmp_path: Path,
            clocks: dict[str, Any]) -> Iterator[dict[str, Any]]:
    settings = make_settings(
        namespace, github_api_url=fake_github.base_url, app_id=fake_github.app_id,
        app_private_key=fake_github.private_key_pem, webhook_secrets=[SECRET],
        data_dir=tmp_path / "jobs", env_cache_dir=tmp_path / "envs", run_local=True,
        escalate=False, public_url="http://triagebot.test",
        docs_url="https://docs.triagebot.test/", **clocks)
    fake_github.add_issue(REPO, 42, "GLM-OCR: MTP slower under CUDA graphs",
                          (ROOT / "samples" / "glm-ocr-mtp-graph.md").read_text(),
                          author="reporter")
    fake_github.set_permission(REPO, "maint", "write")
    triage = Worker("triage", settings_env(settings, github=True), tmp_path / "triage.log",
                    f"triage-{namespace}@test")
    gpu = Worker("gpu-cpu", settings_env(settings, github=False), tmp_path / "gpu.log",
                 f"gpu-{namespace}@test")
    with contextlib.ExitStack() as stack:
        stack.callback(triage.stop)
        stack.callback(gpu.stop)
        web = stack.enter_context(Uvicorn(create_app(settings)))
        yield {"settings": settings, "web": web, "triage": triage, "gpu": gpu,
               "store": JobStore(settings), "fake": fake_github}


def deliver(service: dict[str, Any], body: str = COMMAND,
            number: int = 42) -> tuple[int, httpx.Response]:
    """Post `body` as maint's comment on issue `number` of the fake, and deliver GitHub's
    webhook for it."""
    comment_id = service["fake"].add_comment(REPO, number, body, "maint")
    payload = json.loads((FIXTURES / "issue_comment.created.json").read_text())
    payload["comment"].update(id=comment_id, body=body)
    payload["comment"]["user"]["login"] = "maint"
    payload["sender"]["login"] = "maint"
    payload["issue"]["number"] = number
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION_ID}
    raw = json.dumps(payload).encode()
    response = httpx.post(f"{service['web'].url}/webhook", content=raw, headers={
        "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(SECRET, raw), "Content-Type": "application/json"},
        timeout=10)
    return comment_id, response


def logs(service: dict[str, Any]) -> str:
    return (f"--- triage worker ---\n{service['triage'].tail()}\n"
            f"--- gpu worker ---\n{service['gpu'].tail()}")


def finished_job(service: dict[str, Any], timeout: float) -> JobRecord:
    store: JobStore = service["store"]

    def published() -> JobRecord | None:
        jobs = store.thread_jobs(REPO, 42)
        return jobs[0] if jobs and jobs[0].published else None

    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    assert isinstance(job, JobRecord)
    found = wait_for(published, timeout, f"job {job.id} to be published",
                     lambda: logs(service))
    assert isinstance(found, JobRecord)
    return found


def bot_comments(fake: FakeGitHub) -> list[Any]:
    return [c for c in fake.comments(REPO, 42) if c.author == "triagebot[bot]"]


# The progress line the CLI prints (`triagebot.progress.describe`), as the App shows it.
STAGE = (r"Now: (round \d+ · cell \d+ of \d+: .+ · \d+/\d+ runs|"
         r"analysing the runs|preparing|starting the engine)")


def job_page_stages(service: dict[str, Any], timeout: float) -> list[str]:
    """The distinct "Now: ..." lines the job page showed, polled until the job is done."""
    store: JobStore = service["store"]
    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = httpx.get(f"{service['web'].url}/jobs/{job.id}", timeout=10)
        assert page.status_code == 200, page.text
        found = re.search(r"Now: [^<]*", html.unescape(page.text))
        if found and found.group(0) not in seen:
            seen.append(found.group(0).strip())
        if store.require(job.id).published:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"job {job.id} did not finish in {timeout} s\n{logs(service)}")


def test_comment_to_one_report(service: dict[str, Any]) -> None:
    comment_id, response = deliver(service)
    assert response.status_code == 202, response.text
    page_stages = job_page_stages(service, timeout=300)
    job = finished_job(service, timeout=300)
    fake: FakeGitHub = service["fake"]
    assert job.state == "done", job.error
    assert job.attempts == 1 and job.outcome in ("reproduced", "not_reproduced",
                                                  "inconclusive")
    comments = bot_comments(fake)
    assert len(comments) == 1
    body = comments[0].body
    assert body.startswith(f"<!-- triagebot:v1 job={job.id} -->")
    assert "Queued" not in body and "Running" not in body
    assert job.headline and job.headline.split(":")[0] in body
    # The comment is laid out as report.md is: the answer on its first screen (the
    # runner's docs page linked), the rest in collapsed sections, the job line last.
    assert_layout(body)
    assert "](<https://docs.triagebot.test/runners/" in first_screen(body)
    assert body.rstrip().splitlines()[-1].startswith("Job [`")
    # The command to rerun it names the thread on the GitHub this deployment reads.
    assert f"triagebot repro {fake.web_url}/acme/engine/issues/42" in body
    # Created once (the acknowledgement), then only edited: progress and the report.
    creates = fake.calls_to("POST", r"/repos/acme/engine/issues/42/comments")
    edits = fake.calls_to("PATCH", rf"/repos/acme/engine/issues/comments/{comments[0].id}")
    assert len(creates) == 1 and len(edits) >= 2
    first_edit_bodies = [c.body["body"] for c in edits]
    assert any("Running" in b for b in first_edit_bodies[:-1])
    # Its progress line is the CLI's (`triagebot.progress.describe`): the round, the cell
    # out of how many, the runs so far and the time left.
    stages = [m.group(0) for b in first_edit_bodies[:-1]
              if (m := re.search(r"Now: .*", b))]
    assert stages, first_edit_bodies
    assert all(re.match(STAGE, s) for s in stages), stages
    assert ("triagebot[bot]", "+1") in fake.reactions(comment_id)
    assert ("triagebot[bot]", "rocket") in fake.reactions(comment_id)
    # The job page showed the same stages while it ran, in the same words.
    assert page_stages, "the job page never showed what the runner was doing"
    assert set(stages) & set(page_stages), (stages, page_stages)
    assert all(re.match(STAGE, s) for s in page_stages), page_stages
    # The job page shows the report once done.
    page = httpx.get(f"{service['web'].url}/jobs/{job.id}.json", timeout=10).json()
    assert page["state"] == "done" and page["report"]
    # Whole on the HTML page: every collapsed section, each rendered as markdown inside.
    shown = httpx.get(f"{service['web'].url}/jobs/{job.id}", timeout=10).text
    for title in sections(page["report"]):
        assert f"<details><summary>{html.escape(title, quote=False)}</summary>" in shown
    assert "<table>" in shown.split("<summary>Cells</summary>", 1)[1]


def test_gpu_worker_killed_mid_cell_reruns_it_and_reports_once(
        service: dict[str, Any], redis_client: Any) -> None:
    store: JobStore = service["store"]
    settings: Settings = service["settings"]
    assert deliver(service)[1].status_code == 202
    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    # Wait until one run is stored and the next cell is under way, then kill the pool
    # process running it (the Celery main process stays and requeues the message).
    wait_for(lambda: store.runs.results(job.id) and store.require(job.id).current, 240,
             "a first stored run", lambda: logs(service))
    children = service["gpu"].pool_children()
    assert children, logs(service)
    stored_before = sum(len(v) for v in store.runs.results(job.id).values())
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    done = finished_job(service, timeout=300)
    assert done.state == "done", f"{done.error}\n{logs(service)}"
    assert done.attempts == 2
    comments = bot_comments(service["fake"])
    assert len(comments) == 1 and comments[0].body.startswith(
        f"<!-- triagebot:v1 job={job.id} -->")
    # Runs stored before the kill were kept, not run again: every cell has exactly the
    # runs it asked for, none twice.
    results = store.runs.results(job.id)
    plan = store.plan(job.id)
    assert stored_before >= 1
    assert set(results) == {c.cell_id for c in plan.cells}
    for cell_results in results.values():
        assert sum(len(r.runs) for r in cell_results) == 2
    assert not list(redis_client.scan_iter(match=settings.key("job", job.id, "lock")))


def test_gpu_pool_process_terminated_mid_cell_stops_the_cell_and_reruns_the_job(
        service: dict[str, Any]) -> None:
    # Celery ends a pool process with SIGTERM (cold shutdown, a revoke with terminate, the
    # first step of a hard time limit). Before, it died at once and the cell's script, in
    # a session of its own, ran on; now the script's tree is stopped first, and the
    # process still dies by SIGTERM, so Celery queues the job again as for a lost worker.
    from triagebot.run import leftovers

    store: JobStore = service["store"]
    settings: Settings = service["settings"]
    gpu: Worker = service["gpu"]
    scope = leftovers.scope_of(settings.env_cache_dir)
    assert deliver(service)[1].status_code == 202
    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    held: dict[str, Any] = {}

    def a_cell_running() -> bool:
        for child in gpu.pool_children():
            if tree := leftovers.started_by(scope, child):
                held.update(child=child, tree=tree)
                return True
        return False

    deadline = time.monotonic() + 240
    while not a_cell_running():
        assert time.monotonic() < deadline, logs(service)
        time.sleep(0.02)
    os.kill(held["child"], signal.SIGTERM)
    wait_for(lambda: all(not Path(f"/proc/{p}").exists() or
                         Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
                         == "Z" for p in held["tree"]), 30, "the cell's processes to end",
             lambda: logs(service))
    assert "stopped the" in gpu.tail(200) or "no process of the run" in gpu.tail(200)
    done = finished_job(service, timeout=300)
    assert done.id == job.id and done.state == "done", f"{done.error}\n{logs(service)}"
    assert done.attempts == 2
    assert len(bot_comments(service["fake"])) == 1


# The production clocks of lock, heartbeat and reaper: the recovery bound is about them.
PRODUCTION_CLOCKS = {"lock_ttl_s": 30, "heartbeat_s": 10.0, "reap_interval_s": 10.0}


@pytest.mark.parametrize("clocks", [PRODUCTION_CLOCKS])
def test_whole_gpu_worker_killed_is_recovered_within_a_minute(
        service: dict[str, Any], tmp_path: Path, namespace: str) -> None:
    # Issue 15, defect 3: with the whole worker SIGKILLed nothing acknowledged or requeued
    # its message, and the job stayed "running" until the visibility timeout (hours).
    store: JobStore = service["store"]
    settings: Settings = service["settings"]
    assert deliver(service)[1].status_code == 202
    job = wait_for(lambda: store.thread_jobs(REPO, 42), 30, "the job record",
                   lambda: logs(service))[0]
    wait_for(lambda: store.require(job.id).state == "running"
             and store.require(job.id).runs_done >= 1, 240, "a first run",
             lambda: logs(service))
    gpu: Worker = service["gpu"]
    os.killpg(gpu.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    gpu.proc.wait()
    # A new runner comes up at once, as an orchestrator would restart it; only the
    # reaper can hand it the job, since the dead worker's message stays unacknowledged.
    replacement = Worker("gpu-cpu", settings_env(settings, github=False),
                         tmp_path / "gpu-2.log", f"gpu2-{namespace}@test")
    service["gpu"] = replacement
    try:
        wait_for(lambda: store.require(job.id).reaped >= 1
                 and store.require(job.id).state in ("queued", "running"), 90,
                 "the reaper to requeue the job", lambda: logs(service))
        recovered = time.monotonic() - killed
        done = finished_job(service, timeout=300)
    finally:
        replacement.stop()
    log.info(f"whole GPU worker SIGKILL: job requeued after {recovered:.1f} s "
          f"(lock {settings.lock_ttl_s} s, reap every {settings.reap_interval_s} s)")
    assert recovered < 60
    assert done.state == "done", f"{done.error}\n{logs(service)}"
    assert done.reaped == 1 and done.attempts == 2
    comments = bot_comments(service["fake"])
    assert len(comments) == 1 and comments[0].body.startswith(
        f"<!-- triagebot:v1 job={job.id} -->")
