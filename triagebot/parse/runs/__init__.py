"""What the reporter ran: commands and Python calls mapped to one vocabulary of settings,
one `RunConfig` per command line, engine call or mode of a script."""

from __future__ import annotations

from triagebot.parse.runs.config import (
    RunConfig,
    from_invocations,
    from_python,
    spec_config_settings,
)

__all__ = ["RunConfig", "from_invocations", "from_python", "spec_config_settings"]
