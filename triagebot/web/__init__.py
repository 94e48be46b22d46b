"""The webhook ingress and the pages around it (FastAPI)."""

from triagebot.web.app import create_app

__all__ = ["create_app"]
