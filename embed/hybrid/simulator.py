"""Hybrid simulator: forward dynamics solver + event locator + reset maps (gillespie2005 Sec 5).

Integrates the embedded minimal ODE of the active mode, locates switching conditions inside
each step on the integrator's continuous extension (``embed.hybrid.events``), applies the reset
maps in time order (several per communication step if need be) and re-embeds on each mode
change from the shared mode library (``embed.modes.library``, ``embed.modes.mode_compiler``).  Numeric only:
the symbolic work is done by ``embed.modes.forming`` and ``embed.modes.compile`` the first time a mode is
visited.  Configuration constraints are held by ``embed.hybrid.projection`` (haug_pavesic2023 eq
13-16).  Everything that decides the future is one ``embed.hybrid.state.RunState``, the
simulator's field ``state`` (the model, compiled, apart from the state that runs on it, as
MuJoCo's mjModel/mjData); its fields read as the simulator's too (``sim.t``, ``sim.x``,
``sim.mon``, ...: read-only views), and the modules that change it do so through
``sim.state`` or the simulator's calls.  See docs/design.md.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import events, state as state_mod, switching
from ..model.automaton import Automaton, Jump
from ..model.reset_maps import reset_map
from ..model.context import Context
from ..base.errors import (EmbedError, InputError, IntegrationError, ModelDefinitionError,
                     StepBudgetError)
from .events import ARMED, EVENT_TOL, HELD, LEVEL, PROBE, PROBE_G, UNARMED  # noqa: F401
from .integrators import make_integrator
from ..modes.forming import AutomatonForms
from ..modes.formulations import Formulation
from .after_step import after_step_for
from ..modes.library import ModeLibrary
from ..modes.mode_compiler import ModeCompiler
from .projection import Projection, nearest_on_manifold, on_manifold
from .state import RunState
from .warmup import warm_up

EMBEDDINGS = ("symbolic", "numeric", "background")
STATE_FIELDS = state_mod.STATE_KEYS
MAX_STEPS = 2_000_000  # internal steps one advance may take (slider_crank3 in 100 s
                       # communication steps at h_max = 1 ms takes 1e5); beyond: StepBudgetError


class Simulator:
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
        Impacts closer than this (s), ``switching.ZENO_IMPACTS`` in a row, are accumulating.
    precompile : bool
        Embed every mode for every partition at ``start`` (small automata).
    formulation : str
        "embedding" (this engine: the minimal ODE of each mode), or one of the formulations
        it is measured against, on the same modes, events and reset maps: "multipliers",
        "projection", "soft" (``embed.modes.formulations``).
    formulation_options : dict or None
        The formulation's parameters (``embed.modes.formulations.Formulation``: Baumgarte's alpha
        and beta, the projection's tolerances, the soft constraints' stiffness and damping,
        the embedding's configuration projection on or off).
    consistent_start : bool
        Correct a start off the first mode's constraints (q to the nearest configuration in
        least squares, then u in the mass metric; ``switching.consistent_start``), reported
        in ``start_correction`` and ``start_log``; False keeps it (full-state formulations
        only: the embedding refuses with InputError).
    """

    def __init__(self, automaton: Automaton, params: dict, *, solver="rk4", h_max=1e-3,
                 rtol=1e-8, library=None, embedding="symbolic", compiler=None, zeno_dt=1e-3,
                 precompile=False, formulation="embedding", formulation_options=None,
                 consistent_start=True):
        if embedding not in EMBEDDINGS:
            raise InputError(f"embedding {embedding!r} is unknown; use one of {EMBEDDINGS}")
        if embedding == "background" and compiler is None:
            raise InputError("embedding 'background' needs its worker: pass compiler="
                             "BackgroundCompiler(scenario, options) (embed.background.client), or use "
                             "'numeric' for the compiled-terms path alone")
        # the formulation (embed.modes.formulations): its compiled modes and what follows a step
        self.formulation = Formulation.of(formulation, formulation_options)
        self._after_step, self._after_every_step = after_step_for(self.formulation)
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
        pvec = self.forms.parameter_vector(params)
        # every parameter, also those only the reset maps read (restitution, zone layout, ...)
        self.params = {k: v for k, v in params.items() if isinstance(v, (int, float))}
        self.integrator = make_integrator(solver, h_max, rtol)
        self.outputs = self.forms.outputs
        self.mode_compiler = ModeCompiler(self.forms, embedding, compiler, self.integrator.uses_rhs,
                                          self.formulation)
        # the running state (``embed.hybrid.state.RunState``); before the first mode x holds q
        # and mon holds u
        self.state = RunState(x=np.zeros(m.n), mon=np.zeros(m.n), pvec=pvec,
                              discrete=dict(automaton.discrete), projection=Projection())
        if embedding != "symbolic" or self.formulation.full_state:
            self.mode_compiler.numeric_terms()
        self.reselect_time = 0.0  # CPU seconds spent re-selecting independent speeds
        self.reselect_compile_time = 0.0   # of reselect_time (CPU s too): first embeddings of a partition
        self.last_impulse = {}
        self.impacts = []
        self.zeno_dt = float(zeno_dt)
        self._rehearsed = None    # (mode, condition) whose event was rehearsed (_rehearse)
        self._dirty = True        # inputs or state changed since the monitors were computed
        self._rearm = False       # an input changed its value since the last advance
        self._checkpoint = None   # the state at the start of the running advance
        # the consistent start (``switching.consistent_start``, docs/design.md): corrected
        # or kept, the change (dq, du), its norm and the message the FMU logs
        self.consistent_start = bool(consistent_start)
        self.keeping_start = False
        self.start_change = (np.zeros(m.n), np.zeros(m.n))
        self.start_correction = 0.0
        self.start_log = ""

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
        self.sync_discrete()

    @property
    def automaton(self):
        """The hybrid automaton this simulator runs (modes, constraints, guards)."""
        return self.aut

    @property
    def active_mode(self):
        """The automaton's ``Mode`` the simulator is in (None before it starts)."""
        mode = self.state.mode
        return None if mode is None else self.aut.modes[mode]

    def set_parameters(self, values):
        """Set the whole parameter vector (parameters, inputs, discrete variables, in
        ``pnames`` order) in place."""
        self.state.pvec[:] = values

    def partition(self, active, t, q):
        """The dependent speeds chosen for the constraint set ``active`` at (t, q) by
        pivoting on B (gillespie2005 eq 11)."""
        return self.forms.partition(active, t, q, self.state.pvec)

    def nearest_configuration(self, active, q=None):
        """The configuration on the holonomic constraints of the set ``active`` nearest to q
        (default: the current one) at the current time and discrete values: min ||q' - q||
        subject to Phi(q') = 0 (``projection.nearest_on_manifold``, the consistent start);
        where that iteration does not settle (q far from a curved manifold), one reached by
        minimum-norm Newton steps (``projection.on_manifold``).  IntegrationError if neither
        gets there."""
        q = np.array(self.q if q is None else q, dtype=float)
        projection = switching.entered(self, tuple(sorted(active)))[1]
        t, p = self.state.t, self.state.pvec
        try:
            return nearest_on_manifold(projection, t, q, p)
        except IntegrationError as exc:
            found = on_manifold(projection, t, q, p)
            if found is None:
                raise exc
            return found

    def expect_background_mode(self, key):
        """Mode ``key`` was asked of the background workers by someone else (a worker relayed
        it): take the answer when it comes, and do not ask again."""
        self.library.submitted.setdefault(key, time.perf_counter())

    def sync_discrete(self):
        """The discrete variables (``state.discrete``, just changed) into the parameter
        vector, where the compiled modes read them."""
        st, o = self.state, self.discrete_offset
        st.pvec[o:o + len(self.dnames)] = [float(st.discrete[k]) for k in self.dnames]

    # the stepping's own flags (``advance``): which event was rehearsed, whether the inputs
    # or the state changed since the monitors were computed, whether an input's new value
    # asks the guards to be armed again.  Changed by switching.py through these calls.
    def entered_mode(self):
        """A mode was just entered: its monitors are fresh, its guards armed, nothing of it
        rehearsed."""
        self._rehearsed = None
        self._dirty = self._rearm = False

    def rehearsing(self, mode, gi):
        """The event of switching condition ``gi`` of ``mode`` is being rehearsed."""
        self._rehearsed = (mode, gi)

    def step_flags(self):
        """The stepping's flags, to be given back to ``restore_step_flags`` (a rehearsal that
        runs the simulator and undoes it)."""
        return self._rehearsed, self._dirty, self._rearm

    def restore_step_flags(self, flags):
        self._rehearsed, self._dirty, self._rearm = flags

    def start(self, t0: float, q0, u0) -> None:
        """Initial reset map (eq 20): choose the first mode and embed it.  With more than one
        mode the unconstrained terms are compiled now too (reset maps need M).

        Parameters
        ----------
        t0 : float
            The start time (s); the fixed-step grid starts here.
        q0, u0 : array_like
            The generalized coordinates and speeds (the automaton's ``initial`` reset map may
            project them on the first mode's constraints).
        """
        st = self.state
        st.t = float(t0)
        self.integrator.restart(st.t)     # the fixed-step grid starts here
        st.x = np.array(q0, dtype=float)
        st.mon = np.array(u0, dtype=float)
        self.sync_discrete()
        if len(self.aut.modes) > 1:
            self.mode_compiler.numeric_terms()
            for name in self.aut.constraints:      # each constraint's own terms (Sec 5.5)
                self.forms.constraint_terms(name)
            for mode in self.aut.modes.values():   # and each mode's set of them
                switching.entered(self, tuple(sorted(mode.constraints)))
        if self.precompile:
            self.mode_compiler.precompile()
        if len(self.aut.modes) > 1 or self.embedding != "symbolic":
            self.mode_compiler.prepare()      # the compiled-terms programs: none in the step
        self.mode_compiler.starting = True
        try:
            jumps = switching.jumps_of(reset_map(self.aut, "initial", Context(self)))
            first = switching.consistent_start(self, jumps[0], self.consistent_start)
            switching.apply_all(self, [first, *jumps[1:]])
        finally:
            self.mode_compiler.starting = False
            self.keeping_start = False
        if self.start_correction > 0.0:
            dq, du = self.start_change
            self.start_log = (f"start made consistent with the constraints of mode "
                              f"{self.state.mode}: |dq| = {np.linalg.norm(dq):.3g}, |du| = "
                              f"{np.linalg.norm(du):.3g} (start_correction "
                              f"{self.start_correction:.3g})")

    def prepare(self, constraints):
        """Compile ahead what the current mode needs with the constraints ``constraints``
        activated at run time (``set_constraints``): its compiled-terms program, any
        partition (``ModeCompiler.prepare``); once started, the event rehearsed on it and
        undone (``switching.rehearse_entry``).  The automaton's own modes are prepared at
        ``start``.

        Parameters
        ----------
        constraints : iterable of str
            Constraints of the automaton.
        """
        active = tuple(sorted(constraints))
        self.mode_compiler.prepare(self.state.mode, active)
        switching.entered(self, active)
        switching.rehearse_entry(self, active)

    def warm_up(self):
        """Pay first-call costs now (``embed.hybrid.warmup.warm_up``)."""
        warm_up(self)

    @property
    def mode_number(self):
        """The mode as reported to the outside (Mode.report, else its id)."""
        md = self.aut.modes.get(self.state.mode)
        return self.state.mode if md is None or md.report is None else md.report

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
    def param(self, name: str) -> float:
        """A parameter, input or discrete variable by name.

        Parameters
        ----------
        name : str

        Returns
        -------
        float
            Its current value (ModelDefinitionError if there is none).
        """
        if name in self.pnames:
            return float(self.state.pvec[self.pnames.index(name)])
        try:
            return float(self.params[name])
        except KeyError:
            raise ModelDefinitionError(f"no parameter {name!r}") from None

    def set_inputs(self, values: dict) -> None:
        """Take the inputs in ``values``, all or none.

        Parameters
        ----------
        values : dict of str to float
            Inputs by name; others keep their values.

        Raises
        ------
        InputError
            Naming the input, for a non-finite value or one outside the automaton's allowed
            values for it; nothing is changed.
        """
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
    def constraint_forces(self) -> dict:
        """Multipliers of the active constraints: F + F* + B^T lambda = 0 (zero where a declared
        force symbol carries the constraint force, see ``forces_now``).

        Returns
        -------
        dict of str to float
            Active constraint name -> multiplier (empty before ``start``).
        """
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

    def outputs_now(self) -> dict:
        """The automaton's outputs at the current state.

        Returns
        -------
        dict of str to float
            Output name -> value (empty before ``start``).
        """
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(self.outputs, st.mon[st.compiled_mode.sl_outputs].tolist()))

    def residual(self):
        """Largest residual of the active constraints (|B u + C| and |Phi|) at the current state."""
        st = self.state
        return 0.0 if st.compiled_mode is None else float(st.mon[st.compiled_mode.i_res])

    # --------------------------------------------------------------- events
    def jump_to(self, mode: int, q=None, u=None, label: str = "reset", **discrete) -> None:
        """Enter ``mode`` now with an optional new state (a reset from outside: an event).

        Parameters
        ----------
        mode : int
            A mode of the automaton.
        q, u : array_like, optional
            New coordinates and speeds (default: the current ones).
        label : str
            The event's name in ``events``.
        **discrete : float
            Discrete variables set by the reset.
        """
        before = self.state.mode
        saved = state_mod.checkpoint(self.state, self.integrator)
        try:
            switching.apply(self, Jump(mode, discrete, q=q, u=u))
        except EmbedError:        # nothing entered: the state before the reset is kept
            state_mod.rollback(self.state, self.integrator, saved)
            self.sync_discrete()
            self._dirty = True
            raise
        switching.record(self, label, before)

    def set_constraints(self, names, label: str = "constraints") -> None:
        """Activate exactly the constraints ``names`` in the current mode now (an event, with
        the momentum-consistent activation jump of mueller eq 7 for the new ones).

        Parameters
        ----------
        names : iterable of str
            Constraints of the automaton (ModelDefinitionError naming an unknown one).
        label : str
            The event's name in ``events``.
        """
        for c in names:
            if c not in self.aut.constraints:
                raise ModelDefinitionError(f"unknown constraint {c!r}; known: "
                                           f"{sorted(self.aut.constraints)}")
        before = self.state.mode
        switching.apply(self, Jump(before, constraints=tuple(names)))
        switching.record(self, label, before)

    def _accept(self, y):
        st = self.state
        nx = st.compiled_mode.nx
        state_mod.check_finite(self, y, "state")
        st.x = y[:nx]
        st.mon = y[nx:-1]

    # ---------------------------------------------------------------- advance
    def rollback(self):
        """Back to the state at the start of the last ``advance`` if it failed (the last good
        state; ``advance`` does this itself before it raises); after a successful one, or
        before any, nothing to do: the current state is the last good one."""
        if self._checkpoint is None:
            return
        state_mod.rollback(self.state, self.integrator, self._checkpoint)
        self.sync_discrete()
        self._dirty = True

    def advance(self, t_end, stop_at_event=False):
        """Integrate to t_end, handling every event on the way, in time order.  Any EmbedError
        on the way rolls back to the state at the call (the last good state) and is raised.

        Parameters
        ----------
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
            early = self._advance(t_end, stop_at_event)
        except EmbedError:
            self.rollback()
            self._checkpoint = None   # rolled back: the current state is the last good one
            raise
        self._checkpoint = None       # the last good state is this one
        return early

    def _advance(self, t_end, stop_at_event=False):
        st = self.state
        if self.compiler is not None:
            self.poll_background()
        if self._dirty:     # inputs changed at this communication point: a condition may be due now
            st.mon = st.compiled_mode.monitors(st.t, st.x, st.pvec)
            state_mod.check_finite(self, st.mon, "monitors")
            self._dirty = False
            if self._rearm:
                self._rearm = False
                st.armed = events.rearm_after_input(st.mon[st.compiled_mode.sl_guards].tolist(),
                                                    st.armed)
            while (gi := events.due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                                    -PROBE_G)) is not None:
                switching.handle(self, gi)
        integ, p = self.integrator, st.pvec
        t_start = st.t
        budget = MAX_STEPS
        due, approaching = events.due, events.approaching   # looked up once an advance
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
                if st.projection.holonomic or st.watch or self._after_every_step:
                    self._after_step(self)      # switching.after_step unless a formulation's
                if (gi := approaching(g_prev, g_end, st.armed, st.enabled, self._rehearsed,
                                      st.mode)) is not None:
                    switching.rehearse(self, gi)
                if UNARMED in st.armed or HELD in st.armed:       # not all ARMED
                    st.armed = tuple(ARMED if v > 0 else a for a, v in
                                     zip(st.armed, st.mon[st.compiled_mode.sl_guards].tolist()))
                continue
            hits = [i for i, (v, a, e) in enumerate(zip(g_end, st.armed, st.enabled))
                    if a and e and v <= LEVEL[a]]
            tau, gi = min((switching.locate(self, i, x0, p, h, g_end[i]), i) for i in hits)
            self._accept(integ.partial(compiled, st.t, x0, p, tau))
            st.t += tau
            switching.handle(self, gi)
            # a reset map may leave another condition already crossed (not merely at zero)
            while (gi := due(st.mon[st.compiled_mode.sl_guards], st.armed, st.enabled,
                             -PROBE_G)) is not None:
                switching.handle(self, gi)
            if stop_at_event and t_end - st.t > EVENT_TOL:
                return True
        return False

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict:
        """Everything that decides the future.

        Returns
        -------
        dict
            Plain Python and numpy values (``embed.hybrid.state.serialize``), for ``set_state``.
        """
        return state_mod.serialize(self.state, self.integrator)

    def set_state(self, s):
        """Restore a state of ``get_state``: checked whole first (``check_state``), so a
        state that does not fit this simulator raises StateError naming the field and
        changes nothing."""
        s, compiled = self.check_state(s)
        st = self.state
        state_mod.restore(st, s)
        _, st.projection, st.watch = switching.entered(self, st.active)
        st.compiled_mode = compiled
        self.integrator.set_state(s["integrator"])
        self._checkpoint = None
        self._dirty = self._rearm = False

    def check_state(self, s):
        """StateError unless ``s`` is a whole, consistent state of this simulator
        (``embed.hybrid.state.check_state``).  Returns a copy of s and the compiled mode it runs in;
        nothing of the simulator changes."""
        return state_mod.check_state(self, s)


def _view(name):
    return property(lambda sim: getattr(sim.state, name),
                    doc=f"``state.{name}`` (``embed.hybrid.state.RunState``), read-only here")


for _field in state_mod.FIELDS:        # sim.t, sim.x, sim.mon, ...: views of sim.state
    setattr(Simulator, _field.name, _view(_field.name))
