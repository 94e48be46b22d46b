"""Pinned-acceptance arms (plan/synthetic.py): the rates pinned and the cells built."""

from __future__ import annotations

import math

import pytest

from tests.plan.test_cpu_plan import plan_for
from tests.report import load_fixture
from triagebot.errors import PlanRejected
from triagebot.plan.synthetic import (
    PREFIX,
    ArmRequest,
    add_arms,
    full_pin,
    is_pinned,
    reported_pin,
    why_not,
)
from triagebot.plan_model import Plan


def _plan(version: str = "0.25.1") -> Plan:
    plan, _ = load_fixture("reproduced_slowdown")
    return plan.model_copy(update={"engine_version": version})


def _requests(plan: Plan) -> list[ArmRequest]:
    spec = {c.varies["graph"]: c for c in plan.cells if c.spec and not c.replica}
    base = {c.varies["graph"]: c for c in plan.cells if c.spec is None}
    return [ArmRequest(spec_cell=spec[m].cell_id, base_cell=base[m].cell_id, mode=m)
            for m in ("eager", "graph")]


def test_full_acceptance_keeps_every_draft() -> None:
    pin = full_pin(3)
    assert pin.rates == [1.0, 1.0, 1.0] and pin.length == 4.0


def test_a_reported_length_for_one_draft_is_its_rate() -> None:
    pin = reported_pin(1, length=1.69)
    assert pin is not None and pin.rates == pytest.approx([0.69], abs=1e-6)
    assert "1.69" in pin.source


def test_a_reported_length_for_several_drafts_keeps_one_conditional_rate() -> None:
    pin = reported_pin(3, length=2.2)
    assert pin is not None and pin.length == pytest.approx(2.2, abs=1e-5)
    c = pin.rates[0]
    assert pin.rates == pytest.approx([c, c * c, c ** 3], abs=1e-5)
    assert "conditional" in pin.source


def test_a_reported_rate_is_the_mean_of_the_positions() -> None:
    pin = reported_pin(2, rate=0.5)
    assert pin is not None and math.fsum(pin.rates) / 2 == pytest.approx(0.5, abs=1e-5)


def test_per_position_rates_are_taken_as_stated_when_they_do_not_rise() -> None:
    assert reported_pin(2, per_position=[0.8, 0.5]).rates == [0.8, 0.5]  # type: ignore[union-attr]
    # rising rates are not a shape vLLM's synthetic mode takes: the length decides instead
    pin = reported_pin(2, per_position=[0.3, 0.6], length=1.5)
    assert pin is not None and pin.length == pytest.approx(1.5, abs=1e-5)


def test_nothing_stated_or_out_of_reach_pins_nothing() -> None:
    assert reported_pin(1) is None
    assert reported_pin(1, length=2.5) is None  # one draft reaches 2.0 at most
    assert reported_pin(2, rate=0.0) is None


def test_arms_copy_the_spec_cells_in_synthetic_mode() -> None:
    plan = _plan()
    pins = [full_pin(1), reported_pin(1, length=1.69)]
    grown = add_arms(plan, _requests(plan), [p for p in pins if p])
    new = [c for c in grown.cells if c not in plan.cells]
    assert len(new) == 4 and all(is_pinned(c) for c in new)
    assert len({c.cell_id for c in grown.cells}) == len(grown.cells)
    for cell in new:
        spec = cell.engine_args["speculative_config"]
        assert spec["rejection_sample_method"] == "synthetic"
        assert spec["synthetic_acceptance_rates"] in ([1.0], [pytest.approx(0.69, abs=1e-6)])
        assert spec["method"] == "mtp" and spec["num_speculative_tokens"] == 1
    names = [c.name for c in grown.comparisons if c.name.startswith(PREFIX)]
    assert names == ["pinned full/no_spec @ eager", "pinned reported/no_spec @ eager",
                     "pinned full/no_spec @ graph", "pinned reported/no_spec @ graph"]
    # The same arms twice are the same cells: a resumed job finds its runs again.
    again = add_arms(plan, _requests(plan), [p for p in pins if p])
    assert [c.cell_id for c in again.cells] == [c.cell_id for c in grown.cells]


def test_a_release_without_the_mode_is_refused_with_its_reason() -> None:
    plan = _plan("0.17.1")
    why = why_not(plan)
    assert why is not None and "0.17.1 has no synthetic acceptance mode" in why
    with pytest.raises(PlanRejected, match="no synthetic acceptance mode"):
        add_arms(plan, _requests(plan), [full_pin(1)])
    assert why_not(plan.model_copy(update={"engine": "vllm-mlx"})) == (
        "vllm-mlx has no synthetic acceptance mode")


def test_a_spec_cell_without_a_no_spec_partner_gets_one() -> None:
    full = _plan()
    spec_only = [c.cell_id for c in full.cells if c.spec is not None]
    plan = full.model_copy(update={"cells": [full.cell(cid) for cid in spec_only],
                                   "comparisons": []})
    spec = next(c for c in plan.cells if c.spec and not c.replica and c.varies["graph"] == "graph")
    grown = add_arms(plan, [ArmRequest(spec_cell=spec.cell_id, mode="graph")], [full_pin(1)])
    added = [c for c in grown.cells if c not in plan.cells]
    base = next(c for c in added if c.spec is None)
    assert "speculative_config" not in base.engine_args and base.label == "no_spec + graph"
    assert base.enforce_eager == spec.enforce_eager and base.model == spec.model
    by_name = {c.name: c for c in grown.comparisons}
    assert by_name["added spec/no_spec @ graph"].numerator == [spec.cell_id]
    assert by_name["added spec/no_spec @ graph"].denominator == [base.cell_id]
    assert by_name["pinned full/no_spec @ graph"].denominator == [base.cell_id]
    # It is the cell a plan with a spec axis would have had: the same id.
    assert base.cell_id in {c.cell_id for c in full.cells}


def test_a_served_spec_cell_is_copied_to_the_offline_api_with_its_partner() -> None:
    """On the cpu runner a served cell starts a server every round; its pinned arms, and
    the cells they are set against, run through the offline API on live engines."""
    plan = plan_for("003")  # EAGLE-3 served, graph against eager, on the cpu runner
    spec = next(c for c in plan.cells if c.spec and not c.replica)
    assert spec.workload.kind == "serve"
    grown = add_arms(plan, [ArmRequest(spec_cell=spec.cell_id, mode="eager")], [full_pin(3)],
                     offline=True)
    added = [c for c in grown.cells if c not in plan.cells]
    assert {c.workload.kind for c in added} == {"offline"}
    assert {c.template for c in added} == {"vllm/offline.py.j2"}
    copy = next(c for c in added if c.spec and not is_pinned(c))
    assert copy.label == f"{spec.label} (offline)"
    assert copy.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"  # in the script's process
    base = next(c for c in added if c.spec is None)
    assert base.label.endswith("(offline)")
    by_name = {c.name: c for c in grown.comparisons}
    assert by_name["added spec/no_spec @ eager"].numerator == [copy.cell_id]
    assert by_name["pinned full/no_spec @ eager"].denominator == [base.cell_id]
