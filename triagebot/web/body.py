"""Reading a request body once, as bytes, with a hard cap.

Starlette sets no limit of its own, so without this a client could make the process hold
an arbitrarily large body in memory. A declared Content-Length over the cap is refused
before any byte is read; a chunked body is counted as it arrives and refused at the cap.
"""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    """The body is over the cap; nothing more of it is read."""


class BadContentLength(Exception):
    """The Content-Length header is not a non-negative integer."""


async def read_capped(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise BadContentLength(declared[:40])
        if int(declared) > limit:
            raise BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge
        body += chunk
    return bytes(body)
