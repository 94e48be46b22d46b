"""One watch step on the real engine: vLLM 0.32.0's CPU build measured against 0.25.1's,
side by side in one job (`run/watch_steps.watch_step`), on the stand-ins.

The point is that a step's cells run in their own release's environment within one plan:
each result names the release it ran, and the step reads a ratio at the new release and
its change from the old one. Kept short: eager cells only (no compiling), few runs, no
escalation. Deselect with `-m "not vllm_cpu"`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.watch_steps import StepContext, Watched, WatchSettings, watch_step

pytestmark = pytest.mark.vllm_cpu

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "glm-ocr-mtp-graph.md"
EAGER = "spec/no_spec"  # the only comparison of an eager-only plan


def test_a_step_runs_both_releases_in_one_job_and_reads_their_change(tmp_path: Path) -> None:
    request = parse_report(SAMPLE.read_bytes())
    options = parse_overrides(["engine=vllm", "gpu=cpu", "modes=eager", "runs=4",
                               "prompts=2", "max_tokens=32"])
    ctx = StepContext(request=request, options=options,
                      settings=WatchSettings(out_dir=tmp_path, cache_dir=DEFAULT_CACHE,
                                            escalate=False))
    before = Watched(comparison=EAGER, last="0.25.1")
    after = watch_step(ctx, before, "0.32.0", log=lambda _m: None)
    [row] = after.rows
    assert row.state not in ("broken", "config_invalid"), row.reason
    assert row.against == "0.25.1" and row.ratio is not None and row.ratio.value
    assert row.change is not None and row.change.value, row.reason
    assert after.last == "0.32.0"
    ran = {}
    for path in (tmp_path / "01-0.32.0" / "results").glob("c*-r*.json"):
        doc = json.loads(path.read_text())
        ran.setdefault(doc["cell_id"], set()).add((doc["engine_version"] or "").split("+")[0])
    plan = json.loads((tmp_path / "01-0.32.0" / "plan.json").read_text())
    want = {c["cell_id"]: {c["version"]} for c in plan["cells"]}
    assert ran == want  # every cell ran on its own release
