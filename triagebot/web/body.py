"""Reading a request body once, as bytes, with a hard cap and a shared memory budget.

Starlette sets no limit of its own, so without this a client could make the process hold
an arbitrarily large body in memory. A declared Content-Length over the cap is refused
before any byte is read; a chunked body is counted as it arrives and refused at the cap.

Until its signature is checked a body is anyone's, so the bytes of all bodies being read
at once share one budget: a request reserves its declared length (the cap when it declares
none) before reading, waits briefly for room, and is refused with 503 when there is none.
Sixteen unsigned 25 MB bodies then cost at most the budget, not 16 x 25 MB.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.requests import Request


class BodyTooLarge(Exception):
    """The body is over the cap; nothing more of it is read."""


class BadContentLength(Exception):
    """The Content-Length header is not a non-negative integer."""


class NoRoom(Exception):
    """The unverified-body budget stayed full for the whole wait."""


def declared_length(request: Request, limit: int) -> int | None:
    """The Content-Length, checked against `limit` before any byte is read."""
    declared = request.headers.get("content-length")
    if declared is None:
        return None
    if not (declared.isascii() and declared.isdigit()):
        raise BadContentLength(declared[:40])
    if int(declared) > limit:
        raise BodyTooLarge
    return int(declared)


class BodyBudget:
    """Bytes of request bodies held at once by this process, before they are verified."""

    def __init__(self, limit_bytes: int, wait_s: float) -> None:
        self.limit = limit_bytes
        self.wait_s = wait_s
        self.used = 0
        self._room = asyncio.Condition()

    @asynccontextmanager
    async def reserve(self, size: int) -> AsyncIterator[None]:
        size = min(size, self.limit)
        async with self._room:
            # Waiting costs a task and a timer; skip it when there is room already, as
            # there nearly always is.
            if self.used + size > self.limit:
                try:
                    await asyncio.wait_for(
                        self._room.wait_for(lambda: self.used + size <= self.limit),
                        self.wait_s)
                except TimeoutError:
                    raise NoRoom from None
            self.used += size
        try:
            yield
        finally:
            async with self._room:
                self.used -= size
                self._room.notify_all()


async def read_capped(request: Request, limit: int,
                      on_chunk: Callable[[bytes], None] = lambda _: None) -> bytes:
    """The whole body (at most `limit` bytes), each chunk passed to `on_chunk` as it comes."""
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge
        on_chunk(chunk)
        body += chunk
    return bytes(body)
