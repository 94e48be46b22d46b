"""Errors a user sees: each says what was refused, why, and what would be accepted."""

from __future__ import annotations


class PlanRejected(ValueError):
    """A plan cannot be built as asked; `field` names the input at fault."""

    def __init__(self, message: str, *, field: str = "", accepted: list[str] | None = None):
        self.field = field
        self.accepted = list(accepted or [])
        if self.accepted:
            message = f"{message}; accepted: {', '.join(self.accepted)}"
        super().__init__(message)
