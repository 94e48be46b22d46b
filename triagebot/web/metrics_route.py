"""`GET /metrics`: the Prometheus text of the service's collector (`metrics.py`)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from triagebot.web.deps import service_of

router = APIRouter()


@router.get("/metrics")
def metrics(request: Request) -> Response:
    # A def route: the Redis reads run in the threadpool, not on the event loop.
    return Response(service_of(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)
