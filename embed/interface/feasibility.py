"""What a model's own physics asks of a start, a restored state and its parameters (issue 33).

A scenario declares its conditions (``Scenario(feasible=[...])``); the engine checks them when
a simulator starts (``Scenario.simulator``) and the FMU when a state is restored, and refuses
with an ``InputError`` naming the value.  A condition is one of:

- a guard of the active mode (eq 18): the state must lie on the side of its switching surface
  that the mode needs (f >= 0 for a guard watched falling, f <= 0 rising).  A guard already
  crossed at a start is never seen cross (it fires on a crossing), so the mode runs where
  it does not hold: a tip inside the belt, a disk beyond the ramp's end, a tensile contact;
- an output that must not be negative in the modes named (a normal force while in contact);
- a function of the parameters that must not be negative (Jzz <= 2 Jxx).
"""

from __future__ import annotations

from typing import Callable, Optional

from ..base.errors import InputError
from ..base.record import Record

TOL = 1e-9       # absolute: a value this far on the wrong side is still on the surface


class Feasible(Record):
    """One condition (module docstring).

    Parameters
    ----------
    what : str
        What a violation means, for the message ("the tip starts inside the belt").
    guard : str, optional
        A guard of the active mode(s) (those of ``modes`` that have it).
    output : str, optional
        An output of the automaton that must be >= 0.
    params : callable, optional
        ``params(p) -> float``, p the parameters by name; must be >= 0.
    modes : tuple of int, optional
        The modes a guard or output condition applies in (default: every mode).
    """

    FIELDS = ("what", "guard", "output", "params", "modes")
    FROZEN = True

    def __init__(self, what: str, guard: str = "", output: str = "",
                 params: Optional[Callable[[dict], float]] = None, modes: tuple = ()):
        self.__dict__.update(what=what, guard=guard, output=output, params=params, modes=modes)

    def applies(self, mode_id):
        return not self.modes or mode_id in self.modes


def check_parameters(conditions, p, scenario):
    """InputError naming the first parameter condition that ``p`` breaks."""
    for c in conditions:
        if c.params is not None:
            value = float(c.params(p))
            if not value >= -TOL:
                raise InputError(f"scenario {scenario!r}: {c.what} (the condition's value is "
                                 f"{value:.6g}, it must not be negative); set other parameters")


def check_state(conditions, sim, scenario):
    """InputError naming the first guard or output condition the simulator's current state
    breaks, with its value, mode and time."""
    mode = sim.active_mode
    if mode is None:
        return
    names = [g.name for g in mode.guards]
    guards = sim.mon[sim.compiled_mode.sl_guards].tolist()
    outputs = None
    for c in conditions:
        if not c.applies(mode.id):
            continue
        if c.guard and c.guard in names:
            i = names.index(c.guard)
            if not sim.state.enabled[i]:
                continue
            value, label = -mode.guards[i].direction * guards[i], f"guard {c.guard}"
        elif c.output:
            if outputs is None:
                outputs = sim.outputs_now()
            value, label = outputs[c.output], f"output {c.output}"
        else:
            continue
        if not value >= -TOL:
            raise InputError(f"scenario {scenario!r}: {c.what}: {label} = {value:.6g} in mode "
                             f"{mode.id} ({mode.name}) at t = {sim.t:.9g} s, on the wrong side "
                             "of what the mode needs; start (or restore) a state the model "
                             "allows")
