"""Acknowledgement latency of `POST /webhook` under load, against uvicorn and the local Redis.

Run from the repository root: `.venv/bin/python bench/webhook_load.py`. It starts the
ingress in a subprocess (one uvicorn worker, a fresh Redis namespace), then sends signed
`issue_comment.created` deliveries, each with a new delivery id and comment id and with
the mention, so every one is verified, parsed, deduped and put on the triage queue. Each
target rate runs open-loop for a few seconds: request i is due at start + i/rate whether
or not earlier ones have finished, and its latency is measured from when it was due, so
time spent waiting behind slow requests counts. It prints, per rate, the deliveries sent
and acknowledged per second, p50/p99/max latency and errors, then p99 at 200/s against
the 50 ms target. The namespace's keys (queue included) are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis

from triagebot.web.signature import sign

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "webhooks" / "issue_comment.created.json"
SECRET = "bench-secret-0123456789"
REDIS_URL = "redis://127.0.0.1:6379/0"
TARGET_RATE = 200
TARGET_P99_MS = 50.0


# --- the server side ----------------------------------------------------------------------------


def serve(namespace: str) -> None:
    """Child process: the ingress on a free port, which it prints on stdout."""
    import uvicorn

    from triagebot.settings import load_settings
    from triagebot.web import create_app

    # One INFO line per delivery, as in production, written to the log file the parent set.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = load_settings(webhook_secrets=[SECRET], namespace=namespace,
                             redis_url=REDIS_URL)
    # The protocol must be named: asyncio turns on TCP_NODELAY only for sockets whose
    # proto is IPPROTO_TCP, and with Nagle left on every response waits ~40 ms for the
    # client's delayed ACK (socket.socket() and socket.create_server() both give proto 0).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False,
                            workers=1)
    uvicorn.Server(config).run(sockets=[sock])


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    log: Path


def start_server(namespace: str, log: Path) -> Server:
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, __file__, "--serve", namespace], stdout=subprocess.PIPE,
            stderr=err, text=True, cwd=ROOT)
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    if not port.isdigit():
        process.kill()
        raise SystemExit(f"the server did not start; see {log}")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Server(process, url, log)
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise SystemExit(f"the server did not answer /healthz; see {log}")
        time.sleep(0.05)


# --- the load -----------------------------------------------------------------------------------


def build_requests(count: int, template: dict[str, Any]) -> list[bytes]:
    """Signed deliveries as raw HTTP/1.1 requests, each a distinct comment with its own
    delivery id."""
    out = []
    base_id = template["comment"]["id"]
    for i in range(count):
        template["comment"]["id"] = base_id + 1 + i
        template["comment"]["body"] = f"@triagebot repro runs={3 + i % 5}"
        body = json.dumps(template).encode()
        head = (f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"User-Agent: GitHub-Hookshot/bench\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nX-GitHub-Event: issue_comment\r\n"
                f"X-GitHub-Delivery: {uuid.uuid4()}\r\n"
                f"X-Hub-Signature-256: {sign(SECRET, body)}\r\n\r\n")
        out.append(head.encode() + body)
    return out


class Pool:
    """Keep-alive HTTP/1.1 connections, one request at a time on each.

    A hand-written client, because the load generator shares the machine's two cores
    with the server: a general-purpose client spends more CPU per request than the
    ingress does, and the numbers would measure it instead.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def open(self, count: int) -> None:
        for _ in range(count):
            self.idle.append(await self._connect())

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        while self.idle:
            reader, writer = self.idle.pop()
            status_line = b""
            # The server closes keep-alive connections idle for 5 s; like any client, try
            # the request again on a fresh connection when a reused one turns out closed.
            with contextlib.suppress(ConnectionError):
                writer.write(raw)
                status_line = await reader.readline()
            if status_line:
                return await self._finish(reader, writer, status_line)
            writer.close()
        reader, writer = await self._connect()
        writer.write(raw)
        return await self._finish(reader, writer, await reader.readline())

    async def _finish(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      status_line: bytes) -> tuple[int, bytes]:
        status = int(status_line.split(b" ", 2)[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await reader.readexactly(length)
        self.idle.append((reader, writer))
        return status, body

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


@dataclass
class Step:
    rate: int
    sent: int
    ok: int
    errors: int
    elapsed_s: float
    latencies_ms: list[float]

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def drive(url: str, requests: list[bytes], rate: int) -> Step:
    host, port = url.removeprefix("http://").split(":")
    pool = Pool(host, int(port))
    # Open connections before the clock starts, as a long-running sender would have.
    await pool.open(min(64, rate))
    latencies: list[float] = []
    errors = 0
    ok = 0

    async def one(due: float, raw: bytes) -> None:
        nonlocal errors, ok
        try:
            status, body = await pool.send(raw)
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            errors += 1
            return
        latencies.append((time.perf_counter() - due) * 1000)
        if status == 202 and b'"queued":true' in body:
            ok += 1
        else:
            errors += 1

    tasks = []
    start = time.perf_counter()
    for i, raw in enumerate(requests):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(due, raw)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    pool.close()
    return Step(rate, len(requests), ok, errors, elapsed, latencies)


def delete_namespace(client: redis.Redis, namespace: str) -> int:
    keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
    for i in range(0, len(keys), 500):
        client.delete(*keys[i:i + 500])
    return len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="50,100,200,400",
                        help="target deliveries per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each step")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]

    client = redis.Redis.from_url(REDIS_URL)
    client.ping()
    namespace = f"tbbench-{uuid.uuid4().hex[:8]}"
    queue = f"{namespace}:celery:triage"
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"{namespace}.log"
    server = start_server(namespace, log)
    print(f"server {server.url} (pid {server.process.pid}), namespace {namespace}, "
          f"{os.cpu_count()} CPUs, log {log}", flush=True)
    steps: list[Step] = []
    try:
        # Warm-up: first requests pay for imports and connection pools.
        asyncio.run(drive(server.url, build_requests(100, template), 50))
        client.delete(queue)
        print("| target /s | sent | acked /s | p50 ms | p99 ms | max ms | errors | queued |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for rate in rates:
            requests = build_requests(int(rate * args.seconds), template)
            step = asyncio.run(drive(server.url, requests, rate))
            steps.append(step)
            depth = client.llen(queue)
            client.delete(queue)
            print(f"| {rate} | {step.sent} | {step.ok / step.elapsed_s:.0f} | "
                  f"{step.percentile(0.5):.1f} | {step.percentile(0.99):.1f} | "
                  f"{max(step.latencies_ms, default=float('nan')):.1f} | {step.errors} | "
                  f"{depth} |", flush=True)
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
        removed = delete_namespace(client, namespace)
        print(f"deleted {removed} keys under {namespace}:*")
    if steps and not any(s.errors for s in steps):
        log.unlink(missing_ok=True)
    at_target = next((s for s in steps if s.rate == TARGET_RATE), None)
    if at_target is not None:
        p99 = at_target.percentile(0.99)
        verdict = "meets" if p99 <= TARGET_P99_MS else "misses"
        best = max(steps, key=lambda s: s.ok / s.elapsed_s)
        print(f"p99 at {TARGET_RATE}/s: {p99:.1f} ms = {p99 / TARGET_P99_MS:.2f} x the "
              f"{TARGET_P99_MS:.0f} ms target ({verdict} it); most acknowledged: "
              f"{best.ok / best.elapsed_s:.0f}/s (target {best.rate}/s)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        main()
