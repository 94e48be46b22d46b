"""The one way a value model is declared: immutable once built, and closed to unknown keys.

A value that crosses a boundary (a command, a catalogue entry, a webhook's normalised
event) must not change under the code that holds it, and a misspelt key must fail where
it is read rather than vanish. `Frozen` says both once. It holds no fields, so a model
built on it keeps its own fields in their own order and serialises exactly as before.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
