"""Jinja set up one way for the rendered scripts and the report.

An undefined name fails the render instead of printing nothing, nothing is escaped by
Jinja (each value goes through the caller's own filters and `finalize`, which decide how
it is quoted), and block tags leave no stray blank lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jinja2


def strict_environment(loader: jinja2.BaseLoader,
                       finalize: Callable[[Any], Any]) -> jinja2.Environment:
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        # The pair together: a line that holds only a block tag leaves no blank line behind.
        trim_blocks=True, lstrip_blocks=True,
        finalize=finalize,
    )
