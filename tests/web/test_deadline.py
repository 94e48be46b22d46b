"""`within`: a time limit that a stalled event loop does not trip falsely.

The stall is a blocking sleep on the loop, standing in for a process that got no CPU; the
"reply" is a future set by a timer that comes due during the stall. Each test runs on
asyncio's own loop and on uvloop (what `triagebot serve` runs), which order timers and
I/O differently.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvloop

from triagebot.web.deadline import SLACK_S, within

Run = Callable[[Any], Any]


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Run:
    runner: Run = asyncio.run if request.param == "asyncio" else uvloop.run
    return runner


def _stalled(run: Run, limit: Callable[[float, Awaitable[int]], Awaitable[Any]]) -> Any:
    async def scenario() -> Any:
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[int] = loop.create_future()
        loop.call_later(0.01, reply.set_result, 7)
        loop.call_soon(time.sleep, 0.3)  # the loop is held up past the 0.1 s limit
        return await limit(0.1, reply)

    return run(scenario())


def test_a_reply_that_came_during_a_stall_is_taken(run: Run) -> None:
    assert _stalled(run, within) == 7


def test_asyncio_own_timeout_fails_that_same_reply(run: Run) -> None:
    # The probe: without the second look, the same stall is a false timeout.
    async def plain(seconds: float, awaitable: Awaitable[int]) -> int:
        async with asyncio.timeout(seconds):
            return await awaitable

    with pytest.raises(TimeoutError):
        _stalled(run, plain)


def test_no_reply_is_a_timeout_at_the_limit(run: Run) -> None:
    async def scenario() -> float:
        never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await within(0.1, never)
        return time.monotonic() - started

    took = run(scenario())
    assert 0.1 <= took < 0.1 + 2 * SLACK_S + 0.2


def test_no_reply_after_a_stall_is_still_a_timeout(run: Run) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        never: asyncio.Future[int] = loop.create_future()
        loop.call_soon(time.sleep, 0.3)
        with pytest.raises(TimeoutError):
            await within(0.1, never)

    run(scenario())


def test_someone_elses_cancel_stays_a_cancel(run: Run) -> None:
    async def scenario() -> None:
        never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(within(5, never))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
