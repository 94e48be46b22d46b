"""Liveness and readiness.

`/healthz` says the process serves requests. `/readyz` says a delivery accepted now would
be worked on: Redis answers, and the triage queue and every runner kind's queue have a
worker that sent a heartbeat recently and reports no problem (a triage worker whose App
credentials GitHub refuses reports one). The body says which are served, per kind, and
what the triage worker's problem is.
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
        beats = service.jobs.counters.worker_beats()
    except redis.RedisError as exc:
        return JSONResponse({"ok": False, "reason": f"redis unreachable ({type(exc).__name__})"},
                            status_code=503)
    live = {name: beat for name, beat in beats.items() if beat.age <= max_age}
    # A worker that reports a problem (a triage worker GitHub does not accept as the
    # App) serves nothing: what it takes would fail.
    served = {q for beat in live.values() if beat.problem is None for q in beat.queues}
    runners = {kind: settings.queue_for(kind) in served for kind in settings.gpu_kinds}
    body: dict[str, object] = {"workers": len(live),
                               "triage": task_queues.TRIAGE_QUEUE in served,
                               "runners": runners}
    problems = sorted({beat.problem for beat in live.values() if beat.problem
                       and task_queues.TRIAGE_QUEUE in beat.queues})
    if problems and not body["triage"]:
        body["github"] = problems[0]
    missing = ([task_queues.TRIAGE_QUEUE] if not body["triage"] else []) + [
        settings.queue_for(kind) for kind, up in runners.items() if not up]
    if missing:
        reasons = [f"the triage worker cannot act as the GitHub App: {problems[0]}"
                   ] if "github" in body else []
        silent = [q for q in missing if not (q == task_queues.TRIAGE_QUEUE and reasons)]
        if silent:
            reasons.append(f"no worker heartbeat in the last {max_age} s for "
                           f"{', '.join(silent)}")
        return JSONResponse({"ok": False, **body, "reason": "; ".join(reasons)},
                            status_code=503)
    return JSONResponse({"ok": True, **body})
