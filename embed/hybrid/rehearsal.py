"""The parts of an approaching event's rehearsal paid two and three steps ahead (issue 30,
tails): ``rehearse``, one step ahead, evaluates what the event will need (its reset
map, the entered set's entry terms, the partition, the new mode's monitors) with the caches
cold, a third of a real-time step at load 2 on top of an ordinary step.  A condition seen to
fall within three steps has the jump and the entry terms evaluated at the third, those and
the partition at the second, so that the rehearsal itself, and the event after it, find
them warm and no single step carries the whole.  Changes no state: the results are dropped
(the partition the event may take is the one ``rehearse`` chooses, one step ahead); a
failure is left for the event to report."""

from __future__ import annotations

import numpy as np

from ..embedding.partition import partition
from ..model.context import Context
from .activation import activation_jump
from .switching import plain, target

STEPS = 3     # how many steps ahead (at the rate it fell over the last) a fall is looked at


def steps_to(a, b):
    """The steps, at most ``STEPS``, in which a condition that fell from a to b over the
    last step (0 < b < a) reaches zero falling at that rate (``events.approaching``)."""
    d = a - b
    return 1 if b <= d else 2 if b <= 2 * d else STEPS

def _target(sim, gi):
    """The jump of condition gi's event and what it enters (``switching.target``); the
    background workers' answers wait a step (this step has done its share: issue 30)."""
    rest = getattr(sim.compiler, "rest", None)
    if rest is not None:
        rest()
    name = sim.aut.modes[sim.state.mode].guards[gi].name
    jump = sim.aut.transition(Context(sim, name), name)
    return (jump,) + target(sim, jump)[1:]

def warm(sim, gi, k):
    """Evaluate, without keeping any of it, the parts of the event of condition gi that
    ``k`` (2 or 3) steps ahead pay: the reset map and the entry terms (mueller eq 7)
    at 3, and at 2 also the partition (eq 11) and, where compiled, the new mode's
    monitors; once per mode, condition and k (``StepFlags.warmed``)."""
    st, flags = sim.state, sim.flags
    if flags.warmed == (st.mode, gi, k):
        return
    flags.warmed = (st.mode, gi, k)
    try:
        jump, active, q, u = _target(sim, gi)
        if not active:
            return
        mc = sim.mode_compiler
        if mc.library.terms_programs.get((jump.mode, active)) is not None \
                and not mc.formulation.full_state:   # the event's one entry call
            if k == 2:
                mc.enter(jump.mode, active, st.t, q, u, sim.pvec, False)
            return
        rows = [sim.forms.constraint_terms(c) for c in active]
        entry = mc.entry(rows, st.t, q, u, sim.pvec)
        if k > 2:
            return
        dep = partition(entry[1], active)
        compiled = sim.library.mode((jump.mode, active, dep))
        if compiled is not None:
            compiled.monitors(st.t, np.concatenate((q, u[list(compiled.ind)])), st.pvec)
    except Exception:  # noqa: BLE001 - the event reports its own errors
        return

def rehearse(sim, gi):
    """Evaluate what the event of switching condition gi will need (its reset map, the
    entered constraint set's entry terms, the partition, the activation's solve (mueller
    eq 7, a new contact), the new mode's monitors and a step of it) without
    applying any of it: an event step finds the caches cold and costs a few times what it
    costs warm (docs/design.md, facts); rehearsed one step ahead, that cost is split over two
    steps.
    Changes no state; a failure here is left for the event itself to report.  Returns
    whether the rehearsal went through."""
    st = sim.state
    sim.flags.rehearsed = (st.mode, gi)
    try:
        jump, active, q, u = _target(sim, gi)
        dep = ()
        if active:              # the event's own entry call where it has one, else its parts
            fast = sim.mode_compiler.enter(jump.mode, active, st.t, q, u, sim.pvec, False)
            if fast:
                return True
            rows = [sim.forms.constraint_terms(c) for c in active]
            entry = sim.mode_compiler.entry(rows, st.t, q, u, sim.pvec)
            dep = partition(entry[1], active)
            if jump.u is None and set(active) - set(st.active):   # its activation's solve
                activation_jump(entry[0], entry[2], u, active, st.t)
            if plain(jump, st.discrete):
                sim.flags.rehearsed_dep = (jump.mode, active, dep, st.t)
        compiled = sim.library.mode((jump.mode, active, dep))
        if compiled is not None:     # its monitors at the entry and a step of it
            x = np.concatenate((q, u[list(compiled.ind)]))
            compiled.monitors(st.t, x, st.pvec)
            if hasattr(compiled, "rk4"):
                compiled.rk4(st.t, sim.integrator.h_max, x, st.pvec)
    except Exception:  # noqa: BLE001 - the event reports its own errors
        return False
    return True
