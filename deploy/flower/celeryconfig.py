"""Celery settings for Flower, which runs from the stock mher/flower image.

compose.yml mounts this folder and puts it on PYTHONPATH; Celery's default loader imports
the module as `celeryconfig`. Flower cannot import triagebot, so the two values that must
match the workers' (triagebot/workers/app.py) are rebuilt here from the same variables:

- the Kombu key prefix: Kombu prefixes queue keys and pub/sub channels alike, so a Flower
  without it watches other keys and hears no worker;
- the visibility timeout: every Redis consumer re-queues unacknowledged messages older
  than its own timeout, so a Flower left at Celery's one-hour default would hand a
  running GPU job to a second worker. The same holds for any Celery tool pointed at this
  broker.
"""

import os as _os

broker_url = _os.environ.get("TRIAGEBOT_REDIS_URL", "redis://redis:6379/0")
visibility_timeout = int(_os.environ.get("TRIAGEBOT_VISIBILITY_TIMEOUT_S", "19800"))
broker_transport_options = {
    "visibility_timeout": visibility_timeout,
    "global_keyprefix": _os.environ.get("TRIAGEBOT_NAMESPACE", "triagebot") + ":celery:",
}
result_backend = broker_url
result_backend_transport_options = broker_transport_options
