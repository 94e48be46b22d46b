"""`@triagebot watch` end to end: a signed webhook -> uvicorn -> Redis -> a triage worker
talking to the fake GitHub, Celery beat polling a release feed served on 127.0.0.1 (PEP
691 JSON), and a runner worker on the h100 queue that installs each release of the tiny
engine (the fake vLLM of the bisect tests, its speculation slow or fast per release)
from a local folder of wheels and measures it against the last release measured.

The thread starts reproduced (its repro job is written to the store as a runner would
leave it, at 0.20.1, where speculation is slow). Publishing releases then adds rows to
the sticky comment: 0.21.0 (slow: still reproduced, no new comment), 0.22.0 (fast:
fixed, one comment mentioning the reporter, the label), and, after the issue is closed
(nothing runs) and reopened, 0.22.1 (slow again: back). Two beat schedulers run all
along, and the runner worker is killed in the middle of one run: neither duplicates nor
loses a row.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bisect.tiny_engine import REPORT
from tests.fakes.app_service import app_service, logs, restart_runner
from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.release_feed import ReleaseFeed
from tests.fakes.services import wait_for
from tests.service.test_end_to_end import SECRET, deliver
from triagebot.analyze.findings import analyze
from triagebot.github.markers import has_marker
from triagebot.jobs.record import JobRecord, job_id
from triagebot.jobs.store import JobStore
from triagebot.jobs.watches import WatchRecord, WatchStore
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.run_result import RunMeasurement, RunResult
from triagebot.web.signature import sign

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"
WORDS = ["gpu=h100", "max_tokens=32", "modes=eager", "prompts=1", "runs=4", "version=0.20.1",
         "warmups=0"]
SLOW = {"0.20.1": True, "0.21.0": True, "0.22.0": False, "0.22.1": True}


@pytest.fixture
def service(fake_github: FakeGitHub, namespace: str,
            tmp_path: Path) -> Iterator[dict[str, Any]]:
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", REPORT,
                          author="reporter")
    with app_service(fake_github, namespace, tmp_path, gpu_kind="h100", slow=SLOW,
                     config="[watch]\nstop_after_fixed = 3\n") as service:
        service["watches"] = WatchStore(service["store"].redis, namespace)
        yield service


def reproduced_job(service: dict[str, Any]) -> JobRecord:
    """The thread's repro job as a runner leaves it: done, reproduced, its findings."""
    store: JobStore = service["store"]
    request = parse_report(REPORT.encode(), title="ngram slower than no speculation",
                           repo=REPO)
    plan = build_plan(request, parse_overrides(WORDS))
    command = " ".join(["repro", *WORDS])
    record = JobRecord(id=job_id(service["settings"].link_key, REPO, 42, "comment-1", command),
                       repo=REPO, number=42, installation_id=INSTALLATION_ID,
                       trigger="comment-1", requester="maint", command=command,
                       plan_hash=plan.plan_hash, gpu_kind="h100", cells=len(plan.cells))
    store.create(record, plan, request)
    rng = random.Random(0)
    results = {c.cell_id: [RunResult(
        cell_id=c.cell_id, engine="vllm", engine_version="0.20.1", status="ok",
        runs=[RunMeasurement(output_tokens=32, seconds=32 / v, tok_s=v) for v in (
            (60.0 if c.spec else 100.0) * rng.gauss(1, 0.01) for _ in range(2))])
        for _ in range(4)] for c in plan.cells}
    findings = analyze(plan, results, request=request)
    assert findings.outcome == "reproduced", findings.outcome_reason
    store.move(record.id, "running")
    store.runs.save_report(record.id, findings.model_dump_json(), findings.headline)
    return store.move(record.id, "done", outcome="reproduced", headline=findings.headline)


def rows(service: dict[str, Any], n: int) -> WatchRecord:
    def found() -> WatchRecord | None:
        rec = service["watches"].get(REPO, 42)
        return rec if rec is not None and len(rec.rows) >= n else None

    rec = wait_for(found, 600, f"{n} watch row(s)", lambda: logs(service))
    assert isinstance(rec, WatchRecord)
    return rec


def bot(service: dict[str, Any], key: str) -> list[Any]:
    return [c for c in service["fake"].comments(REPO, 42)
            if c.author == "triagebot[bot]" and has_marker(c.body, key)]


def issue_event(service: dict[str, Any], action: str) -> None:
    payload = json.loads((FIXTURES / f"issues.{action}.json").read_text())
    payload["issue"]["number"] = 42
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["sender"]["login"] = "maint"
    raw = json.dumps(payload).encode()
    answer = httpx.post(f"{service['web'].url}/webhook", content=raw, headers={
        "X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(SECRET, raw), "Content-Type": "application/json"},
        timeout=10)
    assert answer.status_code == 202, answer.text


def polls(service: dict[str, Any]) -> int:
    return service["triage"].log.read_text(errors="replace").count(
        "triagebot.watch_poll[") // 2  # received + succeeded


def test_a_watched_thread_hears_of_each_release_once(service: dict[str, Any]) -> None:
    job = reproduced_job(service)
    feed: ReleaseFeed = service["feed"]
    feed.publish("vllm", "0.20.1", "2026-01-02")
    _, answer = deliver(service, "@triagebot watch")
    assert answer.status_code == 202
    rec = wait_for(lambda: service["watches"].get(REPO, 42), 120, "the watch",
                   lambda: logs(service))
    assert (rec.comparison, rec.last, rec.runner) == ("spec/no_spec", "0.20.1", "h100")
    reply = wait_for(lambda: [c for c in service["fake"].comments(REPO, 42)
                              if "Watching `spec/no_spec`" in c.body], 60, "the reply")
    assert "`@triagebot unwatch` ends it" in reply[0].body

    # 0.21.0: still slow, so still reproduced; the sticky comment gains its row and
    # nothing new is posted.
    feed.publish("vllm", "0.21.0", "2026-02-01")
    rec = rows(service, 1)
    assert [(r.release, r.state) for r in rec.rows] == [("0.21.0", "reproduced")], rec.rows
    sticky = wait_for(lambda: [c for c in bot(service, f"job={job.id}") if "| 0.21.0 |"
                               in c.body], 60, "the Watch table", lambda: logs(service))
    assert "### Watch" in sticky[0].body
    assert bot(service, "watchstate=0.21.0") == []

    # 0.22.0: fast, so fixed: one comment for the change, mentioning the reporter, and
    # the label. The runner is killed once during this run: the run resumes on a new
    # worker and its row comes once.
    feed.publish("vllm", "0.22.0", "2026-03-01")
    store: JobStore = service["store"]
    run = wait_for(lambda: next((j for j in store.thread_jobs(REPO, 42)
                                 if j.trigger.startswith("watch-0.22.0")
                                 and j.state == "running" and j.runs_done > 0), None),
                   300, "the 0.22.0 run to be under way", lambda: logs(service))
    restart_runner(service)
    rec = rows(service, 2)
    assert [(r.release, r.state) for r in rec.rows][-1] == ("0.22.0", "fixed"), rec.rows
    changed = wait_for(lambda: bot(service, "watchstate=0.22.0"), 60, "the change comment")
    assert len(changed) == 1
    assert changed[0].body.split("\n", 1)[1].startswith("@reporter the watch on `spec/no_spec")
    assert "from **still reproduced** to **fixed** at 0.22.0" in changed[0].body
    assert "can be closed; triagebot does not close issues itself" in changed[0].body
    wait_for(lambda: "perf-watch: fixed" in service["fake"].labels(REPO, 42), 60, "the label")
    assert store.require(run.id).attempts >= 2

    # Closed: the watch pauses and nothing runs for 0.22.1 however many polls pass.
    issue_event(service, "closed")
    wait_for(lambda: service["watches"].get(REPO, 42).status == "paused", 60, "the pause")
    feed.publish("vllm", "0.22.1", "2026-04-01")
    seen = polls(service)
    wait_for(lambda: polls(service) >= seen + 3, 120, "three more polls")
    assert not [j for j in store.thread_jobs(REPO, 42) if j.trigger.startswith("watch-0.22.1")]

    # Reopened: it resumes, and 0.22.1 (slow again) is back.
    issue_event(service, "reopened")
    rec = rows(service, 3)
    assert rec.rows[-1].state == "back", rec.rows
    assert len(wait_for(lambda: bot(service, "watchstate=0.22.1"), 60, "the comment")) == 1
    wait_for(lambda: "perf-watch: back" in service["fake"].labels(REPO, 42), 60, "the label")

    # Two beats ticked all along: one run and one row per release, one Watch table.
    releases = [r.release for r in service["watches"].get(REPO, 42).rows]
    assert releases == ["0.21.0", "0.22.0", "0.22.1"]
    per_release = [re.sub(r"-h100-\d+$", "", j.trigger) for j in store.thread_jobs(REPO, 42)
                   if j.watch is not None and j.state == "done"]
    assert sorted(per_release) == ["watch-0.21.0", "watch-0.22.0", "watch-0.22.1"]
    assert len(bot(service, f"job={job.id}")) == 1
    # Never closed or reopened by the bot: no write to the issue itself.
    assert service["fake"].calls_to("PATCH", rf"/repos/{REPO}/issues/42$") == []
