"""A small plan and job records shared by the service tests."""

from __future__ import annotations

from triagebot.jobs.record import JobRecord, job_id
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan

# The link key job ids are made with in these tests (a deployment's comes from its secrets).
LINK_KEY = b"service-tests-link-key"

REPORT = b"""MTP k=1 on vLLM 0.17.1 is slower than no spec under CUDA graphs.
vllm serve zai-org/GLM-OCR --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'
"""


def small_plan() -> Plan:
    request = parse_report(REPORT, title="GLM-OCR MTP slower")
    return build_plan(request, parse_overrides(["engine=transformers", "runs=2"]))


def record(plan: Plan, trigger: str = "comment-1", command: str = "repro") -> JobRecord:
    return JobRecord(id=job_id(LINK_KEY, "acme/engine", 42, trigger, command), repo="acme/engine",
                     number=42, trigger=trigger, requester="maint", command=command,
                     plan_hash=plan.plan_hash, gpu_kind=plan.gpu_kind, cells=len(plan.cells))
