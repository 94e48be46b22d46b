"""`GET /deliveries/failed`: the events the triage worker gave up on, newest first, and
their JSON, so a maintainer sees what was lost and redelivers it from GitHub.

Each row names the delivery id GitHub lists under the App's "Advanced" settings, where
"Redeliver" sends it again; the ingress takes a failed delivery's id again (see
`triagebot.jobs.deliveries`). A private repository is not named here, since the page
needs no key: its delivery id is enough to find it on GitHub.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from triagebot.jobs.deliveries import DeliveryLog, FailedEvent
from triagebot.web.deps import service_of
from triagebot.web.pages import HEADERS, templates
from triagebot.web.service import Service

SHOWN = 50
PRIVATE = "(a private repository)"

router = APIRouter()


def _rows(service: Service) -> tuple[list[dict[str, Any]], int]:
    try:
        log = DeliveryLog(service.settings, service.redis)
        failures, total = log.recent_failures(SHOWN), log.failed_count()
    except redis.RedisError:
        raise HTTPException(status_code=503, detail="the job store is unavailable") from None
    return [_row(f) for f in failures], total


def _row(failure: FailedEvent) -> dict[str, Any]:
    hidden = failure.private
    return {"delivery": failure.delivery, "event": f"{failure.event}.{failure.action}",
            "repo": PRIVATE if hidden else failure.repo,
            "number": None if hidden else failure.number, "reason": failure.reason,
            "at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(failure.at))}


@router.get("/deliveries/failed.json")
def failed_json(request: Request) -> JSONResponse:
    rows, total = _rows(service_of(request))
    return JSONResponse({"failed": rows, "total": total}, headers=HEADERS)


@router.get("/deliveries/failed", response_class=HTMLResponse)
def failed_page(request: Request) -> HTMLResponse:
    service = service_of(request)
    rows, total = _rows(service)
    html = templates.get_template("failed.html").render(rows=rows, total=total, shown=SHOWN)
    return HTMLResponse(html, headers=HEADERS)
