"""What a scenario hands to its users (tests, benchmarks, the FMU): docs/design.md, Conventions.

A scenario module's ``build()`` returns a ``Scenario``: the automaton over its
model and constraints, default parameters, and the interface a co-simulation
master sees (parameters, inputs, outputs with units and descriptions).  The
engine knows nothing of FMI; ``fmu_src`` maps this description onto FMU
variables.  Declarative parts (docs/guide.md): the outputs come from the
automaton's ``Output`` declarations, the ``<coordinate>_start`` parameters and the
initial state (eq 20's x_0) from the model's coordinates and speeds (``Start``).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from ..model.automaton import SIM_ATTRIBUTES, Automaton
from ..base.errors import ModelDefinitionError
from ..base.record import Record
from .variables import Var
from .feasibility import check_parameters, check_state
from ..modes.library import ModeLibrary
from ..modes import cache as mode_cache
from ..hybrid.simulator import Simulator


class Start(Record):
    """The start value of a coordinate or speed: the parameter ``<name>_start``.

    Parameters
    ----------
    name : str
        A coordinate or speed of the model (``q1``, ``u1``).
    value : float
        Default of ``<name>_start``.
    description, unit : str
        Of the parameter (default description: "initial value of <name>").
    """

    FIELDS = ("name", "value", "description", "unit")
    FROZEN = True

    def __init__(self, name: str, value: float = 0.0, description: str = "", unit: str = ""):
        self.__dict__.update(name=name, value=value, description=description, unit=unit)


RESIDUAL = "largest residual of the active constraints"


def engine_outputs(mode_start: int, mode_description: str, residual: str = RESIDUAL) -> list:
    """The outputs every scenario's FMU has (see ``Scenario.source``).

    Parameters
    ----------
    mode_start : int
        Start value of ``mode``.
    mode_description, residual : str
        Descriptions of ``mode`` and ``constraint_residual``.

    Returns
    -------
    list of Var
        constraint_residual, mode, event_count and last_event_time.
    """
    return [Var("constraint_residual", 0.0, residual, ""),
            Var("mode", mode_start, mode_description, type="Integer"),
            Var("event_count", 0, "events handled so far", type="Integer"),
            Var("last_event_time", 0.0, "located time of the latest event", "s")]


class StartState:
    """The initial state (eq 20's x_0) read from the ``<name>_start`` parameters."""

    def __init__(self, q_names: Sequence[str], u_names: Sequence[str]):
        self.q_names, self.u_names = list(q_names), list(u_names)

    def __call__(self, p: dict):
        return (np.array([p[f"{k}_start"] for k in self.q_names], dtype=float),
                np.array([p[f"{k}_start"] for k in self.u_names], dtype=float))


class Scenario(Record):
    """A model, its automaton and its interface.

    Each output is one of the automaton's outputs (an expression evaluated by the
    compiled mode), ``constraint_residual``, a simulator attribute (``mode``,
    ``event_count``, ``last_event_time``) or, through ``extra_outputs``, the
    multiplier (constraint force) of a constraint, 0 while it is inactive, or a discrete
    variable of the automaton.

    Parameters
    ----------
    name : str
    automaton : Automaton
    parameters : list of Var
        The model's parameters (and hand-written ``*_start`` values, if ``initial_state``
        is given and ``start`` is not).
    inputs : list of Var
    outputs : list of Var, optional
        None: the automaton's ``Output`` declarations (those with ``interface``), then
        ``engine_outputs``.
    initial_state : callable, optional
        ``params -> (q0, u0)``; None: from the ``<name>_start`` parameters.
    extra_outputs : dict
        Output name -> ("lambda", constraint) or ("discrete", variable); the automaton's
        multiplier and discrete ``Output`` declarations are added.
    input_defaults : dict
        Input name -> the parameter whose value it has until a master sets it.
    embedding : str
        Default embedding path of the FMU (symbolic, numeric, background).
    precompile : bool
        Compile every mode and partition at set-up (small automata).
    extension : class, optional
        FMU-side handling of extra inputs (see the field's comment).
    positive, nonnegative : tuple of str
        Parameters that must be > 0, >= 0: folded into their Vars' ranges (``Var.with_sign``).
    start : sequence of Start
        Start values, descriptions and units of coordinates and speeds.  With ``start``
        or without ``initial_state``, a parameter ``<name>_start`` is generated for every
        coordinate, then every speed, of the model, after ``parameters``.
    mode_description : str
        Of the ``mode`` output (generated outputs); default "active mode: 1 <name>, ...".
    residual_description : str
        Of ``constraint_residual`` (generated outputs).
    consistent_start : bool
        Correct a start off the first mode's constraints (default), or keep it
        (``Simulator``'s option: full-state formulations only).
    visuals : embed.interface.visuals.Visuals, optional
        The shapes ``embed-fmu animate`` draws (None: the bodies' points).
    feasible : sequence of embed.interface.feasibility.Feasible
        What the model's physics asks of a start, a restored state and the parameters
        (``check_feasible``; issue 33).
    check_entries : dict, optional
        mode id -> function of the started simulator returning the ``Jump`` by which
        ``embed-fmu check`` enters that mode (its coordinates and speeds are moved to the
        nearest consistent state): for a mode that only an extension enters, whose
        constraints are not even defined at the start state (a fence beyond the ramp's end).
    """

    FIELDS = ("name", "automaton", "parameters", "inputs", "outputs", "initial_state",
              "extra_outputs", "input_defaults", "embedding", "precompile", "extension",
              "positive", "nonnegative", "start", "mode_description", "residual_description",
              "consistent_start", "visuals", "feasible", "check_entries")

    def __init__(self, name: str, automaton: Automaton, parameters: Optional[list] = None,
                 inputs: Optional[list] = None, outputs: Optional[list] = None,
                 initial_state: Optional[Callable] = None, extra_outputs: Optional[dict] = None,
                 input_defaults: Optional[dict] = None, embedding: str = "symbolic",
                 precompile: bool = False, extension: object = None, positive: tuple = (),
                 nonnegative: tuple = (), start: Sequence[Start] = (), mode_description: str = "",
                 residual_description: str = RESIDUAL, consistent_start: bool = True,
                 visuals: object = None, feasible: Sequence = (),
                 check_entries: Optional[dict] = None):
        self.name = name
        self.automaton = automaton
        # [Var]: model parameters, *_start values
        self.parameters = [] if parameters is None else parameters
        self.inputs = [] if inputs is None else inputs  # [Var]
        self.outputs = outputs  # [Var]; None: from the automaton
        self.initial_state = initial_state  # params dict -> (q0, u0)
        # name -> ("lambda", constraint name) or ("discrete", discrete variable name)
        self.extra_outputs = {} if extra_outputs is None else extra_outputs
        # input -> parameter used until it is set
        self.input_defaults = {} if input_defaults is None else input_defaults
        self.embedding = embedding  # default embedding path of the scenario's FMU
        self.precompile = precompile  # compile every mode and partition at set-up (small automata)
        # FMU-side handling of extra inputs (geometry announced at run time, say): a class
        # taking (simulator, background compiler or None, log function), with ``inputs`` and
        # ``outputs`` (Var lists), ``before_step(input values)``, ``get(name)``, ``state()`` and
        # ``set_state(state)``; optionally ``idle(input values)``: True when ``before_step``
        # would do nothing with them and ``get`` answers the same until its next call (the FMU
        # may then step in its C loader without calling it; absent: never idle)
        self.extension = extension
        self.positive = positive  # parameter names that must be > 0
        self.nonnegative = nonnegative  # parameter names that must be >= 0
        self.start = start  # coordinates' and speeds' start declarations
        self.mode_description = mode_description  # of the generated ``mode`` output
        # of the generated ``constraint_residual``
        self.residual_description = residual_description
        self.consistent_start = consistent_start  # correct an inconsistent start (docs/design.md)
        # embed.interface.visuals.Visuals: how ``embed-fmu animate`` draws the run
        self.visuals = visuals
        self.feasible = feasible  # [Feasible]: checked at start and restore
        # mode id -> sim -> Jump (the checker's)
        self.check_entries = {} if check_entries is None else check_entries
        self._derive()

    def __repr__(self):
        # the generated repr would print the automaton, the model and the compiled modes,
        # deep enough to overflow the C stack when a failing test shows its arguments
        return f"Scenario({self.name!r})"

    def _derive(self):
        """The generated ``<name>_start`` parameters, the initial state, the signs folded
        into ranges and the generated outputs (at construction and ``replace``)."""
        aut = self.automaton
        q_names = [str(s) for s in aut.model.q]
        u_names = [str(s) for s in aut.model.u]
        if self.start or self.initial_state is None:
            self.parameters = list(self.parameters) + [
                v for v in start_parameters(q_names + u_names, self.start)
                if not _declared(v, self.parameters, self.name)]
        if self.initial_state is None:
            self.initial_state = StartState(q_names, u_names)
        self.parameters = [v.with_sign(v.name in self.positive, v.name in self.nonnegative)
                           for v in self.parameters]
        declared = [o for o in aut.declared_outputs if o.source[0] in ("lambda", "discrete")]
        self.extra_outputs = {**{o.name: o.source for o in declared}, **self.extra_outputs}
        if self.outputs is None:
            self.outputs = self._generated_outputs()

    def mode_names(self) -> dict:
        """{number the ``mode`` output reports: the name of the modes that report it}, several
        joined by "/" (disk_fence's fences all report 3)."""
        out = {}
        for key, m in self.automaton.modes.items():
            k = key if m.report is None else m.report
            out[k] = "/".join(filter(None, [out.get(k), m.name]))
        return out

    def _generated_outputs(self) -> list:
        """The automaton's declared outputs shown outside, then ``engine_outputs``."""
        aut = self.automaton
        if not aut.declared_outputs:
            raise ModelDefinitionError(
                f"scenario {self.name!r}: no outputs; declare the automaton's outputs as "
                "embed.Output (Automaton(outputs=[Output(...), ...])) or give Scenario outputs")
        modes = list(aut.modes.values())
        report = [m.id if m.report is None else m.report for m in modes]
        description = self.mode_description or "active mode: " + ", ".join(
            f"{r} {m.name}" for r, m in zip(report, modes))
        out = [Var(o.name, int(o.start) if o.type == "Integer" else o.start, o.description,
                   o.unit, o.type) for o in aut.declared_outputs if o.interface]
        out += engine_outputs(report[0], description, self.residual_description)
        names = [v.name for v in out]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ModelDefinitionError(f"scenario {self.name!r}: outputs {twice} are declared "
                                       "twice (the engine's own outputs are added by Scenario)")
        return out

    def source(self, name):
        """Where output ``name`` lives: ("mon", index into Simulator.mon) or ("attr", attribute)."""
        aut = self.automaton
        base = aut.model.n + len(aut.model.forces)
        names = list(aut.outputs)
        if name in names:
            return "mon", base + names.index(name)
        if name == "constraint_residual":
            return "mon", base + len(names)
        if name == "mode":
            return "attr", "mode_number"
        if name in SIM_ATTRIBUTES:
            return "attr", name
        if name in self.extra_outputs:
            return self.extra_outputs[name]
        raise KeyError(f"scenario {self.name!r}: output {name!r} is neither an automaton output, "
                       f"constraint_residual nor one of {SIM_ATTRIBUTES}")

    def reader(self, name) -> Callable:
        """The function ``sim -> value`` of output ``name`` (``output_reader`` at ``source``):
        the one reader of outputs, used by ``observe``, the FMU and the studies."""
        return output_reader(name, *self.source(name))

    def observe(self, sim) -> dict:
        """Values of every output at the simulator's current state."""
        return {v.name: self.reader(v.name)(sim) for v in self.outputs}

    def defaults(self) -> dict:
        """Parameter name -> default value."""
        return {v.name: v.start for v in self.parameters}

    def simulator(self, params=None, *, solver="rk4", h_max=1e-3, rtol=1e-8, inputs=None,
                  embedding="symbolic", compiler=None, t0=0.0, formulation="embedding",
                  formulation_options=None, consistent_start=None, library=None):
        """A simulator started at t = t0 from the ``*_start`` parameters (eq 20), in the
        ``formulation`` asked for (``Simulator``); an input of ``input_defaults`` not given in
        ``inputs`` has its parameter's value, as in the FMU.

        Simulators of one scenario share its mode library per embedding path
        (``ModeLibrary.of``; ``library``: another).  ``consistent_start``: None takes the
        scenario's."""
        with ModeLibrary.lock_of(self.automaton):   # its start runs the shared compiled modes
            return self._simulator(params, solver, h_max, rtol, inputs, embedding, compiler,
                                   t0, formulation, formulation_options, consistent_start,
                                   library)

    def _simulator(self, params, solver, h_max, rtol, inputs, embedding, compiler, t0,
                   formulation, formulation_options, consistent_start, library):
        p = {**self.defaults(), **(params or {})}
        check_parameters(self.feasible, p, self.name)
        sim = Simulator(self.automaton, p, solver=solver, h_max=h_max, rtol=rtol,
                        library=library or mode_cache.library(self, embedding),
                        embedding=embedding,
                        compiler=compiler,
                        precompile=(self.precompile and embedding != "numeric"
                                    and formulation == "embedding"),
                        formulation=formulation, formulation_options=formulation_options,
                        consistent_start=(self.consistent_start if consistent_start is None
                                          else consistent_start))
        start = {v.name: v.start for v in self.inputs}
        for name, pname in self.input_defaults.items():   # follows its parameter until set
            start[name] = p[pname]
        sim.set_inputs({**start, **(inputs or {})})
        q0, u0 = self.initial_state(p)
        sim.start(t0, q0, u0)
        self.check_feasible(sim)
        return sim

    def check_feasible(self, sim):
        """InputError naming the value unless the simulator's state (a start, a restored
        state) meets the scenario's ``feasible`` conditions (``embed.feasibility``)."""
        check_state(self.feasible, sim, self.name)


def output_reader(name: str, kind: str, where) -> Callable:
    """The function ``sim -> value`` of an output that lives where ``Scenario.source`` says:
    ``mon`` an entry of the compiled mode's monitor vector, ``lambda`` a constraint's
    multiplier (0 while it is inactive), ``discrete`` a discrete variable, ``attr`` an
    attribute of the simulator."""
    if kind == "mon":
        return lambda sim: float(sim.state.mon[where])
    if kind == "lambda":
        return lambda sim: sim.constraint_forces().get(where, 0.0)
    if kind == "discrete":
        return lambda sim: sim.state.discrete[where]
    if kind == "attr":
        return lambda sim: getattr(sim, where)
    raise ModelDefinitionError(f"output {name!r} is of kind {kind!r}; use ('lambda', "
                               "constraint) or ('discrete', variable)")


def start_parameters(names: Sequence[str], start: Sequence[Start] = ()) -> list:
    """The ``<name>_start`` parameters of coordinates and speeds ``names``.

    Parameters
    ----------
    names : sequence of str
        The model's coordinates, then its speeds.
    start : sequence of Start
        Values, descriptions and units; a name without one starts at 0.

    Returns
    -------
    list of Var
    """
    given = {s.name: s for s in start}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ModelDefinitionError(f"start values for {unknown}, which are neither coordinates "
                                   f"nor speeds of the model ({names})")
    if len(given) != len(start):
        raise ModelDefinitionError("a coordinate or speed has more than one Start")
    out = []
    for k in names:
        s = given.get(k, Start(k))
        out.append(Var(f"{k}_start", s.value, s.description or f"initial value of {k}", s.unit))
    return out


def _declared(v: Var, parameters: list, scenario: str) -> bool:
    """Whether ``v`` is in ``parameters`` already (as it is); a different one is an error."""
    for p in parameters:
        if p.name == v.name:
            if p != v:
                raise ModelDefinitionError(
                    f"scenario {scenario!r}: parameter {v.name!r} is declared by hand and "
                    "generated from the coordinates and speeds; drop it from parameters and "
                    "give its value with Start")
            return True
    return False
