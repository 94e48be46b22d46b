"""The whole App against fakes, for the end-to-end tests of the features that follow
releases (watch, sentinel): a fake GitHub, a release feed on 127.0.0.1 (PEP 691), a folder
of wheels of the fake vLLM (tests/bisect/tiny_engine.py, its speculation slow or fast per
release) that the runner installs each release from, uvicorn, a triage worker, one runner
worker on the `gpu_kind` queue and two beat schedulers (as a deployment started twice by
mistake would run them)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.bisect.tiny_engine import release_wheel
from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.release_feed import ReleaseFeed, serve_feed
from tests.fakes.services import Beat, Uvicorn, Worker, settings_env
from tests.service.test_end_to_end import SECRET
from triagebot.jobs.store import JobStore
from triagebot.web.app import create_app


@contextlib.contextmanager
def app_service(fake_github: FakeGitHub, namespace: str, tmp_path: Path, *, gpu_kind: str,
                slow: Mapping[str, bool], config: str,
                **overrides: Any) -> Iterator[dict[str, Any]]:
    """The running service; `slow` maps each release of the fake vLLM to whether its
    speculation is slower than none, `config` is the repo's .github/triagebot.toml."""
    index = tmp_path / "index"
    for version, is_slow in slow.items():
        release_wheel(index, version, slow=is_slow)
    with contextlib.ExitStack() as stack:
        feed: ReleaseFeed = stack.enter_context(serve_feed())
        settings = make_settings(
            namespace, github_api_url=fake_github.base_url, app_id=fake_github.app_id,
            app_private_key=fake_github.private_key_pem, webhook_secrets=[SECRET],
            data_dir=tmp_path / "jobs", env_cache_dir=tmp_path / "envs", run_local=False,
            gpu_kinds=[gpu_kind], default_gpu=gpu_kind, public_url="http://triagebot.test",
            bisect_find_links=index, watch_index=feed.url, watch_poll_s=1.0, **overrides)
        fake_github.set_permission(REPO, "maint", "write")
        fake_github.set_file(REPO, ".github/triagebot.toml", config)
        env = settings_env(settings, github=True)
        triage = Worker("triage", env, tmp_path / "triage.log", f"triage-{namespace}@test")
        gpu = [Worker(f"gpu-{gpu_kind}", settings_env(settings, github=False),
                      tmp_path / "gpu.log", f"gpu-{namespace}@test")]
        beats = [Beat({**env, "TRIAGEBOT_DATA_DIR": str(tmp_path / f"beat{k}")},
                      tmp_path / f"beat{k}.log") for k in range(2)]
        stack.callback(triage.stop)
        stack.callback(lambda: gpu[0].stop())
        for b in beats:
            stack.callback(b.stop)
        web = stack.enter_context(Uvicorn(create_app(settings)))
        yield {"settings": settings, "web": web, "triage": triage, "gpu": gpu,
               "fake": fake_github, "store": JobStore(settings), "feed": feed,
               "tmp": tmp_path, "gpu_kind": gpu_kind}


def restart_runner(service: dict[str, Any]) -> None:
    """Kill the runner worker's whole group (SIGKILL, mid-job) and start a new one."""
    import os
    import signal

    os.killpg(service["gpu"][0].proc.pid, signal.SIGKILL)
    service["gpu"][0].stop()
    kind = service["gpu_kind"]
    service["gpu"][0] = Worker(f"gpu-{kind}", settings_env(service["settings"], github=False),
                               service["tmp"] / "gpu2.log", f"gpu2-{uuid.uuid4().hex[:6]}@t")


def logs(service: dict[str, Any]) -> str:
    return (f"--- triage ---\n{service['triage'].tail()}\n"
            f"--- gpu ---\n{service['gpu'][0].tail()}")
