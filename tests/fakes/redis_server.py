"""A redis-server of a test's own, started from the deployment's `redis.conf` (AOF on), on
a free port and in a folder of its own, that the test can restart. The shared Redis the
other tests use runs without persistence; this one is for what must survive a restart."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

CONF = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("this test starts its own redis-server, and none is installed")
        # The deployment's file, with the flags compose.yml repeats; only where it
        # listens and keeps its files differ (its `dir` is the container's volume,
        # which redis-server must find before the flags apply).
        conf = self.folder / "redis.conf"
        conf.write_text("".join(line for line in CONF.read_text().splitlines(keepends=True)
                                if not line.startswith("dir ")))
        self.proc = subprocess.Popen(
            [binary, str(conf), "--bind", "127.0.0.1", "--port", str(self.port),
             "--dir", str(self.folder), "--appendonly", "yes", "--appendfsync", "everysec",
             "--maxmemory-policy", "noeviction", "--logfile", str(self.folder / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                # Up, and done loading the append-only file (LOADING answers an error).
                client.ping()
                break
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start; see "
                                       f"{self.folder / 'redis.log'}") from None
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        """SHUTDOWN, as `docker compose restart` asks: the AOF is flushed first."""
        if self.proc is None:
            return
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis.from_url(self.url).shutdown()
        self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    folder.mkdir(parents=True, exist_ok=True)
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        if server.proc is not None:
            server.proc.kill()
            server.proc.wait()
