"""Hybrid automaton (gillespie2005 Sec 4): modes, switching conditions, reset maps.

A ``Mode`` names its active constraints (the constraint set embedded while it
is visited, eq 17), the constitutive laws of the contact forces that are not
constraint forces in it, and its switching conditions f_{j,i}^{(k)} (eq 18).
The scenario's ``transition`` callable is the reset map phi_{j,i}^{(k)} (eq 19):
given the located event it returns a ``Jump`` to the next mode.  ``initial``
is the special reset map of eq 20.  See docs/design.md, "Data flow".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Guard:
    """Switching condition f(x) = 0 (eq 18), watched in one direction.

    direction -1: fires when expr falls from > 0 to <= 0; +1: rises from < 0 to >= 0.
    ``enabled(discrete)`` says whether the condition is watched for these discrete values.
    """

    name: str
    expr: object
    direction: int = -1
    enabled: Optional[Callable[[dict], bool]] = None


@dataclass(frozen=True)
class Mode:
    id: int
    name: str
    constraints: tuple = ()
    laws: tuple = ()          # ((force_symbol, expr), ...)
    guards: tuple = ()
    outputs: tuple = ()       # ((output name, expr), ...): this mode's own value of an output
    report: Optional[int] = None   # the mode number shown outside (default: id)


@dataclass
class Jump:
    """Result of a reset map: the next mode, discrete-variable updates, optional new q, u."""

    mode: int
    discrete: dict = field(default_factory=dict)
    q: Optional[np.ndarray] = None
    u: Optional[np.ndarray] = None
    constraints: Optional[tuple] = None   # active constraint names, if not the mode's own
    impact: bool = False                  # an impact (counted, watched for accumulation)


@dataclass
class Automaton:
    """Modes and reset maps over one model and its library of constraints."""

    model: object
    constraints: dict              # name -> Constraint
    modes: dict                    # id -> Mode
    discrete: dict                 # name -> initial value (floats; passed to compiled functions)
    outputs: dict                  # name -> expr (in q, u, forces, params, discrete)
    transition: Callable           # (ctx, guard_name) -> Jump
    initial: Callable              # (ctx) -> Jump
    zeno: Optional[Callable] = None  # (ctx, guard_name) -> Jump into the persistent mode
    allowed: dict = field(default_factory=dict)  # input name -> its allowed values (a latch
                                                 # pin, a selector); other inputs: any finite
