"""Syntax checks every rendered script passes before anyone sees it."""

from __future__ import annotations

import ast
import shutil
import subprocess


class RenderError(ValueError):
    """A script failed its syntax check, or a value could not be rendered safely."""


def check_python(text: str, name: str) -> None:
    try:
        ast.parse(text, filename=name)
    except SyntaxError as exc:
        raise RenderError(f"{name}: rendered Python does not parse: {exc.msg} "
                          f"(line {exc.lineno})") from None


def check_shell(text: str, name: str) -> None:
    """`bash -n` reads the script without running any of it."""
    bash = shutil.which("bash")
    if bash is None:
        raise RenderError(f"{name}: bash is not installed, so the script cannot be checked")
    proc = subprocess.run(
        [bash, "-n"], input=text, capture_output=True, text=True, timeout=30, check=False
    )
    if proc.returncode != 0:
        raise RenderError(f"{name}: rendered shell does not parse: {proc.stderr.strip()}")
