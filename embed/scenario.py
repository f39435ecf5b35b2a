"""What a scenario hands to its users (tests, benchmarks, the FMU): docs/design.md, Conventions.

A scenario module's ``build()`` returns a ``Scenario``: the automaton over its
model and constraints, default parameters, and the interface a co-simulation
master sees (parameters, inputs, outputs with units and descriptions).  The
engine knows nothing of FMI; ``fmu_src`` maps this description onto FMU
variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .automaton import Automaton
from .library import ModeLibrary
from .simulator import Simulator


@dataclass(frozen=True)
class Var:
    name: str
    start: object
    description: str = ""
    unit: str = ""
    type: str = "Real"       # Real, Integer, Boolean, String
    min: float | None = None   # the range a master may set (FMI min/max); None: unbounded
    max: float | None = None


SIM_ATTRIBUTES = ("mode", "event_count", "last_event_time", "impact_count")
RESIDUAL = "largest residual of the active constraints"


def engine_outputs(mode_start, mode_description, residual=RESIDUAL):
    """The outputs every scenario's FMU has: constraint_residual, mode, event_count and
    last_event_time (see ``Scenario.source``)."""
    return [Var("constraint_residual", 0.0, residual, ""),
            Var("mode", mode_start, mode_description, type="Integer"),
            Var("event_count", 0, "events handled so far", type="Integer"),
            Var("last_event_time", 0.0, "located time of the latest event", "s")]


@dataclass
class Scenario:
    """A model, its automaton and its interface.

    Each output is one of the automaton's outputs (an expression evaluated by the
    compiled mode), ``constraint_residual``, a simulator attribute (``mode``,
    ``event_count``, ``last_event_time``) or, through ``extra_outputs``, the
    multiplier (constraint force) of a constraint, 0 while it is inactive, or a discrete
    variable of the automaton.
    """

    name: str
    automaton: Automaton
    parameters: list          # [Var]: model parameters and *_start values
    inputs: list              # [Var]
    outputs: list             # [Var]
    initial_state: Callable   # params dict -> (q0, u0)
    # name -> ("lambda", constraint name) or ("discrete", discrete variable name)
    extra_outputs: dict = field(default_factory=dict)
    input_defaults: dict = field(default_factory=dict)  # input -> parameter used until it is set
    embedding: str = "symbolic"   # default embedding path of the scenario's FMU
    precompile: bool = False      # compile every mode and partition at set-up (small automata)
    # FMU-side handling of extra inputs (geometry announced at run time, say): a class
    # taking (simulator, background compiler or None, log function), with ``inputs`` and
    # ``outputs`` (Var lists), ``before_step(input values)``, ``get(name)``, ``state()`` and
    # ``set_state(state)``
    extension: object = None
    positive: tuple = ()       # parameter names that must be > 0
    nonnegative: tuple = ()    # parameter names that must be >= 0

    def __repr__(self):
        # the generated repr would print the automaton, the model and the compiled modes,
        # deep enough to overflow the C stack when a failing test shows its arguments
        return f"Scenario({self.name!r})"

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

    def observe(self, sim) -> dict:
        """Values of every output at the simulator's current state."""
        out = {}
        for v in self.outputs:
            kind, where = self.source(v.name)
            if kind == "mon":
                out[v.name] = float(sim.mon[where])
            elif kind == "lambda":
                out[v.name] = sim.constraint_forces().get(where, 0.0)
            elif kind == "discrete":
                out[v.name] = sim.discrete[where]
            else:
                out[v.name] = getattr(sim, where)
        return out

    def defaults(self) -> dict:
        return {v.name: v.start for v in self.parameters}

    def simulator(self, params=None, *, solver="rk4", h_max=1e-3, rtol=1e-8, inputs=None,
                  embedding="symbolic", compiler=None, t0=0.0):
        """A simulator started at t = t0 from the *_start parameters (eq 20).

        Simulators of one scenario share its mode library per embedding path
        (``ModeLibrary.of``)."""
        p = {**self.defaults(), **(params or {})}
        sim = Simulator(self.automaton, p, solver=solver, h_max=h_max, rtol=rtol,
                        library=ModeLibrary.of(self.automaton, embedding), embedding=embedding,
                        compiler=compiler,
                        precompile=self.precompile and embedding != "numeric")
        sim.set_inputs({**{v.name: v.start for v in self.inputs}, **(inputs or {})})
        q0, u0 = self.initial_state(p)
        sim.start(t0, q0, u0)
        return sim
