"""One pythonfmu co-simulation slave for every scenario.

The FMU variables come from the scenario's interface (parameters, inputs,
outputs) plus the common ones: ``solver``, ``h_max``, ``rtol`` and ``status``.
``do_step`` never lets an exception escape (pythonfmu would turn it into
fmi2Fatal): engine errors are logged through the FMI logger, the last good state
is kept, and ``status`` reports the code of the error (see ``STATUS``).
"""

from __future__ import annotations

import json
import math

import numpy as np
from pythonfmu import Boolean, Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability
from pythonfmu.enums import Fmi2Status
from pythonfmu import Integer, Real, String

from embed import EmbedError, InputError
from embed.simulator import EMBEDDINGS
from embed.errors import (CompilationError, ConstraintRankError, EventLocationError, ImpactError,
                          IntegrationError, ModelDefinitionError, ZenoError)

STATUS = {
    0: "ok",
    1: "internal error (see the FMI log)",
    ModelDefinitionError.status: "model definition error",
    ConstraintRankError.status: "active constraints redundant or inconsistent",
    CompilationError.status: "compilation of a mode failed",
    IntegrationError.status: "integration failed (non-finite state or step size underflow)",
    EventLocationError.status: "a switching condition could not be located",
    ZenoError.status: "Zeno behaviour: too many events at one instant",
    ImpactError.status: "impact could not be resolved",
    InputError.status: "an input or parameter was rejected; the last good value is kept",
}

WORKER_START_TIMEOUT = 60.0   # s that initialization waits for the background worker's start
_SCENARIOS = {}   # (name, options) -> Scenario, built once per process (pythonfmu re-runs __init__)
_COMPILERS = {}   # (name, options) -> background embedding worker, one per process

COMMON = [("solver", "rk4", "integrator: 'rk4' (fixed step, real time) or 'adaptive' (Dormand-Prince 5(4))", ""),
          ("h_max", 1e-3, "largest internal step", "s"),
          ("rtol", 1e-8, "relative tolerance of the adaptive solver", ""),
          ("embedding", None, "'symbolic' (embed and compile a mode when first entered), 'numeric' "
           "(compiled terms, gillespie2005 Sec 5.5) or 'background' (numeric at once, symbolic "
           "from a worker process when ready)", "")]


def scenario(name, options):
    key = (name, tuple(sorted(options.items())))
    sc = _SCENARIOS.get(key)
    if sc is None:
        import scenarios
        sc = scenarios.load(name).build(**options)
        _SCENARIOS[key] = sc
    return sc


def compiler(name, options, resources):
    """The process's background embedding worker for this scenario, started once."""
    key = (name, tuple(sorted(options.items())))
    bc = _COMPILERS.get(key)
    if bc is None or not bc.alive():
        from embed.background import BackgroundCompiler
        bc = _COMPILERS[key] = BackgroundCompiler(name, dict(options), root=resources)
    return bc.client(resources)     # the instance's own requests and answers


def _var(v, causality, getter=None, setter=None):
    """pythonfmu variable for an interface Var with the attributes fmpy validate wants."""
    kind = {"Real": Real, "Integer": Integer, "Boolean": Boolean, "String": String}[v.type]
    kw = {"causality": causality, "description": v.description, "getter": getter,
          "setter": setter}
    if causality == Fmi2Causality.parameter:
        kw["variability"] = Fmi2Variability.fixed
        kw["initial"] = Fmi2Initial.exact
    elif causality == Fmi2Causality.input:
        kw["variability"] = Fmi2Variability.continuous if v.type == "Real" else Fmi2Variability.discrete
    else:
        kw["variability"] = Fmi2Variability.continuous if v.type == "Real" else Fmi2Variability.discrete
        kw["initial"] = Fmi2Initial.exact
    return kind(v.name, **kw)


class ScenarioSlave(Fmi2Slave):
    """Base class; a built FMU's script subclasses it and sets ``scenario_name``."""

    scenario_name = None
    scenario_options = {}
    author = "embed project"
    description = "On-line symbolic constraint embedding for a hybrid multibody system"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from embed import Var
        self.sc = scenario(self.scenario_name, self.scenario_options)
        self.sim = None
        self.status = 0
        self._good_inputs = {}
        for name, start, desc, _unit in COMMON:
            start = self.sc.embedding if name == "embedding" else start
            setattr(self, name, start)
            self.register_variable(_var(Var(name, start, desc, type="String" if isinstance(start, str)
                                            else "Real"), Fmi2Causality.parameter))
        for v in self.sc.parameters:
            setattr(self, v.name, v.start)
            self.register_variable(_var(v, Fmi2Causality.parameter))
        self._inputs_set = set()     # inputs the master has set (see Scenario.input_defaults)
        for v in self.sc.inputs:
            setattr(self, v.name, v.start)
            self._good_inputs[v.name] = float(v.start)
            setter = None
            if v.name in self.sc.input_defaults:
                def setter(value, n=v.name):
                    setattr(self, n, value)
                    self._inputs_set.add(n)
            self.register_variable(_var(v, Fmi2Causality.input, setter=setter))
        self._input_names = [v.name for v in self.sc.inputs]
        self.ext = None
        ext = self.sc.extension
        self._ext_inputs = [v.name for v in ext.inputs] if ext else []
        for v in (ext.inputs if ext else []):
            setattr(self, v.name, v.start)
            self.register_variable(_var(v, Fmi2Causality.input))
        self._mon = np.zeros(1 + max([0] + [self.sc.source(v.name)[1] for v in self.sc.outputs
                                            if self.sc.source(v.name)[0] == "mon"]))
        for v in self.sc.outputs:
            kind, where = self.sc.source(v.name)
            if kind == "mon":
                self._mon[where] = v.start
        self._start_sim(worker=False)     # exact start values of the outputs
        # Output getters read the engine's monitor vector directly: publishing a step's
        # results is one reference assignment (``_publish``).
        self._getters = {}     # value reference -> getter, Real outputs
        for v in self.sc.outputs:
            kind, where = self.sc.source(v.name)
            if kind == "mon":
                getter = (lambda i=where: self._mon[i])
            elif kind == "lambda":
                getter = (lambda c=where: self.sim.constraint_forces().get(c, 0.0)
                          if self.sim else 0.0)
            elif kind == "discrete":
                getter = (lambda k=where, d=v.start: self.sim.discrete[k] if self.sim else d)
            else:
                getter = (lambda a=where, d=v.start: getattr(self.sim, a) if self.sim else d)
            var = _var(v, Fmi2Causality.output, getter)
            self.register_variable(var)
            if v.type == "Real":
                self._getters[var.value_reference] = getter
        for v in (ext.outputs if ext else []):
            self.register_variable(_var(v, Fmi2Causality.output,
                                        lambda n=v.name, d=v.start: self.ext.get(n) if self.ext
                                        else d))
        self.register_variable(_var(Var("status", 0, "0 ok; otherwise a code listed in the README "
                                        "(error kind of the last step)", type="Integer"),
                                    Fmi2Causality.output))

    # ------------------------------------------------------------ lifecycle
    def _params(self):
        """Parameters from the FMU variables, checked; bad ones are replaced by defaults and logged."""
        p = {}
        for v in self.sc.parameters:
            val = getattr(self, v.name)
            try:
                val = float(val)
                ok = math.isfinite(val)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                self._reject(f"parameter {v.name} = {getattr(self, v.name)!r} is not a finite number; "
                             f"using the default {v.start}")
                val = v.start
                setattr(self, v.name, val)
            p[v.name] = val
        for v in self.sc.parameters:
            bad = ((v.name in self.sc.positive and p[v.name] <= 0)
                   or (v.name in self.sc.nonnegative and p[v.name] < 0))
            if bad:
                self._reject(f"parameter {v.name} = {p[v.name]} must be "
                             f"{'positive' if v.name in self.sc.positive else 'non-negative'}; "
                             f"using the default {v.start}")
                p[v.name] = v.start
                setattr(self, v.name, v.start)
        return p

    def _solver_options(self):
        solver = str(self.solver).strip().lower()
        if solver not in ("rk4", "adaptive"):
            self._reject(f"solver {self.solver!r} is unknown (use 'rk4' or 'adaptive'); using 'rk4'")
            solver = self.solver = "rk4"
        embedding = str(self.embedding).strip().lower()
        if embedding not in EMBEDDINGS:
            self._reject(f"embedding {self.embedding!r} is unknown (use one of {EMBEDDINGS}); "
                         f"using {self.sc.embedding!r}")
            embedding = self.embedding = self.sc.embedding
        h_max, rtol = self.h_max, self.rtol
        if not (isinstance(h_max, (int, float)) and math.isfinite(h_max) and 0 < h_max <= 1.0):
            self._reject(f"h_max = {h_max!r} must lie in (0, 1] s; using 1e-3")
            h_max = self.h_max = 1e-3
        if not (isinstance(rtol, (int, float)) and math.isfinite(rtol) and 1e-14 <= rtol < 1):
            self._reject(f"rtol = {rtol!r} must lie in [1e-14, 1); using 1e-8")
            rtol = self.rtol = 1e-8
        return solver, float(h_max), float(rtol), embedding

    def _start_sim(self, worker=True):
        """A simulator from the parameters; ``worker``: start the background embedding worker
        if the embedding asks for it (not at build time, when pythonfmu only reads the
        start values)."""
        for name, pname in self.sc.input_defaults.items():   # "used when set"
            if name not in self._inputs_set:
                val = getattr(self, pname)
                setattr(self, name, val)
                self._good_inputs[name] = float(val)
        try:
            solver, h_max, rtol, embedding = self._solver_options()
            if embedding == "background" and not worker:
                embedding = "numeric"
            bc = (compiler(self.scenario_name, self.scenario_options, self._resource_dir())
                  if embedding == "background" else None)
            self.sim = self.sc.simulator(self._params(), solver=solver, h_max=h_max, rtol=rtol,
                                         inputs=dict(self._good_inputs), embedding=embedding,
                                         compiler=bc)
            if self.sc.extension is not None:
                self.ext = self.sc.extension(
                    self.sim, bc, lambda msg: self.log(msg, Fmi2Status.warning))
        except EmbedError as exc:
            self._fail(exc)
        except Exception as exc:   # noqa: BLE001 - never let an exception reach pythonfmu
            self._fail(exc, internal=True)
        self._publish()

    def exit_initialization_mode(self):
        self.status = 0
        self._read_inputs()
        self._start_sim()
        if self.sim is not None:
            try:
                self.sim.warm_up()
            except Exception as exc:  # noqa: BLE001 - warming is an optimization only
                self.log(f"warm-up skipped: {exc}", Fmi2Status.warning)
            bc = self.sim.compiler
            if bc is not None and not bc.wait_ready(WORKER_START_TIMEOUT):
                self.log(f"background embedding worker not ready after {WORKER_START_TIMEOUT} s;"
                         " stepping on the numeric path until it is", Fmi2Status.warning)
        # everything built so far (models, compiled modes) lives as long as the process: keep
        # it out of the cyclic collector, whose full passes over it paused steps for ms
        import gc
        gc.collect()
        gc.freeze()

    def do_step(self, current_time, step_size):
        try:
            self.status = 0
            self._read_inputs()
            if self.ext is not None:
                self.ext.before_step({n: getattr(self, n) for n in self._ext_inputs})
            if self.sim is not None:
                self.sim.advance(current_time + step_size)
                bc = self.sim.compiler
                while bc is not None and bc.errors:     # the stepping goes on without it
                    what, message, _ = bc.errors.pop(0)
                    self.log(f"background embedding of {what} failed: {message}",
                             Fmi2Status.warning)
        except EmbedError as exc:
            self._fail(exc)
        except Exception as exc:   # noqa: BLE001
            self._fail(exc, internal=True)
        self._publish()
        return True

    # ------------------------------------------------------------- helpers
    def _resource_dir(self):
        """This FMU's resources folder (holding embed/ and scenarios/), if it has one."""
        import os
        from urllib.parse import unquote, urlparse
        res = self.resources or ""
        path = unquote(urlparse(res).path) if res.startswith("file:") else res
        return path if path and os.path.isdir(os.path.join(path, "embed")) else None

    def _read_inputs(self):
        """Inputs from the master; a non-finite one is rejected and its last good value kept."""
        good = self._good_inputs
        changed = False
        for name in self._input_names:
            v = getattr(self, name)
            if v != good[name]:
                try:
                    f = float(v)
                except (TypeError, ValueError):
                    f = math.nan
                if math.isfinite(f):
                    good[name] = f
                    changed = True
                else:
                    self._reject(f"input {name} = {v!r} is not finite; keeping {good[name]}")
                    setattr(self, name, good[name])
        if changed and self.sim is not None:
            self.sim.set_inputs(good)

    def _reject(self, msg):
        self.status = InputError.status
        self.log(msg, Fmi2Status.warning)

    def _fail(self, exc, internal=False):
        self.status = 1 if internal else exc.status
        kind = "internal error" if internal else type(exc).__name__
        t = self.sim.t if self.sim is not None else 0.0
        self.log(f"{kind} at t = {t:.9g} s: {exc}; the last good state is kept", Fmi2Status.error)
        if self.sim is not None:
            self.sim.rollback()

    def _publish(self):
        if self.sim is not None:
            self._mon = self.sim.mon

    def get_real(self, vrs):
        """pythonfmu's get_real without its per-variable type checks (the hot path at 1 kHz)."""
        g = self._getters
        try:
            return [float(g[vr]()) for vr in vrs]
        except (KeyError, TypeError):
            return super().get_real(vrs)

    # ---------------------------------------------------------------- state
    def _get_fmu_state(self):
        return {"sim": self.sim.get_state() if self.sim is not None else None,
                "ext": self.ext.state() if self.ext is not None else None,
                "inputs": dict(self._good_inputs), "status": self.status,
                "inputs_set": {n: getattr(self, n) for n in self._input_names}}

    def _set_fmu_state(self, state):
        self.status = state["status"]
        self._good_inputs = dict(state["inputs"])
        for k, v in state["inputs_set"].items():
            setattr(self, k, v)
        if state.get("ext") is not None and self.ext is not None:
            self.ext.set_state(state["ext"])     # first: it may install what the state uses
        if state["sim"] is not None and self.sim is not None:
            self.sim.set_state(state["sim"])
        self._publish()

    @staticmethod
    def _fmu_state_to_bytes(state):
        return json.dumps(state, default=_jsonable).encode("utf-8")

    @staticmethod
    def _fmu_state_from_bytes(data):
        return json.loads(data.decode("utf-8"))


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    raise TypeError(f"cannot serialize {type(o).__name__} in the FMU state")
