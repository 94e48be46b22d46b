"""How long a bisect should take, told before it starts: the acknowledgement of a bisect
job says how many steps it expects and the most it may spend.

It reads the same package index the runner reads (`triagebot.bisect.envs`), so the figure
it gives is the one the runner will meet.
"""

from __future__ import annotations

from triagebot.bisect import envs, ranges, search
from triagebot.bisect.endpoints import nightly_span, start_level
from triagebot.bisect.spec import BisectSpec
from triagebot.frozen import Frozen
from triagebot.plan_model import Plan
from triagebot.run.provision import ProvisionError
from triagebot.settings import Settings


class Expected(Frozen):
    """How long a bisect should take, as its acknowledgement says: the points strictly
    between its ends at the level it starts at, the steps of a clean search over them,
    and the most it may spend."""

    level: str
    between: int
    steps: int
    most: int


def expected_steps(settings: Settings, spec: BisectSpec, plan: Plan,
                   timeout_s: float = 10.0) -> Expected | None:
    """The expected steps of a bisect whose ends are releases or nightlies, from the same
    package index its runner reads; None where that cannot be told yet (a commit end,
    whose commits the runner has listed from GitHub, or an index out of reach)."""
    try:
        found = _listed_range(settings, spec, plan, timeout_s)
    except (ranges.BisectError, ProvisionError):
        return None  # the runner says why, on the job's comment
    if found is None:
        return None
    level, candidates = found
    return Expected(level=level, between=candidates - 1,
                    steps=search.clean_steps_bound(candidates),
                    most=search.step_budget(candidates))


def unlisted_ends(settings: Settings, spec: BisectSpec, plan: Plan,
                  timeout_s: float = 10.0) -> str | None:
    """Why the engine's release list (the index its runner reads) cannot hold this
    bisect's ends, as the command arrives; None when it can, or when the list is out of
    reach (the runner then says what it finds)."""
    try:
        _listed_range(settings, spec, plan, timeout_s)
    except ranges.BisectError as exc:
        return str(exc)
    except ProvisionError:
        return None
    return None


def _listed_range(settings: Settings, spec: BisectSpec, plan: Plan,
                  timeout_s: float) -> tuple[str, int] | None:
    """The level a bisect starts at and its candidates there, from the index; None for a
    commit end. Raises BisectError for ends the index does not list."""
    level, _ = start_level(spec.good, spec.bad, spec.direction)
    if level == "commit":
        return None
    package = envs.package_for(plan.engine, plan.gpu_kind)
    where = str(settings.bisect_find_links or settings.bisect_index)
    known = ranges.finals(envs.index_versions(package, where, timeout_s))
    if level == "release":
        rng = ranges.release_range(known, spec.good, spec.bad, direction=spec.direction)
    else:
        nightly = envs.index_versions(envs.nightly_package_for(package), where, timeout_s,
                                      wheels_here=True)
        rng = nightly_span(ranges.nightlies(nightly), known, spec.good, spec.bad,
                           direction=spec.direction)
    return level, rng.candidates
