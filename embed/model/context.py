"""What a reset map sees at an event (gillespie2005 eq 19-20): the state, forces, outputs, probes.

A scenario's ``transition``, ``initial`` and ``zeno`` callables (``embed.model.automaton``) are
given a ``Context`` of the simulator at the located event; they return a ``Jump``.  See
docs/design.md, "Data flow": the hybrid automaton layer.  ``forces_at`` (a mode's contact
forces at a state other than the running one) serves ``Context.forces_in``.
"""

from __future__ import annotations

import functools

import numpy as np


class Context:
    """The state at an event, forces and outputs formed on demand, and probes of other modes.

    Parameters
    ----------
    sim : Simulator
        The simulator at the event.
    guard : str or None
        The switching condition that fired (None at the initial reset map).
    """

    def __init__(self, sim, guard=None):
        self.sim = sim
        self.guard = guard
        self.t = sim.t
        self.q = np.array(sim.q)
        self.u = np.array(sim.u)
        self.mode = sim.mode
        self.discrete = dict(sim.discrete)

    @functools.cached_property
    def forces(self):
        """Declared force symbols' values here (by name), formed when a reset map asks."""
        return self.sim.forces_now()

    @functools.cached_property
    def outputs(self):
        """The outputs here (by name)."""
        return self.sim.outputs_now()

    def forces_in(self, mode_id, **discrete):
        """Contact forces the mode ``mode_id`` would need at this state (admissibility checks).

        Parameters
        ----------
        mode_id : int
        **discrete : float
            Discrete variables set otherwise than now.

        Returns
        -------
        dict
            Force name -> value.
        """
        return forces_at(self.sim, mode_id, {**self.discrete, **discrete}, self.t, self.q,
                         self.u)

    def param(self, name):
        """A parameter, input or discrete variable by name."""
        return self.sim.param(name)

    def mass_matrix(self):
        """The unconstrained generalized mass matrix M(q) here (F_r* = -M udot + ..., eq 2)."""
        return self.sim.mode_compiler.numeric_terms().mass(self.t, self.q, self.u, self.sim.pvec)

    def row(self, name):
        """(B, C) of a constraint here, active or not: its velocity is B u + C (eq 7)."""
        n = self.sim.model.n
        tq = np.concatenate(([self.t], self.q, self.sim.pvec))
        bc = self.sim.forms.constraint_terms(name).BC(tq)
        return np.array(bc[:n]), float(bc[n])


def forces_at(sim, mode_id, discrete, t, q, u):
    """Contact forces in mode ``mode_id`` at (t, q, u) with the given discrete values.

    Returns
    -------
    dict
        Force name -> value.
    """
    st = sim.state
    saved = st.discrete
    st.discrete = dict(discrete)
    sim.sync_discrete()
    try:
        active = tuple(sorted(sim.aut.modes[mode_id].constraints))
        dep = sim.forms.partition(active, t, q, sim.pvec)
        compiled = sim.mode_compiler.compiled(mode_id, dep, active)
        mon = compiled.monitors(t, np.concatenate((q, u[list(compiled.ind)])), sim.pvec)
    finally:
        st.discrete = saved
        sim.sync_discrete()
    return dict(zip(map(str, sim.model.forces), mon[compiled.sl_forces].tolist()))
