"""Running the ingress under uvicorn: its log configuration and the factory its workers call.

uvicorn configures only its own loggers, so without this the per-delivery INFO lines of
`triagebot.web.webhook` fell through to Python's last-resort handler, which prints
warnings and errors only. Several uvicorn worker processes need an import string, so the
factory builds the app from the environment in each of them.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from uvicorn.config import LOGGING_CONFIG

from triagebot.settings import load_settings
from triagebot.web.app import create_app

FACTORY = "triagebot.web.serving:app_from_env"


def log_config(level: str = "INFO") -> dict[str, Any]:
    """uvicorn's own configuration, plus our loggers on its default handler."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["triagebot"] = {"handlers": ["default"], "level": level,
                                      "propagate": False}
    return config


def app_from_env() -> FastAPI:
    """The app for the settings in the environment (and `.env`), in each worker process."""
    return create_app(load_settings())
