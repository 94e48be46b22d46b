"""Liveness and readiness.

`/healthz` says the process serves requests. `/readyz` says a delivery accepted now would
be worked on: Redis answers, and the triage queue and every runner kind's queue have a
worker that sent a heartbeat recently. The body says which are served, per kind.
"""

from __future__ import annotations

import redis
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from triagebot.web.deps import service_of
from triagebot.workers import task_queues

router = APIRouter()


@router.get("/healthz")
async def healthz() -> JSONResponse:
    return JSONResponse({"ok": True})


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    """200 when Redis answers and every queue (triage and each runner kind) has a worker."""
    service = service_of(request)
    settings = service.settings
    max_age = settings.worker_heartbeat_max_age_s
    try:
        beats = service.jobs.worker_beats()
    except redis.RedisError as exc:
        return JSONResponse({"ok": False, "reason": f"redis unreachable ({type(exc).__name__})"},
                            status_code=503)
    live = {name: queues for name, (age, queues) in beats.items() if age <= max_age}
    served = {q for queues in live.values() for q in queues}
    runners = {kind: settings.queue_for(kind) in served for kind in settings.gpu_kinds}
    body = {"workers": len(live), "triage": task_queues.TRIAGE_QUEUE in served, "runners": runners}
    missing = ([task_queues.TRIAGE_QUEUE] if not body["triage"] else []) + [
        settings.queue_for(kind) for kind, up in runners.items() if not up]
    if missing:
        return JSONResponse({"ok": False, **body, "reason": (
            f"no worker heartbeat in the last {max_age} s for {', '.join(missing)}")},
            status_code=503)
    return JSONResponse({"ok": True, **body})
