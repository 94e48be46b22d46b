"""The ingress application: a factory, so settings are explicit and nothing runs at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
from celery import Celery
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from triagebot.settings import Settings
from triagebot.web import health, jobs_page, metrics, webhook
from triagebot.web.service import Service


def create_app(settings: Settings, *, celery: Celery | None = None,
               redis_client: redis.Redis | None = None) -> FastAPI:
    """The FastAPI app for `settings`.

    Raises SettingsError without a webhook secret: an ingress that accepts unsigned
    deliveries must not start. Redis and Celery clients passed in are used as they are
    and left open; those built here (on first use) are closed at shutdown.
    """
    settings.require_webhook()
    service = Service(settings, celery=celery, redis_client=redis_client)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Build the Celery app (no connection yet) before the first delivery, which would
        # otherwise wait for its imports.
        await run_in_threadpool(service.prepare)
        try:
            yield
        finally:
            service.close()

    app = FastAPI(title="triagebot", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.state.service = service
    for module in (webhook, health, metrics, jobs_page):
        app.include_router(module.router)
    return app
