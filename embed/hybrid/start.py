"""A simulator's start: the initial reset map (gillespie2005 eq 20) and the consistent start.

The first mode is chosen by the automaton's ``initial`` reset map; a start off that mode's
constraints is made consistent (``switching.consistent_start``: q to the nearest
configuration in least squares, u in the mass metric, mueller eq 7) and the change is
reported in ``start_correction`` and ``start_log``.
"""

from __future__ import annotations

import numpy as np

from . import switching
from ..base.errors import IntegrationError
from ..model.context import Context
from ..model.reset_maps import reset_map
from .projection import nearest_on_manifold, on_manifold


def start(sim, t0: float, q0, u0) -> None:
    """Choose the first mode and embed it (``Simulator.start``).  With more than one mode the
    unconstrained terms are compiled now too (reset maps need M)."""
    st = sim.state
    st.t = float(t0)
    sim.integrator.restart(st.t)     # the fixed-step grid starts here
    st.x = np.array(q0, dtype=float)
    st.mon = np.array(u0, dtype=float)
    sim.sync_discrete()
    aut, compiler = sim.aut, sim.mode_compiler
    if len(aut.modes) > 1:
        compiler.numeric_terms()
        for name in aut.constraints:      # each constraint's own terms (Sec 5.5)
            sim.forms.constraint_terms(name)
        for mode in aut.modes.values():   # and each mode's set of them
            switching.entered(sim, tuple(sorted(mode.constraints)))
    if sim.precompile:
        compiler.precompile()
    if len(aut.modes) > 1 or sim.embedding != "symbolic":
        compiler.prepare()      # the compiled-terms programs: none in the step
    compiler.starting = True
    try:
        jumps = switching.jumps_of(reset_map(aut, "initial", Context(sim)))
        first = switching.consistent_start(sim, jumps[0], sim.consistent_start)
        switching.apply_all(sim, [first, *jumps[1:]])
    finally:
        compiler.starting = False
        sim.keeping_start = False
    if sim.start_correction > 0.0:
        dq, du = sim.start_change
        sim.start_log = (f"start made consistent with the constraints of mode "
                         f"{st.mode}: |dq| = {np.linalg.norm(dq):.3g}, |du| = "
                         f"{np.linalg.norm(du):.3g} (start_correction "
                         f"{sim.start_correction:.3g})")


def nearest_configuration(sim, active, q=None):
    """The configuration on the holonomic constraints of the set ``active`` nearest to q
    (default: the current one) at the current time and discrete values: min ||q' - q||
    subject to Phi(q') = 0 (``projection.nearest_on_manifold``, the consistent start); where
    that iteration does not settle (q far from a curved manifold), one reached by
    minimum-norm Newton steps (``projection.on_manifold``).  IntegrationError if neither gets
    there."""
    q = np.array(sim.q if q is None else q, dtype=float)
    projection = switching.entered(sim, tuple(sorted(active)))[1]
    t, p = sim.state.t, sim.state.pvec
    try:
        return nearest_on_manifold(projection, t, q, p)
    except IntegrationError as exc:
        found = on_manifold(projection, t, q, p)
        if found is None:
            raise exc
        return found
