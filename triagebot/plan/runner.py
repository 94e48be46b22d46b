"""The planner's side of a runner kind: one `RunnerProfile` per kind (GPU, vLLM's CPU
build, vllm-mlx on MLX's CPU build, Apple silicon), found by `plan.runners.profile_for`.

`build_plan` runs the same steps for every kind and asks the profile at each step where
the kinds differ: which engines it refuses, which release it runs, how it changes the
fields every cell shares (stand-in models, a smaller workload, its budget and sampling),
which axes it can vary and why not the others, what it adds to each cell, the notes it
leaves, and how long a cell takes. The base class is the GPU runner's behaviour: a kind
overrides only where it differs. Pure, as the rest of the planner: the run side of a
kind (provisioning, per-run folders) lives in `triagebot.run.runners` under the same
kind name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triagebot.engines import EngineAdapter
from triagebot.overrides import ReproOptions
from triagebot.plan.axes import AXIS_ORDER, Axis
from triagebot.plan.context import PlanContext
from triagebot.plan.defaults import Choices
from triagebot.plan_model import Budget, Cell
from triagebot.request_model import ReproRequest

# What each engine can vary on a GPU runner; a report-derived axis outside this is dropped
# with a note, an axis the user asked for by name is refused.
ENGINE_AXES = {
    "vllm": set(AXIS_ORDER),
    "sglang": {"spec", "graph"},
    "vllm-mlx": {"spec"},
    "transformers": {"spec", "graph"},
}


@dataclass
class PlanDraft:
    """A plan while `build_plan` builds it: what it was asked, what it has chosen so far,
    and the runner profile it asks where runner kinds differ."""

    request: ReproRequest
    options: ReproOptions
    engine_name: str
    engine: EngineAdapter
    version: str | None
    choices: Choices
    budget: Budget
    profile: RunnerProfile
    # The fields every cell starts from, and what travels beside them (plan/context.py).
    base: dict[str, Any] = field(default_factory=dict)
    context: PlanContext = field(default_factory=PlanContext)


class RunnerProfile:
    """One runner kind's part in a plan; this base is the GPU runner, where the reported
    model runs as reported."""

    # The kind's name: the key `triagebot.run.runners` finds its run side by.
    kind = "gpu"
    # Whether a stand-in model replaces the reported one (so a report may name none).
    standin = False

    def matches(self, engine: str, gpu: str | None) -> bool:
        """Whether this kind runs `engine` on the runner `gpu=` names (None: not named)."""
        return False

    def check_engine(self, engine: str) -> None:
        """Raise PlanRejected, with the reason, for an engine this kind cannot run."""

    def choose_release(self, draft: PlanDraft) -> str | None:
        """The release to run for the one resolved in `draft.version`."""
        return draft.version

    def adjust(self, draft: PlanDraft) -> None:
        """Change `draft.base`, `draft.context` and `draft.budget` for this kind, noting
        each change in `draft.choices`."""

    def axes(self, engine: str) -> set[str]:
        """The axes this kind can vary on `engine`."""
        return ENGINE_AXES[engine]

    def where(self, engine: str) -> str:
        """`engine` on this runner, as a refusal or note names it."""
        return engine

    def why_not(self, axis: Axis, *, short: bool = False) -> str | None:
        """Why this kind cannot vary `axis`, where it can say (`short`: the claim only)."""
        return None

    def nothing_left(self, found: list[Axis], draft: PlanDraft) -> None:
        """Called when the report compares `found` and this kind can vary none of them:
        raise PlanRejected where that leaves nothing worth running."""

    def cell_fields(self, fields: dict[str, Any], context: PlanContext) -> None:
        """Change a cell's fields before the cell is built."""

    def finish_cell(self, cell: Cell) -> Cell:
        """A built cell (engine arguments and environment set) as this kind runs it."""
        return cell

    def notes(self, draft: PlanDraft, axes: list[Axis]) -> None:
        """What this kind answers and cannot, added to `draft.choices` once the axes are
        known."""

    def estimate_seconds(self, engine: EngineAdapter, cell: Cell, budget: Budget) -> float:
        """How long `cell` takes on this kind, start-up and runs."""
        return engine.estimate_seconds(cell, budget)
