"""What the model checker reports (``embed.check.check``, ``embed.check.probe``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One thing ``check_scenario`` found.

    level: "error" (the model cannot run as written) or "warning"; item: the offending guard,
    output, mode, constraint, parameter or discrete variable; message: what is wrong and the fix.
    """

    level: str
    item: str
    message: str


def mode_label(mode) -> str:
    """How findings and messages name a mode: its id and name."""
    return f"mode {mode.id} {mode.name!r}"
