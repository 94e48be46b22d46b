"""A Celery task message as the Redis transport stores it, built without Celery.

The ingress puts each delivery's event on the triage queue in the same Redis script that
records the delivery id (see `deliveries.py`), so "seen" and "queued" can never disagree,
not even when Redis hangs and runs the script later. That script needs the message as
bytes: this is Celery's task protocol 2 in Kombu's Redis envelope, the exact shape
`send_task` writes (a test compares the two, and the end-to-end tests have real workers
consume it). Building it here also skips Kombu's publish path, most of the ingress's CPU.
Both JSON layers are written by pydantic-core's serializer, several times faster than the
standard library's; its UTF-8 output is what the `utf-8` content-encoding declares.
"""

from __future__ import annotations

import base64
import os
import socket
import uuid
from typing import Any

from pydantic_core import to_json

# Celery's default "no callbacks" embed, the third part of a protocol-2 body.
_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_ORIGIN = f"gen{os.getpid()}@{socket.gethostname()}"


def task_message(task: str, task_id: str, args: list[Any], queue: str,
                 argsrepr: str) -> bytes:
    """The bytes to LPUSH onto `queue`'s list for `task(*args)` with id `task_id`."""
    body = to_json([args, {}, _EMBED])
    envelope = {
        "body": base64.b64encode(body).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": task, "id": task_id, "shadow": None, "eta": None,
            "expires": None, "group": None, "group_index": None, "retries": 0,
            "timelimit": [None, None], "root_id": task_id, "parent_id": None,
            "argsrepr": argsrepr, "kwargsrepr": "{}", "origin": _ORIGIN,
            "ignore_result": True, "replaced_task_nesting": 0, "stamped_headers": None,
            "stamps": {},
        },
        "properties": {
            "correlation_id": task_id, "reply_to": str(uuid.uuid4()), "argsrepr": argsrepr,
            "kwargsrepr": "{}", "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0,
            "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
        },
    }
    return to_json(envelope)
