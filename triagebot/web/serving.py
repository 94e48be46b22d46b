"""Running the ingress under uvicorn: its log configuration, its HTTP protocol, and the
factory its workers call.

uvicorn configures only its own loggers, so without `log_config` the per-delivery INFO
lines of `triagebot.web.webhook` fell through to Python's last-resort handler, which
prints warnings and errors only. Several uvicorn worker processes need an import string,
so the factory builds the app from the environment in each of them.

The protocol turns Nagle's algorithm off on every connection. asyncio does so only for
sockets created with an explicit IPPROTO_TCP, which uvicorn's are not: without it a
response written in two parts waits for the client's delayed ACK, about 40 ms, on every
acknowledgement. (uvloop, when installed, sets it itself; doing it again is harmless.)
"""

from __future__ import annotations

import asyncio
import copy
import socket
from typing import Any

from fastapi import FastAPI
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from triagebot.settings import load_settings
from triagebot.web.app import create_app

FACTORY = "triagebot.web.serving:app_from_env"
PROTOCOL = "triagebot.web.serving:NoDelayHTTP"


class NoDelayHTTP(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP/1.1 protocol (httptools when installed, else h11), without Nagle."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


def log_config(level: str = "INFO") -> dict[str, Any]:
    """uvicorn's own configuration, plus our loggers on its default handler."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["triagebot"] = {"handlers": ["default"], "level": level,
                                      "propagate": False}
    return config


def app_from_env() -> FastAPI:
    """The app for the settings in the environment (and `.env`), in each worker process."""
    return create_app(load_settings())
