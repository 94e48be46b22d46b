"""The Celery application, built from Settings by a factory (nothing happens at import).

Long GPU jobs shape every setting here (reliability.md §4): a worker reserves one task at
a time and acknowledges it only after it ran, one process per GPU, a fresh process per
job, and a Redis visibility timeout above the job's hard limit so a running job is never
handed to a second worker. Duplicates that slip through anyway are stopped by the job lock
in `triagebot.jobs.store`.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from triagebot.settings import Settings
from triagebot.workers import task_queues


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings for this deployment; a test asserts the production invariants."""
    vt = settings.visibility_timeout_s
    hard = settings.job_time_limit_s
    transport = {"visibility_timeout": vt, "global_keyprefix": settings.celery_key_prefix}
    return {
        "broker_url": settings.redis_url,
        "result_backend": settings.redis_url,
        "broker_transport_options": transport,
        "result_backend_transport_options": transport,
        "visibility_timeout": vt,
        "broker_connection_retry_on_startup": True,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_acks_on_failure_or_timeout": True,
        "task_reject_on_worker_lost": False,  # only the GPU task opts in, bounded by attempts
        "task_track_started": True,
        "task_ignore_result": True,
        "worker_prefetch_multiplier": 1,
        "worker_concurrency": 1,
        "worker_max_tasks_per_child": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_soft_shutdown_timeout": 60.0,
        "worker_hijack_root_logger": False,
        "task_soft_time_limit": hard - 60 if hard > 120 else max(1, hard - 5),
        "task_time_limit": hard,
        "result_expires": 7 * 24 * 3600,
        "task_default_queue": task_queues.TRIAGE_QUEUE,
        "task_routes": {
            task_queues.HANDLE_EVENT: {"queue": task_queues.TRIAGE_QUEUE},
            task_queues.PROGRESS: {"queue": task_queues.TRIAGE_QUEUE},
            task_queues.PUBLISH: {"queue": task_queues.TRIAGE_QUEUE},
            task_queues.WATCH_POLL: {"queue": task_queues.TRIAGE_QUEUE},
        },
        # `triagebot beat`: a tick looks whether a release feed poll is due, 4 times per
        # interval and at least once a minute (the poll keeps its jittered interval,
        # however many beats tick).
        "beat_schedule": {"watch-poll": {"task": task_queues.WATCH_POLL,
                                         "schedule": min(60.0, settings.watch_poll_s / 4),
                                         "options": {"queue": task_queues.TRIAGE_QUEUE}}},
        # A publish that cannot reach Redis fails fast, so the ingress can answer 503.
        "task_publish_retry": False,
    }


def create_celery(settings: Settings, *, register_tasks: bool = True) -> Celery:
    """A Celery app for `settings`, with the tasks of `triagebot.workers.tasks`.

    A client that only sends tasks by name skips registering them (and importing the
    analysis stack they pull in).
    """
    app = Celery("triagebot", set_as_current=False)
    app.conf.update(celery_config(settings))
    app.conf.triagebot_settings = settings
    if register_tasks:
        from triagebot.workers.tasks import register

        register(app)
    return app
