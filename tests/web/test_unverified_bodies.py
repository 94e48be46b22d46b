"""What an unsigned or wrongly signed body may cost the ingress.

Issue 15, defect 5: sixteen concurrent unsigned 25 MB bodies took the server from 95 to
549 MB RSS before the 401s. Now a request without a well-formed signature is refused
before a byte of its body is read, and bodies being read before verification share one
byte budget: a request that finds no room within a second gets a 503, unread.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit

import httpx
import pytest

from tests.web.support import LiveServer, deliver, fixture
from triagebot.settings import Settings
from triagebot.web.app import create_app
from triagebot.web.service import Service

MIB = 1024 * 1024
WRONG_SIGNATURE = "sha256=" + "ab" * 32


def _open(url: str, length: int, signature: str | None, first: bytes = b"{") -> socket.socket:
    """A POST that declares `length` bytes and sends only `first` of them, then waits."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
    head = ["POST /webhook HTTP/1.1", f"Host: {parts.netloc}",
            "X-GitHub-Event: issue_comment", "X-GitHub-Delivery: slow-1",
            "Content-Type: application/json", f"Content-Length: {length}"]
    if signature is not None:
        head.append(f"X-Hub-Signature-256: {signature}")
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + first)
    return sock


def _status(sock: socket.socket) -> int:
    line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(line.split()[1])


@pytest.fixture
def server(make_settings: Callable[..., Settings]) -> Iterator[tuple[str, Service]]:
    settings = make_settings(max_body_bytes=MIB, unverified_body_budget_bytes=2 * MIB)
    app = create_app(settings)
    with ExitStack() as stack:
        live = stack.enter_context(LiveServer(app))
        yield live.url, app.state.service


def test_unsigned_body_is_refused_before_it_is_read(server: tuple[str, Service]) -> None:
    url, service = server
    for signature in (None, "sha1=abc", "sha256=short", "sha256=" + "zz" * 32):
        with _open(url, MIB, signature) as sock:
            started = time.monotonic()
            assert _status(sock) == 401
            assert time.monotonic() - started < 1.0  # it did not wait for the MiB
    assert service.bodies.used == 0


def test_bodies_in_flight_share_one_budget(server: tuple[str, Service],
                                           http: httpx.Client) -> None:
    url, service = server
    with ExitStack() as stack:
        # Two slow senders with well-formed (wrong) signatures fill the 2 MiB budget.
        slow = [stack.enter_context(_open(url, MIB, WRONG_SIGNATURE)) for _ in range(2)]
        deadline = time.monotonic() + 5
        while service.bodies.used < 2 * MIB and time.monotonic() < deadline:
            time.sleep(0.02)
        assert service.bodies.used == 2 * MIB
        started = time.monotonic()
        with _open(url, MIB, WRONG_SIGNATURE) as third:
            assert _status(third) == 503
        assert time.monotonic() - started < 2.0
        # Even a genuine small delivery waits for room, then is told to come back.
        assert deliver(http, url, "issue_comment", fixture("issue_comment.created")) \
            .status_code == 503
        for sock in slow:
            sock.sendall(b"x" * (MIB - 1))
            assert _status(sock) == 401  # read to the end, then refused, never parsed
    assert service.bodies.used == 0
    assert deliver(http, url, "issue_comment", fixture("issue_comment.created")) \
        .status_code == 202
