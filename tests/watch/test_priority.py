"""Watch runs queue below maintainers' commands: on the real Redis broker, with the App's
Celery settings, a repro sent after a watch run is still taken first."""

from __future__ import annotations

from tests.fakes.redis_fixture import make_settings
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery
from triagebot.workers.watch import WATCH_PRIORITY


def test_a_repro_is_taken_before_an_earlier_watch_run(namespace: str) -> None:
    app = create_celery(make_settings(namespace), register_tasks=False)
    queue = f"gpu-{namespace}"
    app.send_task(task_queues.RUN_JOB, args=["watch-run"], queue=queue,
                  priority=WATCH_PRIORITY, ignore_result=True)
    app.send_task(task_queues.RUN_JOB, args=["repro"], queue=queue, ignore_result=True)
    taken = []
    with app.connection_for_read() as conn:
        inbox = conn.SimpleQueue(queue)
        for _ in range(2):
            message = inbox.get(timeout=10)
            taken.append(message.payload[0][0])
            message.ack()
        inbox.close()
    assert taken == ["repro", "watch-run"]
