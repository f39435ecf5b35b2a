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

import time

import numpy as np

from . import outside, start as start_mod, state as state_mod, stepping, switching
from ..model.automaton import Automaton
from ..base.errors import InputError, ModelDefinitionError
from .integrators import make_integrator
from ..modes.forming import AutomatonForms
from ..modes.formulations import Formulation
from .after_step import after_step_for
from ..modes.library import ModeLibrary
from ..modes.mode_compiler import ModeCompiler
from .projection import Projection
from .state import RunState
from .stepping import MAX_STEPS, StepFlags  # noqa: F401  (MAX_STEPS: the FMU's budget)
from .warmup import warm_up

EMBEDDINGS = ("symbolic", "numeric", "background")
STATE_FIELDS = state_mod.STATE_KEYS


class FormsViews:
    """The model and the parameter vector's symbols of a simulator: its forms' (a scenario
    image's have no symbols until its forms need them, ``AutomatonForms.symbolic``)."""

    model = property(lambda self: self.forms.model)
    psyms = property(lambda self: self.forms.psyms)


class Simulator(FormsViews):
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
        self.after_step, self.after_every_step = after_step_for(self.formulation)
        self.embedding = embedding
        self.compiler = compiler
        self.precompile = precompile
        self.library = library or ModeLibrary()   # shared: re-entering a mode costs nothing
        # this simulator's own view of the automaton (constraints and modes added at run time
        # stay here) and its symbolic forms
        self.forms = AutomatonForms(automaton, self.library)
        self.aut = self.forms.automaton
        m = self.model
        self.dnames, self.pnames = self.forms.discrete_names, self.forms.pnames
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
        # the running state (``embed.hybrid.state.RunState``); before the first mode x: q, mon: u
        self.state = RunState(x=np.zeros(m.n), mon=np.zeros(m.n), pvec=pvec,
                              discrete=dict(automaton.discrete), projection=Projection())
        if self.formulation.full_state:   # a scenario image's symbols: this path forms at once
            self.forms.symbolic()
        if embedding != "symbolic" or self.formulation.full_state:   # shipped, else formed
            self.mode_compiler.numeric_terms()
        self.reselect_time = 0.0  # CPU seconds spent re-selecting independent speeds
        self.reselect_compile_time = 0.0   # of reselect_time (CPU s too): first embeddings of a partition
        self.last_impulse = {}
        self.impacts = []
        self.zeno_dt = float(zeno_dt)
        self.flags = StepFlags()  # the stepping's own flags (``embed.hybrid.stepping``)
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
        (default: the current one; ``embed.hybrid.start.nearest_configuration``)."""
        return start_mod.nearest_configuration(self, active, q)

    def expect_background_mode(self, key):
        """Mode ``key`` was asked of the background workers by someone else (a worker relayed
        it): take the answer when it comes, and do not ask again."""
        self.library.submitted.setdefault(key, time.perf_counter())

    def sync_discrete(self):
        """The discrete variables (``state.discrete``, just changed) into the parameter
        vector, where the compiled modes read them."""
        st, o = self.state, self.discrete_offset
        st.pvec[o:o + len(self.dnames)] = [float(st.discrete[k]) for k in self.dnames]

    def start(self, t0: float, q0, u0) -> None:
        """Initial reset map (eq 20): choose the first mode and embed it, from the start time
        t0 (s; the fixed-step grid starts here) and q0, u0 (made consistent with the first
        mode's constraints unless ``consistent_start`` is False): ``embed.hybrid.start``."""
        start_mod.start(self, t0, q0, u0)

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

    def warm_up(self, calls=True):
        """Pay first-call costs now (``embed.hybrid.warmup.warm_up``)."""
        warm_up(self, calls)

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
        """A parameter, input or discrete variable's current value by name
        (ModelDefinitionError if there is none)."""
        if name in self.pnames:
            return float(self.state.pvec[self.pnames.index(name)])
        try:
            return float(self.params[name])
        except KeyError:
            raise ModelDefinitionError(f"no parameter {name!r}") from None

    def set_inputs(self, values: dict) -> None:
        """Take the inputs in ``values`` (by name), all or none; InputError naming a bad one
        (``embed.hybrid.outside.set_inputs``)."""
        outside.set_inputs(self, values)

    # ----------------------------------------------------------------- probes
    def constraint_forces(self) -> dict:
        """Multipliers of the active constraints by name: F + F* + B^T lambda = 0 (zero where
        a declared force symbol carries the constraint force, see ``forces_now``); empty
        before ``start``."""
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
        """The automaton's outputs at the current state by name (empty before ``start``)."""
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
        """Enter ``mode`` now with an optional new state (a reset from outside, logged as the
        event ``label``; ``embed.hybrid.outside.jump_to``)."""
        outside.jump_to(self, mode, q, u, label, **discrete)

    def set_constraints(self, names, label: str = "constraints") -> None:
        """Activate exactly the constraints ``names`` now, with the momentum-consistent jump
        of mueller eq 7 (``embed.hybrid.outside.set_constraints``)."""
        outside.set_constraints(self, names, label)

    def accept(self, y):
        """Take y = [x, monitors] of the active mode as the current state (finite only)."""
        st = self.state
        nx = st.compiled_mode.nx
        state_mod.check_finite(self, y, "state")
        st.x = y[:nx]
        st.mon = y[nx:-1]

    # ---------------------------------------------------------------- advance
    def rollback(self):
        """Back to the state at the start of the last ``advance`` if it failed
        (``embed.hybrid.stepping.rollback``)."""
        stepping.rollback(self)

    def advance(self, t_end, stop_at_event=False):
        """Integrate to t_end, every event handled in time order (``stepping.advance``),
        under the lock of the simulators sharing this one's compiled modes (their scratch
        buffers: ``ModeLibrary.lock_of``); any EmbedError rolls back to the call's state."""
        with self.library.lock:
            return stepping.advance(self, t_end, stop_at_event)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict:
        """Everything that decides the future, as plain Python and numpy values
        (``embed.hybrid.state.serialize``), for ``set_state``."""
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
        self.flags.checkpoint, self.flags.dirty, self.flags.rearm = None, False, False
        self.flags.pending = self.flags.rehearsed_dep = None

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
