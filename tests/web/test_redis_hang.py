"""A Redis that hangs (SIGSTOP) must not hold a delivery past one second.

Issue 15, defect 4: with Redis frozen the webhook's 503s took 5.9-14.5 s, past GitHub's
10 s delivery timeout, and /readyz took 10 s. The test freezes a Redis of its own on a free
port, never the shared one.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis

from tests.web.support import deliver, fixture, queued
from triagebot.settings import Settings
from triagebot.web.deliveries import MAX_IN_FLIGHT

# Measured figures go to the log: pytest shows them with a failure or with --log-cli-level=INFO.
log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is needed (./dev test installs it)")
    port = _free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the test's own redis-server did not start")
            time.sleep(0.05)
    client.close()
    try:
        yield url, proc
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _established_to(port: int) -> int:
    """Open TCP connections to 127.0.0.1:`port` on this machine, from /proc/net/tcp."""
    count = 0
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
            count += 1
    return count


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_frozen_redis_answers_503_within_a_second(
        own_redis: tuple[str, subprocess.Popen[bytes]],
        make_settings: Callable[..., Settings], serve: Callable[..., str],
        http: httpx.Client) -> None:
    url_of_redis, proc = own_redis
    url = serve(make_settings(redis_url=url_of_redis))
    payload = fixture("issue_comment.created")
    # Warm: the pools hold live connections when Redis freezes, as in production.
    assert deliver(http, url, "issue_comment", payload, delivery="warm").status_code == 202
    os.kill(proc.pid, signal.SIGSTOP)
    timings = []
    for _ in range(3):
        response, took = _timed(lambda: deliver(http, url, "issue_comment", payload,
                                                delivery="frozen-1"))
        assert response.status_code == 503, response.text
        timings.append(took)
    ready, ready_took = _timed(lambda: http.get(f"{url}/readyz"))
    assert ready.status_code == 503
    log.info(f"frozen Redis: webhook 503 in {', '.join(f'{t:.2f}' for t in timings)} s; "
          f"/readyz 503 in {ready_took:.2f} s")
    assert max(timings) < 1.0 and ready_took < 1.0
    # A burst past the cap on Redis calls in flight (MAX_IN_FLIGHT): those calls time out,
    # the rest wait at most half the timeout for a slot and never open a connection; every
    # one is a 503. The ingress's part is at most 0.75 s, but 80 connections opened at
    # once from this machine's own client threads can wait on TCP's SYN retry (1 s, then
    # 3 s): a full CI run saw 5.6 s. The bound is GitHub's 10 s delivery timeout, which a
    # call left hanging on the frozen Redis would pass (the client waits 30 s).
    burst = MAX_IN_FLIGHT + 16
    limits = httpx.Limits(max_connections=burst, max_keepalive_connections=burst)
    peak = 0
    with httpx.Client(timeout=30, limits=limits) as client, \
            ThreadPoolExecutor(max_workers=burst) as pool:
        futures = [pool.submit(_timed, lambda i=i: deliver(
            client, url, "issue_comment", payload, delivery=f"burst-{i}"))
            for i in range(burst)]
        while not all(f.done() for f in futures):
            peak = max(peak, _established_to(_port(url_of_redis)))
            time.sleep(0.01)
        answers = [f.result() for f in futures]
    log.info(f"frozen Redis, {burst} at once: slowest 503 in "
             f"{max(took for _, took in answers):.2f} s; at most {peak} connections open")
    assert [r.status_code for r, _ in answers] == [503] * burst
    assert max(took for _, took in answers) < 10.0
    # The pages' blocking client may hold one or two besides the capped ones.
    assert MAX_IN_FLIGHT // 2 < peak <= MAX_IN_FLIGHT + 2
    os.kill(proc.pid, signal.SIGCONT)
    # Thawed, Redis runs the scripts it had received: record-and-queue is one atomic step,
    # so the delivery is queued exactly once, and its redelivery is rightly a duplicate.
    # (With a separate claim, a claim landing late blocked the redelivery of an event
    # that was never queued.)
    client = redis.Redis.from_url(url_of_redis)
    settings = make_settings(redis_url=url_of_redis)
    deadline = time.monotonic() + 5
    while client.get(settings.key("delivery", "frozen-1")) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    again = deliver(http, url, "issue_comment", payload, delivery="frozen-1")
    assert again.status_code == 202 and again.json().get("duplicate"), again.text
    ids = [queued_message["id"] for queued_message in queued(client, settings)]
    assert ids.count("event-frozen-1") == 1 and "event-warm" in ids
