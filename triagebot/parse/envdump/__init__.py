"""Environment dumps (collect_env, check_env, nvidia-smi, pip lists) → `EnvDump`."""

from __future__ import annotations

from triagebot.parse.envdump.parser import parse_environment
from triagebot.parse.envdump.recorder import EnvDump

__all__ = ["EnvDump", "parse_environment"]
