"""Read, change and write one JSON record in Redis without a lock: the key is WATCHed,
and a write by someone else in between makes the change run again on what they wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import redis
from pydantic import BaseModel

Record = TypeVar("Record", bound=BaseModel)


def update_record(client: redis.Redis, key: str, model: type[Record],
                  change: Callable[[Record], Record]) -> Record | None:
    """The record at `key` after `change`, or None (nothing written) where there is none."""
    while True:
        with client.pipeline() as pipe:
            try:
                pipe.watch(key)
                raw = pipe.get(key)
                if not raw:
                    return None
                new = change(model.model_validate_json(raw))
                pipe.multi()
                pipe.set(key, new.model_dump_json())
                pipe.execute()
                return new
            except redis.WatchError:
                continue
