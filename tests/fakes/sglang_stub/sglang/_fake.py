"""Shared bits of the fake sglang: an event log and the spec numbers it reports.

FAKE_SGLANG_LOG    JSONL file every fake appends its events to (kwargs, argv, pids).
FAKE_SGLANG_SHAPE  "full" (0.5.x outputs) or "verify_only" (0.4.x: spec_verify_ct only,
                   no output_ids).
FAKE_SGLANG_FAIL   "start": the server exits before it is ready; "engine": Engine()
                   raises an out-of-memory error.
"""

from __future__ import annotations

import json
import os

# Per request with speculation on: 4 verify steps that accepted 0, 1, 2 and 3 drafts.
VERIFY_CT = 4
HISTOGRAM = [1, 1, 1, 1]
CORRECT = sum(n * c for n, c in enumerate(HISTOGRAM))


def log(event: str, **data: object) -> None:
    path = os.environ.get("FAKE_SGLANG_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), **data}) + "\n")


def output(prompt_ids: list[int], max_new: int, spec_k: int | None) -> dict:
    """One finished request the way the tokenizer manager hands it back."""
    meta: dict = {"id": "r", "prompt_tokens": len(prompt_ids), "completion_tokens": max_new,
                  "finish_reason": {"type": "length", "length": max_new}}
    if spec_k is not None:
        meta["spec_verify_ct"] = VERIFY_CT
        if os.environ.get("FAKE_SGLANG_SHAPE", "full") == "full":
            meta["spec_num_correct_drafts"] = CORRECT
            meta["spec_num_proposed_drafts"] = VERIFY_CT * spec_k
            meta["spec_accept_rate"] = CORRECT / (VERIFY_CT * spec_k)
            meta["spec_accept_length"] = max_new / VERIFY_CT
            meta["spec_correct_drafts_histogram"] = list(HISTOGRAM)
    out = {"text": "x" * max_new, "meta_info": meta}
    if os.environ.get("FAKE_SGLANG_SHAPE", "full") == "full":
        # 0.4.x text outputs carried no token ids.
        first = prompt_ids[0] if prompt_ids else 0
        out["output_ids"] = [(first + i) % 50000 for i in range(max_new)]
    return out
