"""`triagebot serve` as a deployment runs it: a real process, its log lines, its workers.

Issue 15, defect 9: `triagebot serve` dropped the per-delivery INFO lines (uvicorn set up
only its own loggers). Two uvicorn workers must both log and answer.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.fakes.services import TRIAGEBOT, settings_env
from tests.web.support import SECRET, deliver, fixture
from triagebot.settings import Settings


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_logs_every_delivery_from_each_worker(settings: Settings,
                                                    tmp_path: Path) -> None:
    port = _free_port()
    env = settings_env(settings, github=True)
    env["TRIAGEBOT_WEBHOOK_SECRETS"] = SECRET
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([TRIAGEBOT, "serve", "--port", str(port), "--workers", "2"],
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=5) as http:
            deadline = time.monotonic() + 60
            while True:
                try:
                    http.get(f"{url}/healthz")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise AssertionError(log.read_text()) from None
                    time.sleep(0.2)
            ids = [f"logged-{i}" for i in range(12)]
            for delivery in ids:
                response = deliver(http, url, "issue_comment",
                                   fixture("issue_comment.created"), delivery=delivery)
                assert response.status_code == 202
            bad = deliver(http, url, "ping", fixture("ping"), secret="not-the-secret-1")
            assert bad.status_code == 401
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    text = log.read_text()
    for delivery in ids:
        assert f"delivery={delivery} event=issue_comment" in text, text[-3000:]
    assert "result=unauthorized status=401" in text
    pids = {line.split("[", 1)[1].split("]", 1)[0] for line in text.splitlines()
            if "Started server process [" in line}
    assert len(pids) == 2, text[-3000:]
