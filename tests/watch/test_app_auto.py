"""`[watch] auto` and `[watch] max_threads` in the App: a signed webhook -> uvicorn ->
Redis -> a real triage worker talking to the fake GitHub. The thread's repro job is
written as a runner leaves it (done, reproduced) and its publish is asked for as a
runner asks: with `auto = true` the thread is watched on its own and told so; with
`auto = false` it is not; over `max_threads` neither `auto` nor `@triagebot watch`
starts one, and each says which limit."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.services import Uvicorn, Worker, settings_env, wait_for
from tests.service.test_end_to_end import SECRET, deliver
from tests.watch.test_app_e2e import reproduced_job
from triagebot.github.markers import has_marker
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.jobs.watches import WatchStore
from triagebot.web.app import create_app
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery


@pytest.fixture
def config() -> str:
    return ""


@pytest.fixture
def service(fake_github: FakeGitHub, namespace: str, tmp_path: Path,
            config: str) -> Iterator[dict[str, Any]]:
    settings = make_settings(
        namespace, github_api_url=fake_github.base_url, app_id=fake_github.app_id,
        app_private_key=fake_github.private_key_pem, webhook_secrets=[SECRET],
        data_dir=tmp_path / "jobs", gpu_kinds=["h100"], default_gpu="h100",
        run_local=False, public_url="http://triagebot.test")
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", "-",
                          author="reporter")
    fake_github.set_permission(REPO, "maint", "write")
    fake_github.set_file(REPO, ".github/triagebot.toml", config)
    triage = Worker("triage", settings_env(settings, github=True), tmp_path / "triage.log",
                    f"triage-{namespace}@test")
    with contextlib.ExitStack() as stack:
        stack.callback(triage.stop)
        web = stack.enter_context(Uvicorn(create_app(settings)))
        store = JobStore(settings)
        yield {"settings": settings, "web": web, "triage": triage, "fake": fake_github,
               "store": store, "watches": WatchStore(store.redis, namespace)}


def published(service: dict[str, Any]) -> JobRecord:
    """The reproduced repro job, published as the runner that finished it asks."""
    job = reproduced_job(service)
    create_celery(service["settings"], register_tasks=False).send_task(
        task_queues.PUBLISH, args=[job.id], queue=task_queues.TRIAGE_QUEUE,
        ignore_result=True)
    # The publish task ended (start_auto runs inside it, after the report's comment).
    wait_for(lambda: re.search(r"triagebot\.publish\[[^\]]+\] succeeded",
                               service["triage"].log.read_text(errors="replace")),
             120, "the publish task", service["triage"].tail)
    return job


def bot(service: dict[str, Any], key: str) -> list[Any]:
    return [c for c in service["fake"].comments(REPO, 42)
            if c.author == "triagebot[bot]" and has_marker(c.body, key)]


@pytest.mark.parametrize("config", ["[watch]\nauto = true\n"])
def test_auto_watches_a_reproduced_report_on_its_own(service: dict[str, Any]) -> None:
    job = published(service)
    rec = service["watches"].get(REPO, 42)
    assert rec is not None and rec.status == "active"
    assert (rec.job_id, rec.comparison, rec.last, rec.runner, rec.reporter) == (
        job.id, "spec/no_spec", "0.20.1", "h100", "reporter")
    (told,) = bot(service, f"watchauto={job.id}")
    assert "`[watch] auto` is on here. Watching `spec/no_spec` (at 0.20.1:" in told.body
    assert len(bot(service, f"job={job.id}")) == 1  # the report itself


@pytest.mark.parametrize("config", ["[watch]\nauto = false\n", ""])
def test_without_auto_a_reproduced_report_is_not_watched(service: dict[str, Any]) -> None:
    job = published(service)
    assert len(bot(service, f"job={job.id}")) == 1
    assert service["watches"].get(REPO, 42) is None
    assert bot(service, f"watchauto={job.id}") == []


@pytest.mark.parametrize("config", ["[watch]\nauto = true\nmax_threads = 0\n"])
def test_over_max_threads_nothing_is_watched_and_the_limit_is_named(
        service: dict[str, Any]) -> None:
    job = published(service)
    assert service["watches"].get(REPO, 42) is None
    (told,) = bot(service, f"watchauto={job.id}")
    assert ("Not watched across releases: this repository's `[watch] max_threads` is 0 "
            "and 0 threads are watched already") in told.body
    comment_id, answer = deliver(service, "@triagebot watch")
    assert answer.status_code == 202
    reply = wait_for(lambda: bot(service, f"reply={comment_id}"), 60, "the reply",
                     service["triage"].tail)
    assert ("Over this repository's watch budget: `[watch] max_threads` is 0 and 0 "
            "threads are watched already") in reply[0].body
    assert service["watches"].get(REPO, 42) is None
