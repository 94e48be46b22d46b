"""How the fake engine drafts: fixed counts per request, shared by the fake LLM, the fake
server and the tests that predict the counters."""

from __future__ import annotations

from typing import Any

DRAFTS_PER_REQUEST = 10


def per_request(k: int) -> dict[str, Any]:
    """Counters one request adds with k speculative tokens."""
    per_pos = [max(DRAFTS_PER_REQUEST - 3 * (i + 1), 0) for i in range(k)]
    return {
        "num_drafts": DRAFTS_PER_REQUEST,
        "num_draft_tokens": DRAFTS_PER_REQUEST * k,
        "num_accepted_tokens": sum(per_pos),
        "per_position_accepted": per_pos,
    }


def split(total: int) -> tuple[int, int]:
    """One counter as two engines (data parallel) report it: the reader must sum them."""
    return total - total // 3, total // 3
