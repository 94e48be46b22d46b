"""Pydantic shapes of what the findings conclude: the outcome, and speculation that never
engaged (`never_engaged.py` finds the cases, `findings_outcome.py` draws the outcome)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# cannot_answer: the report's own comparison cannot run on this runner (the plan says why).
Outcome = Literal["reproduced", "not_reproduced", "inconclusive", "cannot_answer", "error"]

NeverEngagedCase = Literal["zero_drafts", "length_one", "effective_below_requested",
                           "matches_no_spec"]


class NeverEngaged(BaseModel):
    """A spec cell that ran without speculating, with the counter that shows it."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    label: str
    case: NeverEngagedCase
    counter: str = Field(description="the counter or measurement that shows the case")
    sentence: str
