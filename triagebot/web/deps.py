"""How a route finds the app's shared parts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request

if TYPE_CHECKING:  # the service imports the metrics module, which has a route
    from triagebot.web.service import Service


def service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service
