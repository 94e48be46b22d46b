"""What a cell's throughput figure counts, so that only figures of one kind are compared."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from triagebot.plan_model import Cell


class ThroughputMetric(BaseModel):
    """What a throughput figure counts: `kind` decides what may be compared with it (two
    figures of different kinds never are), `unit` is how the report names it."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["tok/s", "req/s"]
    unit: str


TOKENS_PER_SECOND = ThroughputMetric(kind="tok/s", unit="output tok/s")
# `vllm bench mm-processor` times requests; its template writes 1000 / median latency.
REQUESTS_PER_SECOND = ThroughputMetric(
    kind="req/s", unit="req/s (1000 / median end-to-end latency in ms, mm-processor)")


def throughput_metric(cell: Cell) -> ThroughputMetric:
    """What the cell's recorded `tok_s` counts: the mm-processor benchmark times requests,
    every other workload counts output tokens per second."""
    return REQUESTS_PER_SECOND if cell.workload.kind == "mm_processor" else TOKENS_PER_SECOND
