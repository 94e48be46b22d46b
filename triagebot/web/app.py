"""The ingress application: a factory, so settings are explicit and nothing runs at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from triagebot.settings import Settings
from triagebot.web import failures_page, health, jobs_page, metrics_route, webhook
from triagebot.web.service import Service


def create_app(settings: Settings, *, redis_client: redis.Redis | None = None) -> FastAPI:
    """The FastAPI app for `settings`.

    Raises SettingsError without a webhook secret: an ingress that accepts unsigned
    deliveries must not start. A Redis client passed in is used as it is and left open;
    one built here (on first use) is closed at shutdown. The webhook's asyncio client is
    always built here, from `settings.redis_url`.
    """
    settings.require_webhook()
    service = Service(settings, redis_client=redis_client)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Build the helpers (no connection yet) before the first delivery.
        await run_in_threadpool(service.prepare)
        try:
            yield
        finally:
            await service.aclose()

    # Prometheus metrics and one log line per delivery are the service's telemetry;
    # FastAPI's OpenTelemetry hooks would otherwise look up global providers on every
    # request (a measurable share of a delivery's CPU), and trace each one if some
    # library set a provider.
    app = FastAPI(title="triagebot", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan,
                  telemetry={"tracing": False, "metrics": False, "logs": False})
    app.state.service = service
    app.add_middleware(webhook.WebhookRoute)
    for module in (health, metrics_route, jobs_page, failures_page):
        app.include_router(module.router)
    return app
