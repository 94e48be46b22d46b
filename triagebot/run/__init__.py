"""Running cells: an interpreter per engine version, supervised scripts, the run order.

This is the edge of the pipeline that starts processes; everything it returns is plain
data (CellOutcome, ProvisionedEnv, Slot) for the analysis to read.
"""

from __future__ import annotations

from triagebot.run.gpu import LEFTOVER_THRESHOLD_MIB, gpu_memory_used_mib
from triagebot.run.provision import (
    ENGINES,
    ProvisionedEnv,
    ProvisionError,
    install_commands,
    provision,
)
from triagebot.run.schedule import (
    Slot,
    aa_pairs,
    initial_schedule,
    round_order,
    round_seed,
    schedule_round,
    split_runs,
)
from triagebot.run.supervise import (
    CellOutcome,
    child_environment,
    classify,
    read_result,
    run_script,
)

__all__ = [
    "ENGINES",
    "LEFTOVER_THRESHOLD_MIB",
    "CellOutcome",
    "ProvisionError",
    "ProvisionedEnv",
    "Slot",
    "aa_pairs",
    "child_environment",
    "classify",
    "gpu_memory_used_mib",
    "initial_schedule",
    "install_commands",
    "provision",
    "read_result",
    "round_order",
    "round_seed",
    "run_script",
    "schedule_round",
    "split_runs",
]
