"""The CLI starts without the heavy libraries: each command imports what it runs on.

Checked in a fresh interpreter, since this test session has long since imported them.
Timing is measured in bench/startup.py, never here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What a command may need but start-up must not load: the numeric stack, the engines, the
# templating and the service's clients, and the pydantic models and Rich behind them.
HEAVY = ("scipy", "numpy", "torch", "transformers", "jinja2", "httpx", "celery", "redis",
         "github", "fastapi", "pydantic", "rich", "yaml")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True).stdout
    return {name.split(".")[0] for name in json.loads(out.splitlines()[-1])}


def test_importing_the_cli_loads_no_heavy_library() -> None:
    loaded = _loaded_after("import triagebot.cli")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


# Help renders through Rich, and Typer builds a command's parameters with pydantic; nothing
# else is needed to print it.
@pytest.mark.parametrize(("argv", "allowed"), [
    (["--version"], set()), (["--help"], {"rich"}),
    (["bisect", "--help"], {"rich", "pydantic"}), (["repro", "--help"], {"rich", "pydantic"}),
    (["sentinel", "--help"], {"rich", "pydantic"}),
])
def test_version_and_help_load_only_what_they_print_with(argv: list[str],
                                                         allowed: set[str]) -> None:
    code = ("import sys\nfrom triagebot.cli import app\n"
            f"sys.argv = ['triagebot', *{argv!r}]\n"
            "try:\n    app()\nexcept SystemExit as exc:\n    assert exc.code in (0, None)\n")
    loaded = _loaded_after(code)
    assert not loaded & (set(HEAVY) - allowed), sorted(loaded & set(HEAVY))
