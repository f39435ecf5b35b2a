"""What the outside does to a run between advances: new input values, a reset to a mode, a
change of the active constraints (the master's or a scenario extension's events).

Each is all or nothing: a refused input changes no input, a reset that cannot be entered
leaves the state before it (gillespie2005 Sec 5: reset maps; mueller eq 7 for constraints
activated at run time).
"""

from __future__ import annotations

import math

from . import state as state_mod, switching
from ..base.errors import EmbedError, InputError, ModelDefinitionError
from ..model.automaton import Jump


def set_inputs(sim, values: dict) -> None:
    """Take the inputs in ``values`` (by name; others keep their values), all or none.
    InputError, naming the input, for a value that is not a finite number or not one of the
    automaton's allowed values for it; nothing is changed then."""
    new, pvec, o = {}, sim.state.pvec, sim.n_params
    for i, s in enumerate(sim.model.inputs):
        name = str(s)
        if name in values:
            try:
                v = float(values[name])
            except (TypeError, ValueError):
                raise InputError(f"input {name} = {values[name]!r} is not a number; keeping "
                                 f"{pvec[o + i]!r}") from None
            if not math.isfinite(v):
                raise InputError(f"input {name} = {v} is not finite; keeping its previous value")
            allowed = sim.aut.allowed.get(name)
            if allowed is not None and v not in allowed:
                raise InputError(f"input {name} = {values[name]!r} is not one of the allowed "
                                 f"values {list(allowed)}; keeping {pvec[o + i]:g}")
            new[o + i] = v
    for k, v in new.items():
        if v != pvec[k]:
            sim.flags.rearm = True
        pvec[k] = v
    sim.flags.dirty = True


def jump_to(sim, mode: int, q=None, u=None, label: str = "reset", **discrete) -> None:
    """Enter ``mode`` now with an optional new state q, u (default: the current ones) and
    discrete values, logged as the event ``label``; the state before it is kept if the mode
    cannot be entered."""
    before = sim.state.mode
    saved = state_mod.checkpoint(sim.state, sim.integrator)
    try:
        switching.apply(sim, Jump(mode, discrete, q=q, u=u))
    except EmbedError:        # nothing entered: the state before the reset is kept
        state_mod.rollback(sim.state, sim.integrator, saved)
        sim.sync_discrete()
        sim.flags.dirty = True
        raise
    switching.record(sim, label, before)


def set_constraints(sim, names, label: str = "constraints") -> None:
    """Activate exactly the constraints ``names`` in the current mode now: an event, with the
    momentum-consistent activation jump of mueller eq 7 for the new ones.
    ModelDefinitionError naming an unknown constraint."""
    for c in names:
        if c not in sim.aut.constraints:
            raise ModelDefinitionError(f"unknown constraint {c!r}; known: "
                                       f"{sorted(sim.aut.constraints)}")
    before = sim.state.mode
    switching.apply(sim, Jump(before, constraints=tuple(names)))
    switching.record(sim, label, before)
