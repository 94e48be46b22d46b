"""The finding of `analyze/synthetic.py`: per compared mode, why speculation is slower
or faster, from the pinned-acceptance arms and the break-even acceptance length."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Which explanation of a slower speculation the measurements support (analyze/synthetic.py).
Cause = Literal["step", "drafter", "both", "undecided"]


class PinnedMode(BaseModel):
    """What the pinned arms of one compared mode measured, and what follows."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    method: str
    k: int
    measured_length: float | None = Field(default=None,
                                          description="acceptance length of the spec cell")
    measured_ratio: float | None = Field(default=None, description="spec / no spec")
    full_ratio: float | None = None
    full_ci: tuple[float, float] | None = None
    full_verdict: str | None = None
    reported_length: float | None = None
    reported_source: str | None = None
    reported_ratio: float | None = None
    reported_ci: tuple[float, float] | None = None
    reported_verdict: str | None = None
    break_even: float | None = Field(default=None, description="acceptance length at which "
                                     "speculation starts to pay: the spec step's cost in "
                                     "plain steps")
    break_even_ci: tuple[float, float] | None = None
    break_even_source: str = ""
    cause: Cause = "undecided"
    sentence: str
