"""Hybrid simulator: forward dynamics solver + event locator + reset maps (gillespie2005 Sec 5).

Integrates the embedded minimal ODE of the active mode, locates switching conditions inside
each step on the integrator's continuous extension (``embed.events``), applies the reset
maps in time order (several per communication step if need be) and re-embeds on each mode
change from the shared mode library (``embed.library``, ``embed.mode_compiler``).  Numeric only:
the symbolic work is done by ``embed.forming`` and ``embed.compile`` the first time a mode is
visited.  Configuration constraints are held by ``embed.projection`` (haug_pavesic2023 eq
13-16).  Everything that decides the future is one ``embed.state.RunState``, which this class
extends: its fields are the simulator's own attributes (``sim.t``, ``sim.x``, ``sim.mon``, ...;
no indirection in the stepping loop or for the FMU's reads).  See docs/design.md.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import events, state as state_mod
from .activation import activation_jump
from .automaton import Automaton, Jump
from .context import Context
from .embedding import partition
from .errors import (EmbedError, InputError, IntegrationError, ModelDefinitionError,
                     StepBudgetError, ZenoError)
from .events import (ARMED, EVENT_TOL, HELD, LEVEL, PROBE, PROBE_G, UNARMED,  # noqa: F401
                     approaching)
from .integrators import make_integrator
from .forming import AutomatonForms
from .library import ModeLibrary
from .mode_compiler import ModeCompiler
from .projection import PHI_TOL, Projection, max_abs as _max_abs
from .state import RunState
from .warmup import warm_up

ZENO_LIMIT = 100      # events at one instant before the automaton is declared Zeno
ZENO_IMPACTS = 5      # impacts in a row, each closer than zeno_dt to the last: accumulating
IMPACT_LOG = 50       # impacts kept in Simulator.impacts (t, guard, q, u before, u after)
RESELECT = 3.0        # re-select the independent speeds when kappa(B1) grows this much
                      # (10 cost accuracy near singular configurations of the slider-crank)
EMBEDDINGS = ("symbolic", "numeric", "background")
STATE_FIELDS = state_mod.STATE_KEYS
MAX_STEPS = 2_000_000  # internal steps one advance may take (slider_crank3 in 100 s
                       # communication steps at h_max = 1 ms takes 1e5); beyond: StepBudgetError


class Simulator(RunState):
    """Steps a hybrid automaton in time; the numeric heart that the FMU wraps.

    Parameters
    ----------
    automaton : Automaton
    params : dict
        Every parameter's value by name (also those only the reset maps read).
    solver : str
        "rk4" (fixed step) or "adaptive" (Dormand-Prince 5(4)).
    h_max, rtol : float
        Largest step (s); the adaptive solver's relative tolerance.
    library : ModeLibrary or None
        The mode library shared by a scenario's simulators (``ModeLibrary.of``; a fresh one
        if None).
    embedding : str
        "symbolic" (embed and compile on first entry, then cached), "numeric" (the
        compiled-terms path only) or "background" (numeric at once, the symbolic path from
        ``compiler``, a background worker, when its compile is done).
    zeno_dt : float
        Impacts closer than this (s), ZENO_IMPACTS in a row, are accumulating.
    precompile : bool
        Embed every mode for every partition at ``start`` (small automata).
    """

    def __init__(self, automaton: Automaton, params: dict, *, solver="rk4", h_max=1e-3,
                 rtol=1e-8, library=None, embedding="symbolic", compiler=None, zeno_dt=1e-3,
                 precompile=False):
        if embedding not in EMBEDDINGS:
            raise InputError(f"embedding {embedding!r} is unknown; use one of {EMBEDDINGS}")
        self.embedding = embedding
        self.compiler = compiler
        self.precompile = precompile
        self.library = library or ModeLibrary()   # shared: re-entering a mode costs nothing
        # this simulator's own view of the automaton (constraints and modes added at run time
        # stay here) and its symbolic forms
        self.forms = AutomatonForms(automaton, self.library)
        self.aut = self.forms.automaton
        m = self.model = automaton.model
        self.dnames, self.psyms, self.pnames = (self.forms.discrete_names, self.forms.psyms,
                                                self.forms.pnames)
        self.n_params, self.n_inputs = len(m.params), len(m.inputs)
        self.discrete_offset = self.n_params + self.n_inputs
        missing = [str(s) for s in m.params if str(s) not in params]
        if missing:
            raise InputError(f"parameters {missing} have no value")
        pvec = np.zeros(len(self.psyms))
        for i, s in enumerate(m.params):
            pvec[i] = float(params[str(s)])
        # every parameter, also those only the reset maps read (restitution, zone layout, ...)
        self.params = {k: v for k, v in params.items() if isinstance(v, (int, float))}
        self.integrator = make_integrator(solver, h_max, rtol)
        self.outputs = self.forms.outputs
        self.mode_compiler = ModeCompiler(self.forms, embedding, compiler, self.integrator.uses_rhs)
        # the running state's fields are this object's own attributes (read in the stepping
        # loop and by the FMU at every step: no indirection); before the first mode x holds q
        # and mon holds u
        RunState.__init__(self, x=np.zeros(m.n), mon=np.zeros(m.n), pvec=pvec,
                          discrete=dict(automaton.discrete), projection=Projection())
        self.state = self         # the running state (``embed.state.RunState``): our own fields
        if embedding != "symbolic":
            self.mode_compiler.numeric_terms()
        self.reselect_time = 0.0  # CPU seconds spent re-selecting independent speeds
        self.reselect_compile_time = 0.0   # of reselect_time: first embeddings of a partition
        self.last_impulse = {}
        self.impacts = []
        self.zeno_dt = float(zeno_dt)
        self._rehearsed = None    # (mode, condition) whose event was rehearsed (_rehearse)
        self._dirty = True        # inputs or state changed since the monitors were computed
        self._rearm = False       # an input changed its value since the last advance
        self._checkpoint = None   # the state at the start of the running advance

    # ---------------------------------------------------------------- state views
    @property
    def q(self):
        return self.state.x[:self.model.n]

    @property
    def u(self):
        return self.state.mon[:self.model.n]

    def set_discrete(self, values):
        """Set discrete variables by name now (a scenario's own event), into the parameter
        vector too."""
        self.state.discrete = {**self.state.discrete, **{k: float(v) for k, v in values.items()}}
        self._sync_discrete()

    @property
    def automaton(self):
        """The hybrid automaton this simulator runs (modes, constraints, guards)."""
        return self.aut

    @property
    def active_mode(self):
        """The automaton's ``Mode`` the simulator is in (None before it starts)."""
        return None if self.mode is None else self.aut.modes[self.mode]

    def set_parameters(self, values):
        """Set the whole parameter vector (parameters, inputs, discrete variables, in
        ``pnames`` order) in place."""
        self.state.pvec[:] = values

    def partition(self, active, t, q):
        """The dependent speeds chosen for the constraint set ``active`` at (t, q) by
        pivoting on B (gillespie2005 eq 11)."""
        return self.forms.partition(active, t, q, self.pvec)

    def expect_background_mode(self, key):
        """Mode ``key`` was asked of the background workers by someone else (a worker relayed
        it): take the answer when it comes, and do not ask again."""
        self.library.submitted.setdefault(key, time.perf_counter())

    def _sync_discrete(self):
        st, o = self.state, self.discrete_offset
        st.pvec[o:o + len(self.dnames)] = [float(st.discrete[k]) for k in self.dnames]

    def start(self, t0, q0, u0):
        """Initial reset map (eq 20): choose the first mode and embed it.  With more than one
        mode the unconstrained terms are compiled now too (reset maps need M)."""
        st = self.state
        st.t = float(t0)
        self.integrator.restart(st.t)     # the fixed-step grid starts here
        st.x = np.array(q0, dtype=float)
        st.mon = np.array(u0, dtype=float)
        self._sync_discrete()
        if len(self.aut.modes) > 1:
            self.mode_compiler.numeric_terms()
            for name in self.aut.constraints:      # each constraint's own terms (Sec 5.5)
                self.forms.constraint_terms(name)
        if self.precompile:
            self.mode_compiler.precompile()
        self.mode_compiler.starting = True
        try:
            self._apply(self.aut.initial(Context(self)))
        finally:
            self.mode_compiler.starting = False

    def warm_up(self):
        """Pay first-call costs now (``embed.warmup.warm_up``)."""
        warm_up(self)

    @property
    def mode_number(self):
        """The mode as reported to the outside (Mode.report, else its id)."""
        md = self.aut.modes.get(self.state.mode)
        return self.state.mode if md is None or md.report is None else md.report

    def activation_jump(self, names, q, u, tol=1e-12, entry=None):
        """Momentum-consistent velocity jump when the constraints ``names`` become active
        (mueller eq 7, ``embed.activation``); ``entry``: ``ModeCompiler.entry``'s (K, B, rhs, Phi) at
        (q, u), if known already.  Returns the new full speeds and each constraint's impulse."""
        K, _, rhs, _ = entry if entry is not None else self.mode_compiler.entry(
            [self.forms.constraint_terms(c) for c in names], self.state.t, q, u, self.pvec)
        return activation_jump(K, rhs, u, names, self.state.t, tol)

    # ------------------------------------------------------- compiled modes
    def add_constraint(self, c):
        """Make a constraint known at run time (``ModeCompiler.add_constraint``)."""
        self.mode_compiler.add_constraint(c)

    def add_mode(self, mode):
        """A mode defined at run time (``ModeCompiler.add_mode``); its constraints must be known."""
        self.mode_compiler.add_mode(mode)

    def poll_background(self):
        """Take the background worker's finished compiles; the active mode moves to the
        symbolic path at once (x and the monitors do not change)."""
        arrived = self.mode_compiler.poll_background(self.state.compiled_mode)
        if arrived is not None:
            self.state.compiled_mode = arrived

    @property
    def background_latency(self):
        """Seconds from asking the background worker for a mode to its latest answer."""
        return self.mode_compiler.background_latency

    # ---------------------------------------------------- the parameter vector
    def param(self, name):
        """A parameter, input or discrete variable by name (its current value)."""
        if name in self.pnames:
            return float(self.pvec[self.pnames.index(name)])
        try:
            return float(self.params[name])
        except KeyError:
            raise ModelDefinitionError(f"no parameter {name!r}") from None

    def set_inputs(self, values: dict):
        """Take the inputs in ``values`` (by name), all or none: a non-finite value, or one
        outside the automaton's allowed values for that input, raises InputError naming it
        and nothing is changed."""
        new, pvec, o = {}, self.state.pvec, self.n_params
        for i, s in enumerate(self.model.inputs):
            name = str(s)
            if name in values:
                try:
                    v = float(values[name])
                except (TypeError, ValueError):
                    raise InputError(f"input {name} = {values[name]!r} is not a number; keeping "
                                     f"{pvec[o + i]!r}") from None
                if not math.isfinite(v):
                    raise InputError(f"input {name} = {v} is not finite; keeping its previous value")
                allowed = self.aut.allowed.get(name)
                if allowed is not None and v not in allowed:
                    raise InputError(f"input {name} = {values[name]!r} is not one of the allowed "
                                     f"values {list(allowed)}; keeping {pvec[o + i]:g}")
                new[o + i] = v
        for k, v in new.items():
            if v != pvec[k]:
                self._rearm = True
            pvec[k] = v
        self._dirty = True

    # ----------------------------------------------------------------- probes
    def constraint_forces(self):
        """Multipliers of the active constraints: F + F* + B^T lambda = 0 (zero where a declared
        force symbol carries the constraint force, see ``forces_now``)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(st.active, st.mon[st.compiled_mode.sl_lambda].tolist()))

    def forces_now(self):
        """Declared force symbols' values now (by name)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(map(str, self.model.forces), st.mon[st.compiled_mode.sl_forces].tolist()))

    def outputs_now(self):
        """The outputs now (by name)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(self.outputs, st.mon[st.compiled_mode.sl_outputs].tolist()))

    def residual(self):
        """Largest residual of the active constraints (|B u + C| and |Phi|) at the current state."""
        st = self.state
        return 0.0 if st.compiled_mode is None else float(st.mon[st.compiled_mode.i_res])

    def forces_at(self, mode_id, discrete, t, q, u):
        """Contact forces in mode ``mode_id`` at (t, q, u) with the given discrete values.

        Returns
        -------
        dict
            Force name -> value.
        """
        st = self.state
        saved = st.discrete
        st.discrete = dict(discrete)
        self._sync_discrete()
        try:
            active = tuple(sorted(self.aut.modes[mode_id].constraints))
            dep = self.forms.partition(active, t, q, self.pvec)
            compiled = self.mode_compiler.compiled(mode_id, dep, active)
            mon = compiled.monitors(t, np.concatenate((q, u[list(compiled.ind)])), self.pvec)
        finally:
            st.discrete = saved
            self._sync_discrete()
        return dict(zip(map(str, self.model.forces), mon[compiled.sl_forces].tolist()))

    # --------------------------------------------------------------- events
    def _target(self, jump: Jump):
        """(mode, active constraints, q, u) that ``jump`` enters with: q and u are views of x
        and mon (never changed in place) unless the reset map gives new values."""
        mode = self.aut.modes[jump.mode]
        active = tuple(sorted(mode.constraints if jump.constraints is None else jump.constraints))
        q = self.q if jump.q is None else np.array(jump.q, dtype=float)
        u = self.u if jump.u is None else np.array(jump.u, dtype=float)
        return mode, active, q, u

    def _apply(self, jump: Jump):
        """Enter jump.mode with the reset state, re-embedding (from the library) if needed."""
        st = self.state
        before = st.active
        mode, st.active, q, u = self._target(jump)
        st.discrete = {**st.discrete, **{k: float(v) for k, v in jump.discrete.items()}}
        self._sync_discrete()
        st.mode = jump.mode
        self.last_impulse = {}
        # the new constraints at the reset configuration, evaluated once for the projection
        # (haug_pavesic2023 eq 13), the activation jump (mueller eq 7), the partition (eq 11)
        # (kappa(B1) comes with the monitors): an event step evaluates them once
        rows = [self.forms.constraint_terms(c) for c in st.active]
        st.projection = Projection([row for row in rows if row.holonomic])
        st.watch = any(not row.constant_B for row in rows)
        st.chart = None
        if rows:
            entry = self.mode_compiler.entry(rows, st.t, q, u, self.pvec)
            if st.projection.holonomic and _max_abs(entry[3]) > PHI_TOL:
                q = self._project_q(q)
                entry = self.mode_compiler.entry(rows, st.t, q, u, self.pvec)
            if jump.u is None and set(st.active) - set(before):
                u, self.last_impulse = self.activation_jump(st.active, q, u, entry=entry)
            st.dep = partition(entry[1], st.active)
        else:
            st.dep = ()
        compiled = st.compiled_mode = self.mode_compiler.compiled(jump.mode, st.dep, st.active)
        st.x = np.concatenate((q, u[list(compiled.ind)]))
        st.mon = compiled.monitors(st.t, st.x, st.pvec)
        st.kappa0 = float(st.mon[compiled.i_kappa])
        st.enabled = tuple(g.enabled is None or bool(g.enabled(st.discrete)) for g in mode.guards)
        st.armed = events.arm(st.mon[compiled.sl_guards].tolist(), self._guards_later)
        self._rehearsed = None
        self._dirty = self._rearm = False

    def _guards_later(self):
        """The switching conditions an instant (PROBE) after the current state (events.arm)."""
        st, compiled = self.state, self.state.compiled_mode
        tau = min(PROBE, self.integrator.h_max / 100)
        later = self.integrator.partial(compiled, st.t, st.x, st.pvec, tau)
        o = compiled.nx
        return later[o + compiled.sl_guards.start:o + compiled.sl_guards.stop].tolist()

    def _handle(self, gi):
        """Apply the reset map of switching condition gi; count events and watch for Zeno
        behaviour (ANDY's multi-jump counter): too many events at one instant, or impacts
        accumulating in time, hand over to the automaton's persistent mode (``zeno``)."""
        st = self.state
        mode = self.aut.modes[st.mode]
        guard = mode.guards[gi]
        before = st.mode
        if st.events and st.t - st.last_event_time <= EVENT_TOL:
            st.same_instant += 1
        else:
            st.same_instant = 0
        ctx = Context(self, guard.name)
        jump = self.aut.transition(ctx, guard.name)
        if jump.impact:
            st.impact_count += 1
            self.impacts.append((float(st.t), guard.name, np.array(ctx.q), np.array(ctx.u),
                                 None if jump.u is None else np.array(jump.u)))
            del self.impacts[:-IMPACT_LOG]
            gap = st.t - st.last_impact if st.last_impact is not None else np.inf
            # a new list, never changed in place: the step's checkpoint keeps a reference
            st.impact_gaps = (st.impact_gaps + [gap])[-ZENO_IMPACTS:]
            st.last_impact = st.t
        zeno = (st.same_instant > ZENO_LIMIT or
                (jump.impact and len(st.impact_gaps) == ZENO_IMPACTS
                 and max(st.impact_gaps) < self.zeno_dt))
        if zeno:
            if self.aut.zeno is None:
                raise ZenoError(
                    f"Zeno behaviour at t = {st.t:.12g} s ({guard.name!r} in mode {mode.name!r}: "
                    f"{st.same_instant} events at one instant, impacts {ZENO_IMPACTS} in a row "
                    f"less than {self.zeno_dt} s apart) and no persistent mode to switch to")
            jump = self.aut.zeno(ctx, guard.name)
            st.impact_gaps = []
            st.zeno_count += 1
        self._apply(jump)
        self._record("zeno:" + guard.name if zeno else guard.name, before)

    def _record(self, label, before):
        """Count the event just applied (from mode ``before``) and log it."""
        st = self.state
        st.event_count += 1
        st.last_event_time = st.t
        st.events.append((float(st.t), label, before, st.mode))

    def _approaching(self, g_prev, g_end):
        """The condition to rehearse after a step (``events.approaching``), not one rehearsed
        already in this mode."""
        return approaching(g_prev, g_end, self.armed, self.enabled, self._rehearsed, self.mode)

    def _rehearse(self, gi):
        """Evaluate what the event of switching condition gi will need (its reset map, the
        entered constraint set's entry terms, the partition, the new mode's monitors) without
        applying any of it: an event step finds the caches cold and costs 0.4-0.6 ms where it
        costs 0.15-0.2 ms warm; rehearsed one step ahead, that cost is split over two steps.
        Changes no state; a failure here is left for the event itself to report.  Returns
        whether the rehearsal went through."""
        st = self.state
        self._rehearsed = (st.mode, gi)
        try:
            name = self.aut.modes[st.mode].guards[gi].name
            jump = self.aut.transition(Context(self, name), name)
            _, active, q, u = self._target(jump)
            dep = ()
            if active:
                rows = [self.forms.constraint_terms(c) for c in active]
                entry = self.mode_compiler.entry(rows, st.t, q, u, self.pvec)
                dep = partition(entry[1], active)
            compiled = self.library.mode((jump.mode, active, dep))
            if compiled is not None:
                compiled.monitors(st.t, np.concatenate((q, u[list(compiled.ind)])), st.pvec)
        except Exception:  # noqa: BLE001 - the event reports its own errors
            return False
        return True

    def _locate(self, gi, x0, p, h, gb):
        """Earliest tau in (0, h] where guard gi falls to its firing level (``events.locate``
        on the integrator's continuous extension from x0; gb = its value at h)."""
        st, integ = self.state, self.integrator
        compiled, t0 = st.compiled_mode, st.t
        o = compiled.nx + compiled.sl_guards.start + gi
        level = LEVEL[st.armed[gi]]
        g = lambda tau: integ.partial(compiled, t0, x0, p, tau)[o] - level  # noqa: E731
        return events.locate(g, st.mon[compiled.sl_guards][gi] - level, gb - level, h,
                             self.aut.modes[st.mode].guards[gi].name, t0)

    def _project_q(self, q):
        """q projected on Phi(q) = 0 with the state's chart (``Projection.project``)."""
        st = self.state
        q, st.chart, recharts = st.projection.project(st.t, q, st.pvec, st.chart)
        st.recharts += recharts
        return q

    def _after_step(self):
        """Hold the configuration constraints and watch the dependent block of B (Sec 5.4)."""
        st = self.state
        n, compiled = self.model.n, st.compiled_mode
        if st.projection.holonomic and st.mon[compiled.i_res] > PHI_TOL:   # the residual includes |Phi|
            q = st.x[:n]
            qp = self._project_q(q)
            if qp is not q:
                st.x = np.concatenate((qp, st.x[n:]))
                st.mon = compiled.monitors(st.t, st.x, st.pvec)
        if st.watch and st.mon[compiled.i_kappa] > RESELECT * max(st.kappa0, 1.0):
            self._reselect()        # kappa(B1) is a monitor: watching it costs nothing

    def _reselect(self):
        """New independent speeds by pivoting on B here; re-embed (library) without stopping."""
        t0 = time.process_time()
        st = self.state
        q, u = np.array(self.q), np.array(self.u)
        dep = self.forms.partition(st.active, st.t, q, self.pvec)
        if dep != st.dep:
            st.dep = dep
            times = self.mode_compiler.embed_times
            n_emb = len(times)
            compiled = st.compiled_mode = self.mode_compiler.compiled(st.mode, dep, st.active)
            self.reselect_compile_time += sum(times[n_emb:])
            st.x = np.concatenate((q, u[list(compiled.ind)]))
            st.mon = compiled.monitors(st.t, st.x, st.pvec)
            st.reselections += 1
        st.kappa0 = float(st.mon[st.compiled_mode.i_kappa])
        self.reselect_time += time.process_time() - t0

    def jump_to(self, mode, q=None, u=None, label="reset", **discrete):
        """Enter ``mode`` now with an optional new state (a reset from outside: an event)."""
        before = self.state.mode
        self._apply(Jump(mode, discrete, q=q, u=u))
        self._record(label, before)

    def set_constraints(self, names, label="constraints"):
        """Activate exactly the constraints ``names`` in the current mode now (an event)."""
        for c in names:
            if c not in self.aut.constraints:
                raise ModelDefinitionError(f"unknown constraint {c!r}; known: "
                                           f"{sorted(self.aut.constraints)}")
        before = self.state.mode
        self._apply(Jump(before, constraints=tuple(names)))
        self._record(label, before)

    def _accept(self, y):
        nx = self.compiled_mode.nx
        self._check_finite(y, "state")
        self.x = y[:nx]
        self.mon = y[nx:-1]

    def _check_finite(self, y, what):
        """IntegrationError unless every entry of y (state and monitors: outputs, forces,
        conditions) is finite: nothing non-finite is ever accepted, so none reaches outputs."""
        # the sum is nan or inf where any entry is (or where it overflows: then look closer)
        if not math.isfinite(sum(y.tolist())) and not all(map(math.isfinite, y.tolist())):
            compiled = self.state.compiled_mode
            names = ([str(c) for c in self.model.q] + [str(self.model.u[i]) for i in compiled.ind]
                     if len(y) > len(self.state.mon) else [])
            names += ([str(u) for u in self.model.u] + [str(f) for f in self.model.forces]
                      + list(self.outputs))
            bad = [names[i] if i < len(names) else f"monitor {i}"
                   for i, e in enumerate(y.tolist()) if not math.isfinite(e)]
            raise IntegrationError(
                f"non-finite {what} at t = {self.state.t:.9g} s in mode {compiled.key} "
                f"({', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}); check inputs and "
                "parameters; the last good state is kept")

    # ---------------------------------------------------------------- advance
    def rollback(self):
        """Back to the state at the start of the last ``advance`` if it failed (the last good
        state; ``advance`` does this itself before it raises); after a successful one, or
        before any, nothing to do: the current state is the last good one."""
        if self._checkpoint is None:
            return
        state_mod.rollback(self.state, self.integrator, self._checkpoint)
        self._sync_discrete()
        self._dirty = True

    def advance(self, t_end):
        """Integrate to t_end, handling every event on the way, in time order.  Any EmbedError
        on the way rolls back to the state at the call (the last good state) and is raised.

        Parameters
        ----------
        t_end : float
            Finite, not before the current time (s).

        Raises
        ------
        InputError, StepBudgetError
            Before anything changes.
        EmbedError
            After rolling back.
        """
        t_end = float(t_end)
        st = self.state
        if not (math.isfinite(t_end) and t_end >= st.t - EVENT_TOL):
            raise InputError(f"advance to t_end = {t_end!r} from t = {st.t!r} s: the end "
                             "must be finite and not before the current time")
        n = self.integrator.steps_needed(st.t, t_end)
        if n > MAX_STEPS:
            raise StepBudgetError(
                f"advancing {t_end - st.t:.6g} s from t = {st.t:.9g} s needs at least {n:.3g}"
                f" steps of h_max = {self.integrator.h_max:g} s, more than the budget of "
                f"{MAX_STEPS:.0e} steps per call; take shorter communication steps or a larger "
                "h_max (the state is kept)")
        self._checkpoint = state_mod.checkpoint(st, self.integrator)
        try:
            self._advance(t_end)
        except EmbedError:
            self.rollback()
            self._checkpoint = None   # rolled back: the current state is the last good one
            raise
        self._checkpoint = None       # the last good state is this one

    def _advance(self, t_end):
        st = self           # the running state's fields are this object's
        if self.compiler is not None:
            self.poll_background()
        if self._dirty:     # inputs changed at this communication point: a condition may be due now
            st.mon = st.compiled_mode.monitors(st.t, st.x, st.pvec)
            self._check_finite(st.mon, "monitors")
            self._dirty = False
            if self._rearm:
                self._rearm = False
                st.armed = events.rearm_after_input(st.mon[st.compiled_mode.sl_guards].tolist(),
                                                    st.armed)
            while (gi := events.due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                                    -PROBE_G)) is not None:
                self._handle(gi)
        integ, p = self.integrator, st.pvec
        t_start = st.t
        budget = MAX_STEPS
        due = events.due
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
            if due(g_end, st.armed, st.enabled) is None:
                g_prev = st.mon[sl].tolist()
                self._accept(y)
                st.t = integ.t_next
                if st.projection.holonomic or st.watch:
                    self._after_step()
                if (gi := self._approaching(g_prev, g_end)) is not None:
                    self._rehearse(gi)
                if not all(a == ARMED for a in st.armed):
                    st.armed = tuple(ARMED if v > 0 else a for a, v in
                                     zip(st.armed, st.mon[st.compiled_mode.sl_guards].tolist()))
                continue
            hits = [i for i, (v, a, e) in enumerate(zip(g_end, st.armed, st.enabled))
                    if a and e and v <= LEVEL[a]]
            tau, gi = min((self._locate(i, x0, p, h, g_end[i]), i) for i in hits)
            self._accept(integ.partial(compiled, st.t, x0, p, tau))
            st.t += tau
            self._handle(gi)
            # a reset map may leave another condition already crossed (not merely at zero)
            while (gi := due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                             -PROBE_G)) is not None:
                self._handle(gi)

    # ------------------------------------------------------------------ state
    def get_state(self):
        """Everything that decides the future, as plain Python/numpy values (``embed.state``)."""
        return state_mod.serialize(self.state, self.integrator)

    def set_state(self, s):
        """Restore a state of ``get_state``: checked whole first (``check_state``), so a
        state that does not fit this simulator raises StateError naming the field and
        changes nothing."""
        s, compiled = self.check_state(s)
        st = self.state
        state_mod.restore(st, s)
        rows = [self.forms.constraint_terms(c) for c in st.active]
        st.projection = Projection([row for row in rows if row.holonomic])
        st.watch = any(not row.constant_B for row in rows)
        st.compiled_mode = compiled
        self.integrator.set_state(s["integrator"])
        self._checkpoint = None
        self._dirty = self._rearm = False

    def check_state(self, s):
        """StateError unless ``s`` is a whole, consistent state of this simulator
        (``embed.state.check_state``).  Returns a copy of s and the compiled mode it runs in;
        nothing of the simulator changes."""
        return state_mod.check_state(self, s)

