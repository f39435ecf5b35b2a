"""The stepping loop of a simulator (gillespie2005 Sec 5, Fig 4): integrate the active mode's
minimal ODE, locate the switching conditions crossed inside each step on the integrator's
continuous extension (``embed.hybrid.events``), apply the reset maps in time order
(``embed.hybrid.switching``) and roll back to the last good state when anything fails.

The loop's own flags (``StepFlags``) are a field of the simulator, ``sim.flags``: they say
whether the monitors are stale and which event was rehearsed; they are not part of the run
state (``embed.hybrid.state.RunState``) since they never decide the future.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from . import events, rehearsal, state as state_mod, switching
from .rehearsal import STEPS, steps_to
from ..base.errors import EmbedError, InputError, StepBudgetError
from ..base.record import Record
from .events import ARMED, EVENT_TOL, HELD, LEVEL, PROBE_G, UNARMED

# internal steps one advance may take (a 100 s communication step at h_max = 1 ms is 1e5);
# beyond: StepBudgetError
MAX_STEPS = 2_000_000


class StepFlags(Record):
    """The stepping's flags between advances."""

    FIELDS = ("rehearsed", "dirty", "rearm", "checkpoint", "pending", "rehearsed_dep",
              "warmed")

    def __init__(self, rehearsed: Optional[tuple] = None, dirty: bool = True,
                 rearm: bool = False, checkpoint: Any = None, pending: Any = None,
                 rehearsed_dep: Optional[tuple] = None, warmed: Optional[tuple] = None):
        self.rehearsed = rehearsed      # (mode, condition) whose event was rehearsed
        self.dirty = dirty              # inputs or state changed since the monitors were computed
        self.rearm = rearm              # an input changed its value since the last advance
        self.checkpoint = checkpoint    # the state at the start of the running advance
        self.pending = pending          # conditions left at zero by an event, armed later
        self.rehearsed_dep = rehearsed_dep   # (mode, active, dep, t) the rehearsal chose
        self.warmed = warmed            # (mode, condition, steps ahead) last warmed

    def entered_mode(self):
        """A mode was just entered: its monitors are fresh, its guards armed, nothing of it
        rehearsed."""
        self.rehearsed = self.pending = self.rehearsed_dep = self.warmed = None
        self.dirty = self.rearm = False

    def saved(self):
        """The flags, for ``restore`` (a rehearsal runs the simulator and undoes it)."""
        return self.rehearsed, self.dirty, self.rearm

    def restore(self, saved):
        self.rehearsed, self.dirty, self.rearm = saved


def rollback(sim):
    """Back to the state at the start of the last ``advance`` if it failed (the last good
    state; ``advance`` does this itself before it raises); after a successful one, or before
    any, nothing to do: the current state is the last good one."""
    if sim.flags.checkpoint is None:
        return
    state_mod.rollback(sim.state, sim.integrator, sim.flags.checkpoint)
    sim.sync_discrete()
    sim.flags.dirty = True


def advance(sim, t_end, stop_at_event=False):
    """Integrate to t_end, handling every event on the way, in time order.  Any EmbedError
    on the way rolls back to the state at the call (the last good state) and is raised.

    Parameters
    ----------
    sim : Simulator
    t_end : float
        Finite, not before the current time (s).
    stop_at_event : bool
        Return at the first event located before t_end, once it (and every condition its
        reset map leaves due) is handled: the state is the event's right limit at its
        located time (FMI 3.0 early return, fmu_src/runtime/loader/fmi3_loader.c).

    Returns
    -------
    bool
        Whether it stopped at an event before t_end (only with ``stop_at_event``).

    Raises
    ------
    InputError, StepBudgetError
        Before anything changes.
    EmbedError
        After rolling back.
    """
    t_end = float(t_end)
    st = sim.state
    if not (math.isfinite(t_end) and t_end >= st.t - EVENT_TOL):
        raise InputError(f"advance to t_end = {t_end!r} from t = {st.t!r} s: the end "
                         "must be finite and not before the current time")
    n = sim.integrator.steps_needed(st.t, t_end)
    if n > MAX_STEPS:
        raise StepBudgetError(
            f"advancing {t_end - st.t:.6g} s from t = {st.t:.9g} s needs at least {n:.3g}"
            f" steps of h_max = {sim.integrator.h_max:g} s, more than the budget of "
            f"{MAX_STEPS:.0e} steps per call; take shorter communication steps or a larger "
            "h_max (the state is kept)")
    sim.flags.checkpoint = state_mod.checkpoint(st, sim.integrator)
    try:
        early = _run(sim, t_end, stop_at_event)
    except EmbedError:
        sim.flags.pending = None
        rollback(sim)
        sim.flags.checkpoint = None   # rolled back: the current state is the last good one
        raise
    sim.flags.checkpoint = None       # the last good state is this one
    return early


def _due_now(sim):
    """The monitors at the current state (inputs changed at this communication point): a
    condition may be due now; its reset maps applied."""
    st, flags = sim.state, sim.flags
    st.mon = st.compiled_mode.monitors(st.t, st.x, st.pvec)
    state_mod.check_finite(sim, st.mon, "monitors")
    flags.dirty = False
    if flags.rearm:
        flags.rearm = False
        st.armed = events.rearm_after_input(st.mon[st.compiled_mode.sl_guards].tolist(),
                                            st.armed)
    while (gi := events.due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                            -PROBE_G)) is not None:
        switching.handle(sim, gi)


def _run(sim, t_end, stop_at_event=False):
    st, flags = sim.state, sim.flags
    if sim.compiler is not None:
        sim.poll_background()
    if flags.dirty:
        _due_now(sim)
    integ, p = sim.integrator, st.pvec
    t_start = st.t
    budget = MAX_STEPS
    due, approaching = events.due, events.approaching   # looked up once an advance
    after_step, after_every_step = sim.after_step, sim.after_every_step
    while t_end - st.t > EVENT_TOL:
        budget -= 1
        if budget < 0:
            raise StepBudgetError(
                f"{MAX_STEPS:.0e} steps (h_max = {integ.h_max:g} s) did not reach t = "
                f"{t_end:.9g} s from t = {t_start:.9g} s: they averaged "
                f"{(st.t - t_start) / MAX_STEPS:.3g} s up to t = {st.t:.9g} s; "
                "check the inputs and rtol (the state is kept)")
        compiled, x0 = st.compiled_mode, st.x
        h, y = integ.step(compiled, st.t, x0, p, t_end - st.t)
        sl = compiled.sl_guards
        gs = compiled.nx + sl.start
        g_end = y[gs:gs + sl.stop - sl.start].tolist()   # plain floats
        if flags.pending is not None and switching.left_zero(sim, g_end):
            switching.arm_later(sim)     # the arming an event left: it decides this step
        if due(g_end, st.armed, st.enabled) is None:
            g_prev = st.mon[sl].tolist()
            sim.accept(y)
            st.t = integ.t_next
            if st.projection.holonomic or st.watch or after_every_step:
                after_step(sim)      # switching.after_step unless a formulation's
            if (gi := approaching(g_prev, g_end, st.armed, st.enabled, flags.rehearsed,
                                  st.mode, STEPS)) is not None:
                if (k := steps_to(g_prev[gi], g_end[gi])) == 1:
                    rehearsal.rehearse(sim, gi)
                else:       # its parts paid two and three steps ahead
                    rehearsal.warm(sim, gi, k)
            if flags.pending is not None:   # the conditions an event left at zero
                switching.arm_later(sim, st.mon[st.compiled_mode.sl_guards].tolist())
            if UNARMED in st.armed or HELD in st.armed:       # not all ARMED
                st.armed = tuple(ARMED if v > 0 else a for a, v in
                                 zip(st.armed, st.mon[st.compiled_mode.sl_guards].tolist()))
            continue
        if flags.pending is not None:
            switching.arm_later(sim)
        hits = [i for i, (v, a, e) in enumerate(zip(g_end, st.armed, st.enabled))
                if a and e and v <= LEVEL[a]]
        tau, gi = min((switching.locate(sim, i, x0, p, h, g_end[i]), i) for i in hits)
        sim.accept(integ.partial(compiled, st.t, x0, p, tau))
        st.t += tau
        switching.handle(sim, gi, lazy=True)
        # a reset map may leave another condition already crossed (not merely at zero; one
        # left at zero is not due at -PROBE_G whether armed or held: ``arm_later``)
        while (gi := due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                         -PROBE_G)) is not None:
            switching.handle(sim, gi, lazy=True)
        if stop_at_event and t_end - st.t > EVENT_TOL:
            if flags.pending is not None:
                switching.arm_later(sim)
            return True
    if flags.pending is not None:   # the advance ends at the event: armed as at its entry
        switching.arm_later(sim)
    return False
