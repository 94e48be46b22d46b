"""`key=value` overrides: one typed model shared by the CLI and `@triagebot repro` comments.

`parse_overrides(["spec=mtp:1,none", "k=1,2"])` gives a `ReproOptions`, or an
`OptionsError` that names the key at fault and lists what would be accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from triagebot.plan_model import GpuKind, ModelId, PlanEngine, PlanSpecMethod, PlanWorkloadKind

ModeChoice = Literal[
    "eager", "graph", "piecewise", "full", "full_and_piecewise", "full_decode_only",
    "vit_eager", "vit_graph", "v1", "v2",
]

MODE_ALIASES = {
    "cudagraph": "graph", "cuda_graph": "graph", "cudagraphs": "graph", "graphs": "graph",
    "compile": "graph", "vit_cudagraph": "vit_graph", "runner_v1": "v1", "runner_v2": "v2",
    "mrv1": "v1", "mrv2": "v2",
}

_METHODS: tuple[str, ...] = get_args(PlanSpecMethod)
_NO_SPEC_WORDS = ("none", "off", "no_spec", "nospec", "baseline")
# Speculative tokens per step: engines accept 1..16, and a spec level or `k=` list says so.
SpecTokens = Annotated[int, Field(ge=1, le=16)]


class OptionsError(ValueError):
    """An override the user wrote cannot be used; says which and what is accepted."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


# Inside the product k is `num_speculative_tokens`, as in ReproRequest and SpecParams;
# `k` is only the word users type (`k=1,2`, `spec=mtp:3`), so it is the fields' alias.
class SpecChoice(BaseModel):
    """One spec level of a plan: a method with k, or `method=None` for no speculation."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    method: PlanSpecMethod | None = None
    num_speculative_tokens: SpecTokens | None = Field(default=None, alias="k")

    def __str__(self) -> str:
        if self.method is None:
            return "none"
        k = self.num_speculative_tokens
        return f"{self.method}:{k}" if k else self.method


class ReproOptions(BaseModel):
    """What a maintainer may override. Every field is optional: None keeps the report's."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    engine: PlanEngine | None = None
    version: str | None = Field(default=None, pattern=r"^[0-9][0-9A-Za-z.+-]{0,40}$")
    model: ModelId | None = None
    draft: ModelId | None = None
    spec: list[SpecChoice] | None = None
    num_speculative_tokens: list[SpecTokens] | None = Field(default=None, alias="k")
    modes: list[ModeChoice] | None = None
    workload: PlanWorkloadKind | None = None
    runs: int | None = Field(default=None, ge=1, le=100)
    warmups: int | None = Field(default=None, ge=0, le=20)
    gpu: GpuKind | None = None
    tp: int | None = Field(default=None, ge=1, le=64)
    temperature: float | None = Field(default=None, ge=0.0, le=5.0)
    max_tokens: int | None = Field(default=None, ge=1, le=65536)
    concurrency: int | None = Field(default=None, ge=1, le=100_000)
    prompts: int | None = Field(default=None, ge=1, le=100_000)

    def is_empty(self) -> bool:
        return not self.model_dump(exclude_none=True)

    def as_args(self) -> list[str]:
        """The overrides back in `key=value` form (for the "Reproduce with" command)."""
        out = []
        for key, value in self.model_dump(exclude_none=True, by_alias=True).items():
            if key == "spec":
                text = ",".join(str(SpecChoice(**v)) for v in value)
            elif isinstance(value, list):
                text = ",".join(str(v) for v in value)
            else:
                text = str(value)
            out.append(f"{key}={text}")
        return out


# The keys users type: the fields' aliases where they have one.
KEYS: tuple[str, ...] = tuple(field.alias or name
                              for name, field in ReproOptions.model_fields.items())


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _spec_choice(token: str, key: str) -> dict[str, Any]:
    """The fields of one spec level; `ReproOptions` validates them with everything else,
    so an out-of-range k is the same precise error as any other bad value."""
    low = token.lower()
    if low in _NO_SPEC_WORDS:
        return {}
    method, _, k = low.partition(":")
    if method not in _METHODS:
        raise OptionsError(
            f"spec={token!r}: unknown method {method!r}; accepted: "
            f"{', '.join(_METHODS)}, or none", key=key)
    if k and not k.isdigit():
        raise OptionsError(f"spec={token!r}: k must be a whole number, as in {method}:3",
                           key=key)
    return {"method": method, "k": int(k) if k else None}


def _mode(token: str) -> str:
    low = token.lower().replace("-", "_")
    return MODE_ALIASES.get(low, low)


def _convert(key: str, raw: str) -> Any:
    if key == "spec":
        return [_spec_choice(t, key) for t in _split(raw)]
    if key == "modes":
        return [_mode(t) for t in _split(raw)]
    if key == "k":
        return _split(raw)
    return raw


def parse_overrides(items: Iterable[str]) -> ReproOptions:
    """Read `key=value` words. Unknown keys, repeated keys and bad values are errors."""
    values: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not key:
            raise OptionsError(f"{item[:60]!r} is not key=value; keys: {', '.join(KEYS)}")
        if key not in KEYS:
            raise OptionsError(f"unknown key {key[:40]!r}; valid keys: {', '.join(KEYS)}",
                               key=key)
        if key in values:
            raise OptionsError(f"{key} is given twice", key=key)
        raw = raw.strip()
        if not raw:
            raise OptionsError(f"{key}= needs a value", key=key)
        values[key] = _convert(key, raw)
    try:
        return ReproOptions(**values)
    except ValidationError as exc:
        raise OptionsError(_describe(exc)) from None


_PATTERN_HELP = {
    "model": "not a model id: use ORG/NAME with letters, digits, '.', '_', '-', "
    "or an absolute path",
    "draft": "not a model id: use ORG/NAME with letters, digits, '.', '_', '-', "
    "or an absolute path",
    "version": "not a version: use digits and dots, as in 0.17.1",
    "gpu": "not a GPU kind: use lower-case letters, digits and '-', as in h100",
}


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        key = loc[0] if loc else "value"
        if key == "spec" and loc[-1] == "k":
            key = "spec k"
        value = err.get("input")
        shown = f"{value!r}"[:60] if not isinstance(value, dict | list) else ""
        msg = err["msg"]
        if err["type"] == "literal_error":
            msg = "expected one of " + re.sub(r"^Input should be ", "", msg)
        elif err["type"] == "string_pattern_mismatch":
            msg = _PATTERN_HELP.get(key, "has characters that are not allowed")
        elif err["type"] in ("greater_than_equal", "less_than_equal") and key in ("k", "spec k"):
            msg = "speculative tokens per step must be 1 to 16"
        parts.append(f"{key}{'=' + shown if shown else ''}: {msg}")
    return "; ".join(parts)
