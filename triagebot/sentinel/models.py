"""The sentinel's data: the standing cases, what one case measured at one release, flags.

These names are the interface the sentinel's parts share (the runner fills
`CaseFigures`, `flags` turns them into `Flag`s, `history` stores both, the App's workers
and tracking issues read them). Fields may be added; none is renamed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from triagebot.analyze.verdict_words import Verdict
from triagebot.frozen import Frozen
from triagebot.repo_config import SentinelMethod, SentinelMode

# The same names `[sentinel]` reads, so a case the config takes is a case the models take.
Method = SentinelMethod
Mode = SentinelMode
CaseStatus = Literal["ok", "crashed", "refused", "inconclusive"]
FlagKind = Literal["stopped_paying", "speedup_fell", "acceptance_fell", "outputs_diverged",
                   "crashed", "refused", "drift"]
# The figures a mode records, by the name `history` stores their series under.
METRICS: tuple[str, ...] = ("spec_ratio", "ratio_of_ratios", "acceptance_rate")
Interval = tuple[float, float]


class SentinelCase(Frozen):
    """One standing case of the matrix: one method at one k, on one model (or the
    project's stand-in for it), measured under each of `modes` with speculation on and
    off, on one runner kind ("cpu" or a GPU kind)."""

    case_id: str = Field(min_length=1, max_length=120, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    engine: str
    model: str
    method: Method
    k: int = Field(ge=1, le=16)
    modes: list[Mode] = Field(min_length=1)
    workload: str
    runner: str
    # The speculative model for methods that load one (draft model, EAGLE, EAGLE-3);
    # empty where the engine's own default (or the method) needs none.
    draft: str = ""


class ModeFigures(Frozen):
    """One mode of one case at one release."""

    mode: Mode
    # spec / no-spec at the new release, its interval and verdict (SAME: speculation no
    # longer changes the speed; DIFFERENT: it does, on the side the ratio shows).
    spec_ratio: float | None = None
    spec_ci: Interval | None = None
    verdict: Verdict | None = None
    # (spec/no-spec at the new release) / (spec/no-spec at the previous one), measured
    # in the same job; below 1: speculation lost more than the base did.
    ratio_of_ratios: float | None = None
    ror_ci: Interval | None = None
    ror_verdict: Verdict | None = None
    acceptance_rate: float | None = None
    acceptance_ci: Interval | None = None
    per_position: list[float] = Field(default_factory=list)
    outputs_equal: bool | None = None  # greedy output equality, spec vs no-spec
    # The previous release's figures, measured in the same job (None: not measured).
    previous_spec_ratio: float | None = None
    previous_spec_ci: Interval | None = None
    previous_verdict: Verdict | None = None
    previous_acceptance: float | None = None
    previous_acceptance_ci: Interval | None = None
    previous_outputs_equal: bool | None = None
    note: str = ""  # why a figure is missing, in one line


class CaseFigures(Frozen):
    """One case at one release, measured against `previous` (None: the first release)."""

    case_id: str
    engine: str
    release: str
    previous: str | None = None
    status: CaseStatus
    error_line: str | None = None  # the engine's own line when it crashed or refused
    modes: list[ModeFigures] = Field(default_factory=list)
    measured_at: datetime
    job_url: str | None = None

    def mode(self, name: Mode) -> ModeFigures | None:
        return next((m for m in self.modes if m.mode == name), None)


class Flag(Frozen):
    """Why a case at a release needs a maintainer's look, in one line."""

    case_id: str
    release: str
    previous: str | None = None
    kind: FlagKind
    mode: Mode | None = None
    reason: str
