"""Switching (gillespie2005 Sec 4-5): reset maps applied, events handled, constraints held.

Functions of a ``Simulator`` (its running state, forms and compiled modes): entering a mode
through a reset map (eq 19-20) with the configuration projected (haug_pavesic2023 eq 13-16)
and the momentum-consistent activation jump (mueller eq 7); handling a located switching
condition (eq 18) with the Zeno watch (ANDY's multi-jump counter); rehearsing a switch into
a constraint set (an approaching event's rehearsal: ``embed.hybrid.rehearsal``); locating
one in a step (``embed.hybrid.events``); holding the configuration constraints and
re-selecting the independent speeds as the dependent block of B degrades (Sec 5.4).  See
docs/design.md, "Data flow".
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import events
from .activation import ACTIVATION_TOL, activation_jump
from ..model.automaton import Jump
from ..model.reset_maps import reset_map
from ..model.context import Context
from ..embedding.partition import partition
from ..base.errors import IntegrationError, ZenoError
from .events import EVENT_TOL, LEVEL, PROBE
from ..base.errors import InputError
from .projection import PHI_TOL, Projection, max_abs, nearest_on_manifold, on_manifold

ZENO_LIMIT = 100      # events at one instant before the automaton is declared Zeno
ZENO_IMPACTS = 5      # impacts in a row, each closer than zeno_dt to the last: accumulating
IMPACT_LOG = 50       # impacts kept in Simulator.impacts (t, guard, q, u before, u after)
RESELECT = 3.0        # re-select the independent speeds when kappa(B1) grows this much
                      # (10 cost accuracy near singular configurations of the slider-crank)


def activation(sim, names, q, u, tol=ACTIVATION_TOL, entry=None):
    """Momentum-consistent velocity jump when the constraints ``names`` become active
    (mueller eq 7, ``embed.hybrid.activation``); ``entry``: ``ModeCompiler.entry``'s (K, B, rhs, Phi) at
    (q, u), if known already.  Returns the new full speeds and each constraint's impulse."""
    K, _, rhs, _ = entry if entry is not None else sim.mode_compiler.entry(
        [sim.forms.constraint_terms(c) for c in names], sim.state.t, q, u, sim.pvec)
    return activation_jump(K, rhs, u, names, sim.state.t, tol)

def entered(sim, active):
    """(rows, projection, watch) of the constraint set ``active``: each constraint's compiled
    terms, the ``Projection`` of the holonomic ones (haug_pavesic2023 eq 13) and whether
    kappa(B1) is watched (B moves, Sec 5.4); made once a set (``ModeLibrary.sets``), so that
    an event step does not make them again."""
    got = sim.library.sets.get(active)
    if got is None:
        rows = [sim.forms.constraint_terms(c) for c in active]
        got = sim.library.sets[active] = (rows, Projection([r for r in rows if r.holonomic]),
                                          any(not r.constant_B for r in rows))
    return got

def consistent_start(sim, jump: Jump, correct=True):
    """The initial jump (eq 20) with a consistent state (docs/design.md, "Consistent start"):
    q moved to the nearest configuration of the entered mode's Phi(q, t0) = 0 in the
    Euclidean norm (``projection.nearest_on_manifold``), then u to the nearest speeds of
    all its velocity constraints B u + C = 0 at that q in the mass metric, min (u' - u)^T M
    (u' - u): the momentum-consistent jump of mueller eq 7 (``activation``).  Sets
    ``sim.start_change`` (dq, du) and ``sim.start_correction`` = |(dq, du)| (Euclidean).
    ``correct=False`` keeps the state as given, which only a full-state formulation
    (``embed.formulations``: its stabilization then shows the transient of
    braun_goldfarb2012 Fig 3) can step: the embedding computes the dependent speeds from
    the constraints and holds Phi = 0, so it refuses (InputError)."""
    _, active, q, u = target(sim, jump)
    n = sim.model.n
    sim.start_change = (np.zeros(n), np.zeros(n))
    sim.start_correction = 0.0
    rows, projection, _ = entered(sim, active)
    if not correct:
        if rows and not sim.formulation.full_state:
            raise InputError(
                f"consistent_start = False: the embedding cannot keep a start off the "
                f"constraints {list(active)} (its dependent speeds follow from them and Phi is "
                "held to 1e-12); keep it with a full-state formulation (formulation="
                "'multipliers', 'projection' or 'soft') or let the engine correct it")
        sim.keeping_start = True
        return Jump(jump.mode, jump.discrete, q=np.array(q), u=np.array(u),
                    constraints=jump.constraints, impact=jump.impact)
    if not rows:
        return jump
    t, p = sim.state.t, sim.pvec
    qc = nearest_on_manifold(projection, t, np.array(q, dtype=float), p)
    # on the assembled entry terms: a library's compiled ones are installed by the FMU's
    # warm-up after its first instance started, so a start on them would give a later
    # instance of the process other last bits than the first (ModeLibrary.entry_warm)
    uc, _ = activation(sim, active, qc, np.array(u, dtype=float), entry=sim.mode_compiler.
                       assembled_entry(rows, t, qc, np.array(u, dtype=float), p))
    sim.start_change = (qc - q, uc - u)
    sim.start_correction = float(np.sqrt(np.sum((qc - q) ** 2) + np.sum((uc - u) ** 2)))
    return Jump(jump.mode, jump.discrete, q=qc, u=np.array(uc, dtype=float),
                constraints=jump.constraints, impact=jump.impact)

def target(sim, jump: Jump):
    """(mode, active constraints, q, u) that ``jump`` enters with: q and u are views of x
    and mon (never changed in place) unless the reset map gives new values."""
    mode = sim.aut.modes[jump.mode]
    active = tuple(sorted(mode.constraints if jump.constraints is None else jump.constraints))
    q = sim.q if jump.q is None else np.array(jump.q, dtype=float)
    u = sim.u if jump.u is None else np.array(jump.u, dtype=float)
    return mode, active, q, u

def jumps_of(jump):
    """The jumps a reset map returned, as a list: one Jump, or several to apply in order at
    one instant (``Jump``)."""
    return list(jump) if isinstance(jump, (list, tuple)) else [jump]

def apply_all(sim, jump):
    """Apply one Jump or, in order, each of a list of them (several impacts at one instant)."""
    for j in jumps_of(jump):
        apply(sim, j)

def impact_speeds(sim, jump: Jump, q, u):
    """The speeds after an impact over its own constraint set ``jump.impact_constraints``
    (wang2019 eq 19, mueller eq 7 over that set, ``embed.hybrid.activation``) and their impulses;
    the discrete variables of the jump are set already (a foot pinned where it struck)."""
    names = tuple(sorted(jump.impact_constraints))
    return activation(sim, names, q, u)

def apply(sim, jump: Jump, lazy=False):
    """Enter jump.mode with the reset state, re-embedding (from the library) if needed.
    ``lazy``: a condition left at zero is armed when the next step needs it (``arm_later``)."""
    st = sim.state
    before, same = st.active, plain(jump, st.discrete)
    if jump.discrete and not all(st.discrete.get(k) == float(v)      # (values they have:
                                 for k, v in jump.discrete.items()):  # nothing to write)
        st.discrete = {**st.discrete, **{k: float(v) for k, v in jump.discrete.items()}}
        sim.sync_discrete()
    impulses = {}
    if jump.impact_constraints is not None:      # the impact's own set, then the mode's
        u_plus, impulses = impact_speeds(sim, jump, target(sim, jump)[2], sim.u)
        jump = jump.replace(u=u_plus, impact_constraints=None)
    mode, st.active, q, u = target(sim, jump)
    st.mode = jump.mode
    sim.last_impulse = impulses
    # the new constraints at the reset configuration, evaluated once for the projection
    # (haug_pavesic2023 eq 13), the activation jump (mueller eq 7), the partition (eq 11)
    # (kappa(B1) comes with the monitors): an event step evaluates them once
    rows, st.projection, st.watch = entered(sim, st.active)
    st.chart = None
    jumps = jump.u is None and bool(set(st.active) - set(before))
    # with a prepared compiled-terms program, the jump, the partition and the monitors are one
    # call (``TermsProgramMode.enter``); else, or where it declines, step by step
    fast = rows and sim.mode_compiler.enter(jump.mode, st.active, st.t, q, u, sim.pvec, jumps)
    if fast:
        st.dep, x, mon, impulses = fast
        if impulses is not None:
            sim.last_impulse = dict(zip(st.active, impulses))
    elif rows:
        entry = sim.mode_compiler.entry(rows, st.t, q, u, sim.pvec)
        if st.projection.holonomic and max_abs(entry[3]) > PHI_TOL and not sim.keeping_start:
            q = project_q(sim, q)
            entry = sim.mode_compiler.entry(rows, st.t, q, u, sim.pvec)
        if jumps:
            u, sim.last_impulse = activation(sim, st.active, q, u, entry=entry)
        st.dep = rehearsed_dep(sim, jump, same) or partition(entry[1], st.active)
    else:
        st.dep = ()
    compiled = st.compiled_mode = sim.mode_compiler.compiled(jump.mode, st.dep, st.active)
    if fast and sim.mode_compiler.runs_on(compiled, st.active):
        st.x, st.mon = x, mon
    else:
        st.x = x if fast else np.concatenate((q, u[list(compiled.ind)]))
        st.mon = compiled.monitors(st.t, st.x, st.pvec)
    n = sim.model.n
    if not all(map(math.isfinite, st.x.tolist() + st.mon[:n].tolist())):   # q, every speed
        raise IntegrationError(
            f"entering mode {jump.mode} ({mode.name!r}) with the constraints {list(st.active)} "
            f"and the discrete variables {st.discrete}: the state is not finite (q = "
            f"{st.x[:n].tolist()}, speeds {st.mon[:n].tolist()}); the "
            "reset's coordinates, speeds or discrete variables are inconsistent with the "
            "mode's constraints")
    st.kappa0 = float(st.mon[compiled.i_kappa])
    st.enabled = tuple(g.enabled is None or bool(g.enabled(st.discrete)) for g in mode.guards)
    g = st.mon[compiled.sl_guards].tolist()
    sim.flags.entered_mode()
    if lazy and any(-events.PROBE_G < v <= 0.0 for v in g):
        st.armed = tuple(events.HELD if -events.PROBE_G < v <= 0.0 else
                         events.ARMED if v > 0 else events.UNARMED for v in g)
        sim.flags.pending = (g, compiled, st.t, st.x, st.pvec)
    else:
        st.armed = events.arm(g, lambda: guards_later(sim))

def arm_later(sim, g=None):
    """Arm the conditions that ``apply(lazy=True)`` left at zero (``sim.flags.pending``) as
    ``events.arm`` at the entry would have, from the entry state: an instant later
    (``guards_later``) positive, armed, else held.  ``g``: the conditions after the first
    step from the entry, where none was due and ``left_zero`` said no; each of those left at
    zero is positive in ``g``: armed by the stepping loop whether it was armed or held (and
    neither fired nor was approaching in that step), so the probe step, a whole RK4 step of
    the entered mode and a fifth of an event step (issue 30), is not taken."""
    pending, sim.flags.pending = sim.flags.pending, None
    if pending is None:
        return
    g0, compiled, t, x, p = pending
    if g is not None and all(b > 0.0 for v, b in zip(g0, g) if -events.PROBE_G < v <= 0.0):
        return
    tau = min(events.PROBE, sim.integrator.h_max / 100)
    later = sim.integrator.partial(compiled, t, x, p, tau)
    o = compiled.nx + compiled.sl_guards.start
    sim.state.armed = events.arm(g0, lambda: later[o:o + len(g0)].tolist())

def left_zero(sim, g_end):
    """Whether a condition ``apply(lazy=True)`` left at zero is at or below zero at the end
    of the step (``g_end``): its arming decides whether it fires (``arm_later`` first)."""
    return any(b <= 0.0 for v, b in zip(sim.flags.pending[0], g_end)
               if -events.PROBE_G < v <= 0.0)

def guards_later(sim):
    """The switching conditions an instant (PROBE) after the current state (events.arm)."""
    st, compiled = sim.state, sim.state.compiled_mode
    tau = min(PROBE, sim.integrator.h_max / 100)
    later = sim.integrator.partial(compiled, st.t, st.x, st.pvec, tau)
    o = compiled.nx
    return later[o + compiled.sl_guards.start:o + compiled.sl_guards.stop].tolist()

def plain(jump, discrete):
    """Whether ``jump`` only changes the mode: no discrete variable changed from ``discrete``,
    no coordinate or speed set by its reset map, no impact (B at the entry is the state's)."""
    return jump.q is None and jump.u is None and jump.impact_constraints is None and all(
        discrete.get(k) == float(v) for k, v in (jump.discrete or {}).items())

def rehearsed_dep(sim, jump, same):
    """The dependent speeds (eq 11) the rehearsal of this event chose (``rehearse``), at most
    two steps before it, for a jump into the same mode and constraint set, ``plain`` then
    and now (``same``); else None.  The pivoting picks the best-conditioned dependent block;
    B moves little in two steps, so the choice is the one made now but where two columns
    tie, where either is as good; and kappa(B1) is watched from the entry (Sec 5.4,
    ``after_step``).  The partition is a tenth of the event step (issue 30, tails)."""
    r, st = sim.flags.rehearsed_dep, sim.state
    if r is None or not same or r[:2] != (jump.mode, st.active) \
            or not 0.0 <= st.t - r[3] <= 2 * sim.integrator.h_max:
        return None
    return r[2]

def handle(sim, gi, lazy=False):
    """Apply the reset map of switching condition gi; count events and watch for Zeno
    behaviour (ANDY's multi-jump counter): too many events at one instant, or impacts
    accumulating in time, hand over to the automaton's persistent mode (``zeno``)."""
    st = sim.state
    mode = sim.aut.modes[st.mode]
    guard = mode.guards[gi]
    before = st.mode
    if st.events and st.t - st.last_event_time <= EVENT_TOL:
        st.same_instant += 1
    else:
        st.same_instant = 0
    ctx = Context(sim, guard.name)
    jumps = jumps_of(reset_map(sim.aut, "transition", ctx, guard.name))
    impacts = [j for j in jumps if j.impact]
    st.impact_count += len(impacts)
    if impacts:     # several impacts at one instant (a list of jumps): one gap, not Zeno
        gap = st.t - st.last_impact if st.last_impact is not None else np.inf
        # a new list, never changed in place: the step's checkpoint keeps a reference
        st.impact_gaps = (st.impact_gaps + [gap])[-ZENO_IMPACTS:]
        st.last_impact = st.t
    zeno = (st.same_instant > ZENO_LIMIT or
            (bool(impacts) and len(st.impact_gaps) == ZENO_IMPACTS
             and max(st.impact_gaps) < sim.zeno_dt))
    if zeno:
        if sim.aut.zeno is None:
            raise ZenoError(
                f"Zeno behaviour at t = {st.t:.12g} s ({guard.name!r} in mode {mode.name!r}: "
                f"{st.same_instant} events at one instant, impacts {ZENO_IMPACTS} in a row "
                f"less than {sim.zeno_dt} s apart) and no persistent mode to switch to")
        jumps = jumps_of(reset_map(sim.aut, "zeno", ctx, guard.name))
        st.impact_gaps = []
        st.zeno_count += 1
    for j in jumps:                  # in order, at this instant
        q, u = np.array(sim.q), np.array(sim.u)
        apply(sim, j, lazy)
        if j.impact:                 # (t, guard, q, u before, u after)
            sim.impacts.append((float(st.t), guard.name, q, u, np.array(sim.u)))
            del sim.impacts[:-IMPACT_LOG]
    record(sim, "zeno:" + guard.name if zeno else guard.name, before)

def record(sim, label, before):
    """Count the event just applied (from mode ``before``) and log it."""
    st = sim.state
    st.event_count += 1
    st.last_event_time = st.t
    st.events.append((float(st.t), label, before, st.mode))

def rehearse_entry(sim, active):
    """Enter the constraint set ``active`` once on the current run and undo it, where the
    event will run on a prepared compiled-terms program: at a configuration on the set
    (``projection.on_manifold``; none found: no rehearsal), the event (``apply``: the jump, the
    partition, the arming) and one step, then the state restored whole (``get_state``,
    ``set_state``).  The first ``set_constraints`` of a run then finds its Python and its
    compiled code called once already (first calls are a large part of a switch step;
    docs/design.md, facts).  Changes no state; a failure is left for the event itself to report."""
    st = sim.state
    if (st.compiled_mode is None or sim.embedding == "symbolic"
            or not sim.library.terms_programs.get((st.mode, active))):
        return
    q = on_manifold(entered(sim, active)[1], st.t, sim.q, st.pvec)
    if q is None:
        return
    kept = sim.get_state(), sim.last_impulse, sim.flags.saved()
    try:
        apply(sim, Jump(st.mode, constraints=active, q=q))
        sim.advance(st.t + sim.integrator.h_max)
    except Exception:  # noqa: BLE001 - the event reports its own errors
        pass
    finally:
        sim.set_state(kept[0])
        sim.last_impulse = kept[1]
        sim.flags.restore(kept[2])

def locate(sim, gi, x0, p, h, gb):
    """Earliest tau in (0, h] where guard gi falls to its firing level (``events.locate``
    on the integrator's continuous extension from x0; gb = its value at h)."""
    st, integ = sim.state, sim.integrator
    compiled, t0 = st.compiled_mode, st.t
    o = compiled.nx + compiled.sl_guards.start + gi
    level = LEVEL[st.armed[gi]]
    g = lambda tau: integ.partial(compiled, t0, x0, p, tau)[o] - level  # noqa: E731
    return events.locate(g, st.mon[compiled.sl_guards][gi] - level, gb - level, h,
                         sim.aut.modes[st.mode].guards[gi].name, t0)

def project_q(sim, q):
    """q projected on Phi(q) = 0 with the state's chart (``Projection.project``)."""
    st = sim.state
    q, st.chart, recharts = st.projection.project(st.t, q, st.pvec, st.chart)
    st.recharts += recharts
    return q

def after_step(sim):
    """Hold the configuration constraints and watch the dependent block of B (Sec 5.4)."""
    st = sim.state
    n, compiled = sim.model.n, st.compiled_mode
    if st.projection.holonomic and st.mon[compiled.i_res] > PHI_TOL:   # the residual includes |Phi|
        q = st.x[:n]
        qp = project_q(sim, q)
        if qp is not q:
            st.x = np.concatenate((qp, st.x[n:]))
            st.mon = compiled.monitors(st.t, st.x, st.pvec)
    if st.watch and st.mon[compiled.i_kappa] > RESELECT * max(st.kappa0, 1.0):
        reselect(sim)        # kappa(B1) is a monitor: watching it costs nothing

def reselect(sim):
    """New independent speeds by pivoting on B here; re-embed (library) without stopping."""
    t0 = time.process_time()
    st = sim.state
    q, u = np.array(sim.q), np.array(sim.u)
    mc = sim.mode_compiler
    fast = mc.enter(st.mode, st.active, st.t, q, u, sim.pvec, False)   # one call, no jump
    dep = fast[0] if fast else sim.forms.partition(st.active, st.t, q, sim.pvec)
    if dep != st.dep:
        st.dep = dep
        n_emb, t_compile = len(mc.embed_times), time.process_time()
        compiled = st.compiled_mode = mc.compiled(st.mode, dep, st.active, reselect=True)
        if len(mc.embed_times) > n_emb:    # not in the library: embedded now
            sim.reselect_compile_time += time.process_time() - t_compile
        if fast and mc.runs_on(compiled, st.active):
            st.x, st.mon = fast[1], fast[2]
        else:
            st.x = np.concatenate((q, u[list(compiled.ind)]))
            st.mon = compiled.monitors(st.t, st.x, st.pvec)
        st.reselections += 1
    st.kappa0 = float(st.mon[st.compiled_mode.i_kappa])
    sim.reselect_time += time.process_time() - t0
