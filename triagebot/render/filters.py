"""The only ways a value may enter a rendered script.

Every `{{ ... }}` in a template must end in one of these filters: the environment's
`finalize` hook refuses anything that is not an `Emitted` string, so a template that
prints a raw value fails to render instead of producing an unsafe script.
"""

from __future__ import annotations

import json
import math
import shlex
from typing import Any


class Emitted(str):
    """Text a filter has made safe for the spot it is printed in."""

    __slots__ = ()


class UnsafeValue(ValueError):
    """A value the filters will not print (a type or character they cannot make inert)."""


def py_literal(value: Any) -> str:
    """Python source that evaluates to `value`, built only from literals.

    `repr` of a str is always a single literal whatever it holds (quotes, newlines, NUL,
    lookalike letters), so text can never close the literal and become code.
    """
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsafeValue(f"{value!r} has no Python literal")
        return repr(float(value))
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, list | tuple):
        inner = ", ".join(py_literal(v) for v in value)
        return f"[{inner}]"
    if isinstance(value, dict):
        items = ", ".join(f"{py_literal(str(k))}: {py_literal(v)}" for k, v in value.items())
        return f"{{{items}}}"
    raise UnsafeValue(f"{type(value).__name__} values are not printed into scripts")


def py(value: Any) -> Emitted:
    return Emitted(py_literal(value))


def sh(value: Any) -> Emitted:
    """One shell word. Numbers and booleans are printed as they would be on a command line."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise UnsafeValue(f"{value!r} is not a number a command line can take")
    if not isinstance(value, str | int | float):
        raise UnsafeValue(f"{type(value).__name__} is not one shell word")
    return Emitted(shlex.quote(str(value)))


def sh_join(argv: list[Any]) -> Emitted:
    return Emitted(" ".join(sh(a) for a in argv))


def to_json(value: Any) -> str:
    """Compact JSON text. Deliberately not Emitted: it must still pass through py or sh."""
    py_literal(value)  # same admissible types
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def comment(text: Any) -> Emitted:
    """`text` as Python comment lines; control characters that could end a line are refused."""
    s = str(text)
    bad = [c for c in s if (ord(c) < 32 and c != "\n") or c in "\x7f\u2028\u2029\x85"]
    if bad:
        raise UnsafeValue(f"comment text holds control character {bad[0]!r}")
    return Emitted("\n".join(f"# {line}".rstrip() for line in s.splitlines() or [""]))


def finalize(value: Any) -> Any:
    if isinstance(value, Emitted):
        return value
    raise UnsafeValue(
        f"template printed {type(value).__name__} {str(value)[:40]!r} without an escaping "
        "filter (py, sh, sh_join or comment)"
    )


FILTERS = {"py": py, "sh": sh, "sh_join": sh_join, "json": to_json, "comment": comment}
