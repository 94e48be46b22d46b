"""/healthz, /readyz and /metrics against a live server and a real Redis."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.web.support import deliver, fixture
from tests.web.test_jobs_page import make_job
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_healthz(url: str, http: httpx.Client) -> None:
    response = http.get(f"{url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_readyz_needs_a_recent_worker_heartbeat(url: str, http: httpx.Client,
                                                settings: Settings,
                                                redis_client: redis.Redis) -> None:
    response = http.get(f"{url}/readyz")
    assert response.status_code == 503
    assert "no worker heartbeat" in response.json()["reason"]
    store = JobStore(settings, redis_client)
    store.counters.worker_alive("triage@api-1", ttl_s=60, queues=["triage"])
    # Issue 15, defect 9: a triage worker alone used to make /readyz 200 although no
    # runner would ever pick a job up.
    response = http.get(f"{url}/readyz")
    assert response.status_code == 503
    assert response.json()["runners"] == {kind: False for kind in settings.gpu_kinds}
    assert "gpu-" in response.json()["reason"]
    for kind in settings.gpu_kinds:
        store.counters.worker_alive(f"gpu-{kind}@runner-1", ttl_s=60, queues=[f"gpu-{kind}"])
    response = http.get(f"{url}/readyz")
    assert response.status_code == 200
    assert response.json() == {"ok": True, "workers": 1 + len(settings.gpu_kinds),
                               "triage": True,
                               "runners": {kind: True for kind in settings.gpu_kinds}}


def test_readyz_ignores_a_stale_heartbeat(make_settings: Callable[..., Settings],
                                          serve: Callable[..., str], http: httpx.Client,
                                          redis_client: redis.Redis) -> None:
    settings = make_settings(worker_heartbeat_max_age_s=5)
    url = serve(settings)
    key = settings.key("worker", "triage@old")
    redis_client.set(key, '{"at": 1000.0, "queues": ["triage"]}', ex=60)  # from 1970
    assert http.get(f"{url}/readyz").status_code == 503


def test_readyz_without_redis(make_settings: Callable[..., Settings],
                              serve: Callable[..., str], http: httpx.Client) -> None:
    url = serve(make_settings(redis_url=f"redis://127.0.0.1:{_closed_port()}/0"))
    response = http.get(f"{url}/readyz")
    assert response.status_code == 503
    assert response.json()["reason"].startswith("redis unreachable")
    assert http.get(f"{url}/healthz").status_code == 200


def test_metrics_count_deliveries_and_read_redis(url: str, http: httpx.Client,
                                                 settings: Settings,
                                                 redis_client: redis.Redis) -> None:
    store = JobStore(settings, redis_client)
    before = _samples(http.get(f"{url}/metrics").text)
    assert before[("triagebot_redis_up", ())] == 1
    assert before[("triagebot_jobs", (("state", "queued"),))] == 0
    assert before[("triagebot_queue_depth", (("queue", "triage"),))] == 0
    assert before[("triagebot_queue_depth", (("queue", "gpu-h100"),))] == 0
    assert before[("triagebot_workers", ())] == 0
    assert before[("triagebot_cell_duration_seconds_count", ())] == 0

    assert deliver(http, url, "issue_comment", fixture("issue_comment.created")).json()["queued"]
    assert deliver(http, url, "star", fixture("star.created")).status_code == 202
    assert deliver(http, url, "ping", fixture("ping"), secret="not-the-secret").status_code \
        == 401
    make_job(store, title="one")
    make_job(store, title="two", trigger="comment-2")
    store.counters.worker_alive("triage@api-test", ttl_s=60)
    for seconds in (3.0, 40.0, 40.0, 5000.0):
        store.counters.observe_cell(seconds)

    response = http.get(f"{url}/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)
    deliveries = "triagebot_deliveries_total"
    assert after[(deliveries, (("event", "issue_comment"), ("result", "queued")))] == 1
    assert after[(deliveries, (("event", "star"), ("result", "ignored")))] == 1
    assert after[(deliveries, (("event", "unverified"), ("result", "unauthorized")))] == 1
    assert after[("triagebot_jobs", (("state", "queued"),))] == 2
    assert after[("triagebot_jobs", (("state", "done"),))] == 0
    assert after[("triagebot_queue_depth", (("queue", "triage"),))] == 1
    assert after[("triagebot_workers", ())] == 1
    histogram = "triagebot_cell_duration_seconds"
    assert after[(f"{histogram}_bucket", (("le", "5.0"),))] == 1
    assert after[(f"{histogram}_bucket", (("le", "30.0"),))] == 1
    assert after[(f"{histogram}_bucket", (("le", "60.0"),))] == 3
    assert after[(f"{histogram}_bucket", (("le", "3600.0"),))] == 3
    assert after[(f"{histogram}_bucket", (("le", "+Inf"),))] == 4
    assert after[(f"{histogram}_count", ())] == 4
    assert after[(f"{histogram}_sum", ())] == 5083.0
    # Issue 15, defect 9: no ack-latency histogram and no outcome counter.
    ack = "triagebot_webhook_ack_seconds"
    assert after[(f"{ack}_count", (("result", "queued"),))] == 1
    assert after[(f"{ack}_bucket", (("le", "10.0"), ("result", "unauthorized")))] == 1
    assert 0 < after[(f"{ack}_sum", (("result", "queued"),))] < 10
    outcomes = "triagebot_job_outcomes_total"
    assert after[(outcomes, (("outcome", "reproduced"),))] == 0
    job = make_job(store, title="three", trigger="comment-3")
    store.move(job.id, "running")
    store.move(job.id, "done", outcome="error")
    final = _samples(http.get(f"{url}/metrics").text)
    assert final[(outcomes, (("outcome", "error"),))] == 1
    assert final[(outcomes, (("outcome", "reproduced"),))] == 0


def test_each_app_has_its_own_registry(make_settings: Callable[..., Settings],
                                       serve: Callable[..., str], http: httpx.Client) -> None:
    settings = make_settings()
    first, second = serve(settings), serve(settings)
    deliver(http, first, "star", fixture("star.created"))
    key = ("triagebot_deliveries_total", (("event", "star"), ("result", "ignored")))
    assert _samples(http.get(f"{first}/metrics").text)[key] == 1
    assert key not in _samples(http.get(f"{second}/metrics").text)


def test_readyz_fails_while_the_triage_worker_cannot_act_as_the_app(
        url: str, http: httpx.Client, settings: Settings, redis_client: redis.Redis) -> None:
    # Issue 27, item 3: a triage worker without a usable key still made /readyz pass.
    store = JobStore(settings, redis_client)
    for kind in settings.gpu_kinds:
        store.counters.worker_alive(f"gpu-{kind}@runner-1", ttl_s=60, queues=[f"gpu-{kind}"])
    problem = "TRIAGEBOT_APP_PRIVATE_KEY_FILE: cannot read /run/secrets/k: No such file"
    store.counters.worker_alive("triage@broken", ttl_s=60, queues=["triage"], problem=problem)
    response = http.get(f"{url}/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["triage"] is False and body["github"] == problem
    assert body["reason"] == f"the triage worker cannot act as the GitHub App: {problem}"
    # Another triage worker that GitHub accepts serves the queue.
    store.counters.worker_alive("triage@fine", ttl_s=60, queues=["triage"])
    assert http.get(f"{url}/readyz").status_code == 200


def test_failed_events_are_counted_and_listed(url: str, http: httpx.Client,
                                              settings: Settings,
                                              redis_client: redis.Redis) -> None:
    from triagebot.jobs.deliveries import DeliveryLog, FailedEvent

    log = DeliveryLog(settings, redis_client)
    for private in (False, True):
        log.failed(FailedEvent(delivery=f"d-{private}", event="issue_comment",
                               action="created", repo="acme/secret" if private else
                               "acme/engine", private=private, number=7,
                               reason="GitHubError: no", at=0.0))
    assert _samples(http.get(f"{url}/metrics").text)[("triagebot_events_failed_total",
                                                     ())] == 2
    page = http.get(f"{url}/deliveries/failed.json").json()
    assert page["total"] == 2
    assert [(r["delivery"], r["repo"], r["number"]) for r in page["failed"]] == [
        ("d-True", "(a private repository)", None), ("d-False", "acme/engine", 7)]
    html = http.get(f"{url}/deliveries/failed").text
    assert "acme/secret" not in html and "d-True" in html
    assert log.state("d-True") == "failed"
