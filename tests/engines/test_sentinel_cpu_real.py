"""One sentinel case on the real engine: the MTP stand-in at vLLM 0.32.0's CPU build
against 0.25.1's, eager, in one job (`run/sentinel_steps.run_case`).

The point is that the case's figures come from a real step: a spec/no-spec ratio with
its interval at the new release, its ratio against the previous release, acceptance
from vLLM's own counters and greedy output equality from the recorded token digests.
Kept short: eager cells only (no compiling), few runs, no escalation. Deselect with
`-m "not vllm_cpu"`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.sentinel_steps import SentinelContext, run_case
from triagebot.run.watch_steps import WatchSettings
from triagebot.sentinel.cases import default_cases
from triagebot.sentinel.flags import flags_for

pytestmark = pytest.mark.vllm_cpu


def test_a_case_runs_both_releases_in_one_job_and_reads_its_figures(tmp_path: Path) -> None:
    [mtp] = [c for c in default_cases("vllm", "cpu") if c.method == "mtp"]
    case = mtp.model_copy(update={"modes": ["eager"]})
    ctx = SentinelContext(settings=WatchSettings(out_dir=tmp_path, cache_dir=DEFAULT_CACHE,
                                                 escalate=False),
                          extra=["runs=4", "prompts=2", "max_tokens=32"])
    figures = run_case(ctx, case, "0.32.0", "0.25.1", log=lambda _m: None)
    assert figures.status == "ok", figures.error_line
    [eager] = figures.modes
    assert eager.spec_ratio and eager.spec_ci and eager.verdict
    assert eager.previous_spec_ratio and eager.ratio_of_ratios and eager.ror_ci
    # vLLM's counters: MTP k=1 drafts one token a step, some of which the target keeps
    assert eager.acceptance_rate is not None and 0.0 < eager.acceptance_rate <= 1.0
    assert len(eager.per_position) == 1 and eager.acceptance_ci is not None
    assert eager.previous_acceptance is not None
    # greedy decoding with and without MTP gives the same tokens on both releases
    assert eager.outputs_equal is True and eager.previous_outputs_equal is True
    assert [f.kind for f in flags_for(figures, 0.05)
            if f.kind in ("crashed", "refused", "outputs_diverged")] == []
