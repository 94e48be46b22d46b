"""What the planner carries beside the fields every cell shares.

`base_fields` builds a dict of the fields all cells start from; these values travel with
it but are not cell fields as they stand: the draft becomes part of a spec level, the
extra speculative keys join a cell only when it speculates, the policy decides each
cell's `trust_remote_code`, and the cpu runner swaps models for stand-ins.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from triagebot.engines.standins import Family
from triagebot.plan_model import PlanPolicy


class PlanContext(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    policy: PlanPolicy = Field(default_factory=PlanPolicy)
    # The draft model the spec levels use (the report's, or one named with draft=).
    draft: str | None = None
    # speculative_config keys beyond method, model and k: a speculating cell carries them
    # as extra_speculative_config.
    extra_spec: dict[str, Any] = Field(default_factory=dict)
    # The reported model, when another model runs in its place (a stand-in, the
    # reference engine's tiny model).
    stands_in_for: str | None = None
    # The stand-in family, on the cpu runner only.
    cpu_family: Family | None = None
    # On the cpu runner, a multimodal plan runs the vision-language stand-in instead.
    cpu_vision: bool = False
    # The label of a plan's one configuration where no axis is left to name it (the eager
    # arm the cpu runner keeps of an encoder-graph comparison).
    base_label: str | None = None
