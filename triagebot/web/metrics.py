"""Prometheus metrics of the ingress, on a registry of its own (never the global one).

The collector lives here and the `/metrics` route in `metrics_route.py`, so the service
that owns the collector does not import a route.

Delivery counts are kept in the process. Job states, queue depths, cell durations and
live workers are read from Redis when scraped, so every API replica reports the same
numbers and nothing has to be kept in sync. If Redis does not answer, a scrape still
returns the in-process counters and `triagebot_redis_up 0`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import redis
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from triagebot.jobs.deliveries import DeliveryLog
from triagebot.jobs.sentinels import SentinelStore
from triagebot.jobs.store import CELL_BUCKETS, JobStore
from triagebot.jobs.watches import WatchStore
from triagebot.settings import Settings
from triagebot.workers import task_queues

log = logging.getLogger(__name__)

# Label values for the event header are bounded: the header is not covered by the
# signature, and unbounded label values would let a client grow our memory.
KNOWN_EVENTS = frozenset({"ping", "issue_comment", "issues", "pull_request", "installation",
                          "installation_repositories", "pull_request_review",
                          "pull_request_review_comment", "push", "star"})


def event_label(event: str | None) -> str:
    if event is None:
        return "none"
    return event if event in KNOWN_EVENTS or event == "unverified" else "other"


class RedisCollector(Collector):
    """Reads the shared numbers from Redis at scrape time."""

    def __init__(self, settings: Settings, store: Callable[[], JobStore]) -> None:
        self.settings = settings
        self.store = store

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("triagebot_redis_up", "1 when Redis answered this scrape")
        try:
            metrics = list(self._read(self.store()))
        except redis.RedisError as exc:
            log.warning("metrics: redis unavailable (%s)", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from metrics

    def _read(self, store: JobStore) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("triagebot_jobs", "Jobs by state", labels=["state"])
        for state, count in store.counters.count_by_state().items():
            jobs.add_metric([state], count)
        yield jobs

        depth = GaugeMetricFamily("triagebot_queue_depth", "Messages waiting in a queue",
                                  labels=["queue"])
        queues = [task_queues.TRIAGE_QUEUE, *(self.settings.queue_for(k)
                                        for k in self.settings.gpu_kinds)]
        for queue in queues:
            depth.add_metric([queue], store.counters.queue_depth(queue))
        yield depth

        per_bucket, total, _count = store.counters.cell_histogram()
        cumulative = 0
        buckets: list[tuple[str, float]] = []
        for bound in CELL_BUCKETS:
            cumulative += per_bucket.get(str(bound), 0)
            buckets.append((floatToGoString(bound), cumulative))
        buckets.append(("+Inf", cumulative + per_bucket.get("+Inf", 0)))
        yield HistogramMetricFamily("triagebot_cell_duration_seconds",
                                    "Wall time of one cell run", buckets=buckets,
                                    sum_value=total)

        outcomes = CounterMetricFamily("triagebot_job_outcomes",
                                       "Finished jobs by the outcome of their report",
                                       labels=["outcome"])
        for outcome, count in store.counters.count_by_outcome().items():
            outcomes.add_metric([outcome], count)
        yield outcomes

        failed = CounterMetricFamily("triagebot_events_failed",
                                     "Events the triage worker gave up on (listed at "
                                     "/deliveries/failed; GitHub can redeliver them)")
        failed.add_metric([], DeliveryLog(self.settings, store.redis).failed_count())
        yield failed

        feeds = CounterMetricFamily("triagebot_watch_feed_errors",
                                    "Release feed polls that found the index unreachable or "
                                    "its answer malformed", labels=["package", "error"])
        watches = WatchStore(store.redis, self.settings.namespace)
        for (package, error), count in sorted(watches.feed_errors().items()):
            feeds.add_metric([package, error], count)
        yield feeds

        flags, marked = SentinelStore(store.redis, self.settings.namespace).counts()
        flagged = CounterMetricFamily("triagebot_sentinel_flags",
                                      "Sentinel flags (case, kind, release), counted once")
        flagged.add_metric([], flags)
        yield flagged
        answered = CounterMetricFamily("triagebot_sentinel_not_a_regression",
                                       "Sentinel flags maintainers marked not-a-regression")
        answered.add_metric([], marked)
        yield answered
        rate = GaugeMetricFamily("triagebot_sentinel_false_positive_rate",
                                 "Observed false-positive rate of the sentinel: "
                                 "not-a-regression marks over flags (0 before any flag)")
        rate.add_metric([], marked / flags if flags else 0.0)
        yield rate

        max_age = self.settings.worker_heartbeat_max_age_s
        alive = sum(1 for age in store.counters.workers().values() if age <= max_age)
        workers = GaugeMetricFamily("triagebot_workers",
                                    "Workers with a recent heartbeat")
        workers.add_metric([], alive)
        yield workers


# Seconds from the request's arrival to its answer; GitHub gives up at 10.
ACK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """In-process delivery counts and ack latencies (per uvicorn worker process), and the
    Redis-backed numbers every process reports alike."""

    def __init__(self, settings: Settings, store: Callable[[], JobStore]) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter("triagebot_deliveries", "Webhook deliveries by outcome",
                                  ["event", "result"], registry=self.registry)
        self.ack_seconds = Histogram("triagebot_webhook_ack_seconds",
                                     "Time to answer a webhook delivery", ["result"],
                                     buckets=ACK_BUCKETS, registry=self.registry)
        self.registry.register(RedisCollector(settings, store))

    def delivery(self, event: str | None, result: str, seconds: float) -> None:
        self.deliveries.labels(event=event_label(event), result=result).inc()
        self.ack_seconds.labels(result=result).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
