"""What the GPUs are and hold, as nvidia-smi reports it.

The supervisor samples memory before and after a cell: vLLM engine processes are known to
outlive their parent and keep their memory, and a GPU left half full would slow or break
every later cell, so the leftover is measured and reported with the cell that caused it.
`nvidia-smi -q` gives the machine's GPUs, driver and the CUDA version the driver
supports, which a GPU check keeps beside its report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

# Drivers and runtimes keep a few hundred MiB per context around for a moment after a
# process exits; anything above this is a real leak.
LEFTOVER_THRESHOLD_MIB = 512

_QUERY = ["--query-gpu=memory.used", "--format=csv,noheader,nounits"]


def gpu_memory_used_mib(timeout_s: float = 20.0) -> list[int] | None:
    """Memory in use on each GPU in MiB, or None where nvidia-smi is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, *_QUERY], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    values: list[int] = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            values.append(int(float(line)))
        except ValueError:
            # "[N/A]" on some virtualised GPUs: a reading we cannot trust is no reading.
            return None
    return values or None


def leftover_mib(before: Sequence[int] | None, after: Sequence[int] | None) -> int | None:
    """The largest growth on any one GPU between two samples; None without both samples."""
    if before is None or after is None or len(before) != len(after):
        return None
    return max((a - b for a, b in zip(after, before, strict=True)), default=0)


def settled_leftover_mib(
    before: Sequence[int] | None,
    *,
    settle_s: float,
    threshold_mib: int = LEFTOVER_THRESHOLD_MIB,
    sample: Callable[[], list[int] | None] = gpu_memory_used_mib,
    poll_s: float = 1.0,
) -> int | None:
    """Memory still held above `before` once it has had `settle_s` to be released.

    Returns 0 when the growth falls to the threshold or below, the growth in MiB when it
    stays above, and None when memory cannot be read.
    """
    if before is None:
        return None
    deadline = time.monotonic() + settle_s
    while True:
        grown = leftover_mib(before, sample())
        if grown is None:
            return None
        if grown <= threshold_mib:
            return 0
        if time.monotonic() >= deadline:
            return grown
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


# --- the machine ------------------------------------------------------------------------


class SmiFacts(BaseModel):
    """The fields of `nvidia-smi -q` a report's environment compares."""

    driver: str | None = None
    cuda: str | None = Field(default=None, description="the newest CUDA the driver supports")
    gpus: list[str] = Field(default_factory=list, description="product names, one per GPU")
    memory_mib: list[int] = Field(default_factory=list, description="total memory per GPU")
    attached: int | None = Field(default=None, description="what the `Attached GPUs` line says")


_SMI_LINE = re.compile(r"^(\s*)([A-Za-z][A-Za-z /()-]*?)\s*:\s*(.*?)\s*$")


def parse_smi_query(text: str) -> SmiFacts:
    """`nvidia-smi -q` output as SmiFacts; fields it does not show stay empty."""
    facts = SmiFacts()
    section = ""
    for line in text.splitlines():
        m = _SMI_LINE.match(line)
        if m is None:
            if line.strip():
                section = line.strip()
            continue
        indent, key, value = len(m.group(1)), m.group(2), m.group(3)
        if not value:
            section = key
        elif indent == 0 and key == "Driver Version":
            facts.driver = value
        elif indent == 0 and key == "CUDA Version":
            facts.cuda = value
        elif indent == 0 and key == "Attached GPUs" and value.isdigit():
            facts.attached = int(value)
        elif key == "Product Name":
            facts.gpus.append(value)
        elif key == "Total" and section == "FB Memory Usage":
            digits = re.match(r"(\d+)\s*MiB", value)
            if digits:
                facts.memory_mib.append(int(digits.group(1)))
    return facts


def smi_query(timeout_s: float = 60.0) -> str | None:
    """`nvidia-smi -q` as text, or None where nvidia-smi is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, "-q"], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None
