"""GET /jobs/{id} (HTML, escaped) and /jobs/{id}.json."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest
import redis

from tests.service.support import LINK_KEY
from triagebot.jobs.record import JobRecord, job_id
from triagebot.jobs.store import JobStore
from triagebot.links import job_url
from triagebot.plan_model import Plan
from triagebot.settings import Settings

HOSTILE_TITLE = "MTP slow <script>alert('title')</script>"
HOSTILE_COMMAND = "@triagebot repro model=<script>alert(1)</script>"
HOSTILE_REPORT = "## Verdict\n\n<img src=x onerror=alert(2)> spec/no_spec = 0.56x\n"


def make_job(store: JobStore, *, title: str = "MTP slower under CUDA graphs",
             command: str = "@triagebot repro", trigger: str = "comment-1",
             requester: str = "maint", private: bool = False) -> JobRecord:
    plan = Plan(engine="transformers", gpu_kind="h100", question="Is MTP slower?", cells=[])
    record = JobRecord(id=job_id(LINK_KEY, "acme/engine", 42, trigger, command),
                       repo="acme/engine", private=private, number=42, title=title,
                       trigger=trigger, requester=requester, command=command,
                       plan_hash=f"plan-{trigger}", gpu_kind="h100", cells=4,
                       runs_planned=20, eta_s=1500)
    created = store.create(record, plan, None)
    assert created.status == "created"
    return created.job


@pytest.fixture
def store(settings: Settings, redis_client: redis.Redis) -> JobStore:
    return JobStore(settings, redis_client)


def test_page_escapes_everything_from_the_issue(url: str, http: httpx.Client,
                                                store: JobStore) -> None:
    job = make_job(store, title=HOSTILE_TITLE, command=HOSTILE_COMMAND,
                   requester="<b>maint</b>")
    store.runs.save_report(job.id, "{}", HOSTILE_REPORT)
    response = http.get(f"{url}/jobs/{job.id}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    html = response.text
    assert "<script" not in html
    assert "<img" not in html
    assert "<b>maint" not in html
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;" in html
    assert "model=&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "acme/engine#42" in html
    assert 'href="https://github.com/acme/engine/issues/42"' in html


def test_page_of_a_queued_job_refreshes_and_shows_its_place(url: str, http: httpx.Client,
                                                            store: JobStore) -> None:
    first = make_job(store, trigger="comment-1")
    second = make_job(store, trigger="comment-2")
    html = http.get(f"{url}/jobs/{second.id}").text
    assert '<meta http-equiv="refresh" content="15">' in html
    assert "1 job ahead" in html
    assert "0 of 20" in html
    assert "25 min" in html
    assert "No report yet." in html
    assert "0 jobs ahead" in http.get(f"{url}/jobs/{first.id}").text


def test_page_of_a_finished_job_stops_refreshing(url: str, http: httpx.Client,
                                                 store: JobStore) -> None:
    job = make_job(store)
    store.move(job.id, "running", runs_done=3)
    store.move(job.id, "done", runs_done=20, outcome="reproduced",
               headline="MTP is 0.56x of no-spec under CUDA graphs (n=10 each)")
    store.runs.save_report(job.id, "{}", "## Reproduced\n")
    html = http.get(f"{url}/jobs/{job.id}").text
    assert 'http-equiv="refresh"' not in html
    assert "reproduced" in html
    assert "MTP is 0.56x of no-spec under CUDA graphs (n=10 each)" in html
    assert "20 of 20" in html
    # Issue 15, defect 8: the report was raw markdown in a <pre>.
    assert '<article class="report" id="report"><h2>Reproduced</h2>' in html
    assert 'class="badge tone-good" id="verdict">reproduced<' in html
    assert "ahead" not in html


def test_json(url: str, http: httpx.Client, store: JobStore) -> None:
    first = make_job(store, trigger="comment-1")
    second = make_job(store, title=HOSTILE_TITLE, trigger="comment-2")
    store.runs.save_report(second.id, "{}", HOSTILE_REPORT)
    data = http.get(f"{url}/jobs/{second.id}.json").json()
    assert data["id"] == second.id
    assert data["state"] == "queued"
    assert data["title"] == HOSTILE_TITLE
    assert data["report"] == HOSTILE_REPORT
    assert data["queued_ahead"] == 1
    assert JobRecord.model_validate({k: v for k, v in data.items()
                                     if k not in ("report", "queued_ahead")}) == second
    first_data = http.get(f"{url}/jobs/{first.id}.json").json()
    assert first_data["report"] is None
    assert first_data["queued_ahead"] == 0
    store.move(first.id, "running")
    assert http.get(f"{url}/jobs/{first.id}.json").json()["queued_ahead"] is None


@pytest.mark.parametrize("path", [
    "/jobs/0123456789abcdef0123456789abcdef",
    "/jobs/0123456789abcdef0123456789abcdef.json",
    "/jobs/0123456789ABCDEF0123456789ABCDEF",
    "/jobs/0123456789abcdef0123456789abcde",
    "/jobs/..%2F..%2Fetc",
    "/jobs/%3Cscript%3E.json",
])
def test_unknown_or_malformed_ids_are_404(path: str, url: str, http: httpx.Client,
                                          store: JobStore) -> None:
    make_job(store)
    assert http.get(f"{url}{path}").status_code == 404


def test_job_store_down_is_503(make_settings: Callable[..., Settings],
                               serve: Callable[..., str], http: httpx.Client) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = serve(make_settings(redis_url=f"redis://127.0.0.1:{port}/0"))
    assert http.get(f"{url}/jobs/0123456789abcdef0123456789abcdef").status_code == 503
    assert http.get(f"{url}/jobs/0123456789abcdef0123456789abcdef.json").status_code == 503


def test_private_job_pages_need_the_signed_link(url: str, http: httpx.Client,
                                                store: JobStore, settings: Settings) -> None:
    # Issue 15, defect 6: any job page opened with its (computable) id alone.
    job = make_job(store, private=True)
    link = job_url(settings, job)
    assert link.startswith(f"{settings.public_url}/jobs/{job.id}?key=")
    for path in (f"/jobs/{job.id}", f"/jobs/{job.id}.json", f"/jobs/{job.id}?key=",
                 f"/jobs/{job.id}?key={'0' * 32}", f"/jobs/{job.id}.json?key={'f' * 32}"):
        response = http.get(f"{url}{path}")
        assert response.status_code == 404, path
        assert response.json() == {"detail": "no such job"}  # same as a missing job
    key = link.split("?key=")[1]
    assert http.get(f"{url}/jobs/{job.id}", params={"key": key}).status_code == 200
    assert http.get(f"{url}/jobs/{job.id}.json", params={"key": key}).json()["id"] == job.id
    public = make_job(store, trigger="comment-2")
    assert job_url(settings, public) == f"{settings.public_url}/jobs/{public.id}"
    assert http.get(f"{url}/jobs/{public.id}").status_code == 200


def test_a_queued_job_not_yet_counted_says_so(url: str, http: httpx.Client,
                                              store: JobStore) -> None:
    # Issue 27, item 10: before a runner counted its runs, the page read "runs 0 of 0".
    plan = Plan(engine="transformers", gpu_kind="h100", question="q", cells=[])
    record = JobRecord(id=job_id(LINK_KEY, "acme/engine", 42, "comment-9", "repro"),
                       repo="acme/engine", number=42, trigger="comment-9",
                       requester="maint", command="repro", plan_hash="p9", gpu_kind="h100",
                       cells=1)
    store.create(record, plan, None)
    html = http.get(f"{url}/jobs/{record.id}").text
    assert "0 of 0" not in html and "not started yet · 1 cell<" in html
