"""Liveness and readiness.

`/healthz` says the process serves requests. `/readyz` says a delivery accepted now would
be worked on: Redis answers, and some worker has sent a heartbeat recently.
"""

from __future__ import annotations

import redis
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from triagebot.web.deps import service_of

router = APIRouter()


@router.get("/healthz")
async def healthz() -> JSONResponse:
    return JSONResponse({"ok": True})


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    service = service_of(request)
    max_age = service.settings.worker_heartbeat_max_age_s
    try:
        service.redis.ping()
        ages = service.jobs.workers()
    except redis.RedisError as exc:
        return JSONResponse({"ok": False, "reason": f"redis unreachable ({type(exc).__name__})"},
                            status_code=503)
    live = sorted(name for name, age in ages.items() if age <= max_age)
    if not live:
        return JSONResponse({"ok": False,
                             "reason": f"no worker heartbeat in the last {max_age} s"},
                            status_code=503)
    return JSONResponse({"ok": True, "workers": len(live)})
