"""A time limit on an await that a stalled process does not turn into a false timeout.

asyncio measures a timeout with a timer on the event loop. When the whole process is held
up (a busy machine, a long garbage collection) past the limit, the timer and the reply it
guards become due together, and the loop runs the timer before the task that would read
the reply: the call fails although Redis answered in time. A blocking socket's timeout,
measured by the kernel, has no such failure. Here a limit whose timer fires late by more
than `SLACK_S` was stalled, not exceeded: it looks once more after `SLACK_S`, by which
time a reply that arrived has been read. A Redis that really hangs still fails, after the
limit plus any stall plus `SLACK_S`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

SLACK_S = 0.05


class _Limit:
    def __init__(self, task: asyncio.Task[object], seconds: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = task
        self.due = self.loop.time() + seconds
        self.stalled = False
        self.expired = False
        self.handle = self.loop.call_at(self.due, self._fire)

    def _fire(self) -> None:
        now = self.loop.time()
        if not self.stalled and now - self.due > SLACK_S:
            self.stalled = True
            self.due = now + SLACK_S
            self.handle = self.loop.call_at(self.due, self._fire)
            return
        self.expired = True
        self.task.cancel()


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """The result of `awaitable`, or TimeoutError after `seconds` of the loop's own time."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("within() needs a running task")
    limit = _Limit(task, seconds)
    try:
        return await awaitable
    except asyncio.CancelledError:
        # Our cancel becomes a timeout; anyone else's stays a cancellation.
        if limit.expired and task.uncancel() == 0:
            raise TimeoutError from None
        raise
    finally:
        limit.handle.cancel()
