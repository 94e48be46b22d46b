"""What a bisect job asks: pure, so the decisions and the job record can name it without
loading the Redis side (`triagebot.workers.runner_bisect`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from triagebot.bisect.ranges import Direction


class BisectSpec(BaseModel):
    """What a bisect job asks, fixed when it was created."""

    model_config = ConfigDict(extra="forbid")

    good: str
    bad: str
    direction: Direction = "regress"
    overrides: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
