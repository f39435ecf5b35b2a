"""What a scenario hands to its users (tests, benchmarks, the FMU): DESIGN.md, Conventions.

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
from .simulator import Simulator


@dataclass(frozen=True)
class Var:
    name: str
    start: object
    description: str = ""
    unit: str = ""
    type: str = "Real"       # Real, Integer, Boolean, String


@dataclass
class Scenario:
    name: str
    automaton: Automaton
    parameters: list          # [Var]: model parameters and *_start values
    inputs: list              # [Var]
    outputs: list             # [Var]
    initial_state: Callable   # params dict -> (q0, u0)
    observe: Callable         # Simulator -> dict of output values (names of ``outputs``)
    positive: tuple = ()       # parameter names that must be > 0
    nonnegative: tuple = ()    # parameter names that must be >= 0
    cache: dict = field(default_factory=dict)

    def defaults(self) -> dict:
        return {v.name: v.start for v in self.parameters}

    def simulator(self, params=None, *, solver="rk4", h_max=1e-3, rtol=1e-8, inputs=None):
        """A simulator started at t = 0 from the *_start parameters (eq 20)."""
        p = {**self.defaults(), **(params or {})}
        sim = Simulator(self.automaton, p, solver=solver, h_max=h_max, rtol=rtol,
                        cache=self.cache)
        sim.set_inputs({**{v.name: v.start for v in self.inputs}, **(inputs or {})})
        q0, u0 = self.initial_state(p)
        sim.start(0.0, q0, u0)
        return sim
