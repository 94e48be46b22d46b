"""Real service processes for end-to-end tests: uvicorn in a thread, Celery workers as
subprocesses started through the `triagebot` CLI, as a deployment runs them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from triagebot.settings import Settings

TRIAGEBOT = str(Path(sys.executable).with_name("triagebot"))


def settings_env(settings: Settings, *, github: bool) -> dict[str, str]:
    """The environment a worker process gets for `settings`; GPU workers get no GitHub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIAGEBOT_")}
    for name, value in settings.model_dump(mode="json").items():
        if value is None:
            continue
        if not github and name in ("app_id", "app_private_key", "app_private_key_file",
                                   "github_token", "webhook_secrets", "link_secret"):
            continue
        if name in ("app_private_key", "github_token", "link_secret"):
            secret = getattr(settings, name)
            value = secret.get_secret_value() if secret is not None else None
        elif name == "webhook_secrets":
            value = ",".join(s.get_secret_value() for s in settings.webhook_secrets)
        elif isinstance(value, list):
            value = ",".join(map(str, value))
        if value is not None:
            env[f"TRIAGEBOT_{name.upper()}"] = str(value)
    return env


class Uvicorn:
    """A real uvicorn server on a free port, in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Uvicorn:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class Worker:
    """`triagebot worker --queues ...` in its own process group, logging to a file."""

    def __init__(self, queues: str, env: dict[str, str], log: Path, name: str) -> None:
        self.start([TRIAGEBOT, "worker", "--queues", queues, "--name", name,
                    "--loglevel", "info"], env, log)

    def start(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.handle = log.open("ab")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.handle,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def pool_children(self) -> list[int]:
        """Pids of the worker's pool processes (the children of its main process)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                out.append(int(stat.parent.name))
        return out

    def stop(self) -> None:
        """TERM the worker's group, then KILL whatever of it is left (pool processes too)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.handle.close()

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


class Beat(Worker):
    """`triagebot beat` (Celery beat) in its own process group, logging to a file."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.start([TRIAGEBOT, "beat", "--loglevel", "info"], env, log)


def wait_for(check: Callable[[], Any], timeout: float, what: str,
             logs: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs()}")
