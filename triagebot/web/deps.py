"""How a route finds the app's shared parts."""

from __future__ import annotations

from starlette.requests import Request

from triagebot.web.service import Service


def service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service
