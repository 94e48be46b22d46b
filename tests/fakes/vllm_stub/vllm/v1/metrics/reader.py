"""The metric shapes `LLM.get_metrics()` returns (vllm/v1/metrics/reader.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Metric:
    name: str
    labels: dict[str, str]


@dataclass
class Counter(Metric):
    value: int


@dataclass
class Vector(Metric):
    values: list[int]


@dataclass
class Gauge(Metric):
    value: float


@dataclass
class Histogram(Metric):
    count: int
    sum: float
    buckets: dict[str, int]
