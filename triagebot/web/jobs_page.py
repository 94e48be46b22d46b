"""`GET /jobs/{id}`: a page a maintainer opens from the thread to watch a job, and its JSON.

Everything shown comes from an issue (title, command, report), so the page is rendered
with autoescaping on and a Content-Security-Policy that allows no script at all: the
report's markdown becomes HTML on the server and the charts are inline SVG.
"""

from __future__ import annotations

import re
import time
from typing import Any

import redis
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from triagebot.jobs.record import JOB_ID_CHARS, JobError, JobRecord
from triagebot.jobs.sentinels import SentinelStore, false_positive_rate
from triagebot.links import may_view
from triagebot.plan_model import Plan
from triagebot.web.deps import service_of
from triagebot.web.job_view import JobView, job_view
from triagebot.web.pages import HEADERS, templates
from triagebot.web.service import Service

JOB_ID = re.compile(rf"^[0-9a-f]{{{JOB_ID_CHARS}}}$")
REFRESH_S = 15

router = APIRouter()


def duration(seconds: float | None) -> str:
    """A short human duration: '45 s', '12 min', '2 h 05 min'."""
    if seconds is None:
        return "—"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(stamp))


def _load(service: Service, id_: str,
          key: str | None) -> tuple[JobRecord, str | None, int | None]:
    if not JOB_ID.fullmatch(id_):
        raise HTTPException(status_code=404, detail="no such job")
    try:
        record = service.jobs.get(id_)
        # A private job without its signed link looks exactly like a missing one.
        if record is None or not may_view(service.settings, record, key):
            raise HTTPException(status_code=404, detail="no such job")
        ahead = service.jobs.queued_ahead(record) if record.state == "queued" else None
        return record, service.jobs.runs.report(id_), ahead
    except redis.RedisError:
        raise HTTPException(status_code=503, detail="the job store is unavailable") from None


def _view(service: Service, record: JobRecord, report: str | None) -> JobView:
    store = service.jobs
    try:
        plan: Plan | None = store.plan(record.id)
    except JobError:
        plan = None
    try:
        stored = {cell: sum(len(r.runs) for r in results)
                  for cell, results in store.runs.results(record.id).items()}
        findings = store.runs.findings(record.id)
    except redis.RedisError:
        raise HTTPException(status_code=503, detail="the job store is unavailable") from None
    return job_view(record, plan, stored, findings, report)


def _sentinel_rate(service: Service, record: JobRecord) -> dict[str, Any] | None:
    """For a sentinel run (or a bisect it started): the sentinel's flags, how many of
    them maintainers marked `not-a-regression`, and the observed false-positive rate."""
    if record.sentinel is None and not record.trigger.startswith("sentinel-"):
        return None
    try:
        flags, marked = SentinelStore(service.jobs.redis,
                                      service.settings.namespace).counts()
    except redis.RedisError:
        return None
    rate = false_positive_rate(flags, marked)
    return {"flags": flags, "not_a_regression": marked,
            "false_positive_rate": None if rate is None else round(rate, 4)}


# The JSON route is declared first: `{job_id}` alone would also match `<id>.json`.
@router.get("/jobs/{job_id}.json")
def job_json(request: Request, job_id: str, key: str | None = None) -> JSONResponse:
    record, report, ahead = _load(service_of(request), job_id, key)
    data: dict[str, Any] = record.model_dump(mode="json")
    data.update(report=report, queued_ahead=ahead,
                sentinel=_sentinel_rate(service_of(request), record))
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str, key: str | None = None) -> HTMLResponse:
    service = service_of(request)
    record, report, ahead = _load(service, job_id, key)
    thread_url = (service.settings.thread_url(record.repo, record.number, record.is_pr)
                  if record.number else service.settings.thread_url(record.repo, 0)
                  .rsplit("/", 2)[0])
    html = templates.get_template("job.html").render(
        job=record, view=_view(service, record, report), queued_ahead=ahead,
        refresh_s=REFRESH_S, thread_url=thread_url,
        sentinel=_sentinel_rate(service, record),
        eta=duration(record.eta_s), created=_when(record.created_at),
        started=_when(record.started_at), finished=_when(record.finished_at))
    return HTMLResponse(html, headers=HEADERS)
