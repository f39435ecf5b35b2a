"""One pythonfmu co-simulation slave for every scenario.

The FMU variables come from the scenario's interface (parameters, inputs,
outputs) plus the common ones: ``solver``, ``h_max``, ``rtol``, ``embedding`` and
``status``.  Every FMI call answers as FMI 2.0 says (``fmu_src.runtime.fmi2``): a call that is
illegal in the instance's state or has a bad argument gets fmi2Error with nothing of it
applied; a step the engine cannot complete gets fmi2Discard with the last good state
kept (fmi2GetRealStatus gives fmi2LastSuccessfulTime); every refusal is logged through
the FMI logger and reported in ``status`` (see ``STATUS``).  No exception reaches pythonfmu.
"""

from __future__ import annotations

import math
import os
import weakref

import numpy as np
from pythonfmu import Boolean, Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability
from pythonfmu.enums import Fmi2Status
from pythonfmu import Integer, Real, String

from embed import EmbedError, ModelDefinitionError
from embed.modes.formulations import FORMULATIONS, Formulation
from embed.hybrid.simulator import EMBEDDINGS, MAX_STEPS
from fmu_src.runtime import derivatives, fmu_state
from fmu_src.runtime.fmi2 import (DISCARD, ERROR, CallError, Loader, State, fmi2_call,
                          refuse_running_call)
from fmu_src.runtime.status import (ENUMERATIONS, INPUT_REJECTED, MODE_NUMBER, REFUSED,
                                   STATUS, STATUS_DESCRIPTION, add_integer_alias,
                                   as_enumeration, status_of, type_definitions)

__all__ = ["ScenarioSlave", "STATUS"]

WORKER_START_TIMEOUT = 60.0   # s that initialization waits for the background worker's start
_SCENARIOS = {}   # (name, options) -> Scenario, built once per process (pythonfmu re-runs __init__)
_COMPILERS = {}   # (name, options) -> background embedding worker, one per process

COMMON = [("solver", "rk4", "integrator: 'rk4' (fixed step, real time) or 'adaptive' (Dormand-Prince 5(4))", ""),
          ("h_max", 1e-3, "largest internal step", "s"),
          ("rtol", 1e-8, "relative tolerance of the adaptive solver", ""),
          ("embedding", None, "'symbolic' (embed and compile a mode when first entered), 'numeric' "
           "(compiled terms, gillespie2005 Sec 5.5) or 'background' (numeric at once, symbolic "
           "from a worker process when ready)", "")]
COMMON_RANGES = {"h_max": (1e-9, 1.0), "rtol": (1e-14, 0.5), "worker_deadline": (0.05, 3600.0)}
# the formulation and its parameters (embed.modes.formulations), registered after every other
# variable so that the value references of the others stay as they were
_F = Formulation()
FORMULATION = [
    ("formulation", "embedding", "'embedding' (this engine), or 'multipliers' (augmented "
     "[M B^T; B 0] system), 'projection' (braun_goldfarb2012 eq 3-4 after each step) or 'soft' "
     "(wang2019 spring-damper constraints), all on the full state [q, u]", ""),
    ("configuration_projection", _F.configuration_projection,
     "embedding: hold Phi(q) = 0 after each step (haug_pavesic2023 eq 13-16)", ""),
    ("baumgarte_alpha", _F.baumgarte_alpha, "multipliers/projection: Baumgarte's alpha "
     "(B udot = -gamma - 2 alpha (B u + C) - beta^2 Phi)", "1/s"),
    ("baumgarte_beta", _F.baumgarte_beta, "multipliers/projection: Baumgarte's beta", "1/s"),
    ("projection_tol", _F.projection_tol, "projection: no correction below this residual", ""),
    ("projection_iterations", int(_F.projection_iterations),
     "projection: corrections of q per step (1: the paper's explicit one)", ""),
    ("projection_rcond", _F.projection_rcond,
     "projection: relative cut-off of the pseudo-inverse", ""),
    ("soft_stiffness", _F.soft_stiffness, "soft: K_s of wang2019 eq 13-14, lambda = -(K_s Phi "
     "+ K_d dPhi/dt), per constraint: N/m on a length (N.m/rad on an angle)", "N/m"),
    ("soft_damping", _F.soft_damping, "soft: K_d of wang2019 eq 13-14, per constraint: N.s/m "
     "on a length (N.m.s/rad on an angle)", "N.s/m"),
]
# the run's promises (issue 33), registered last too
RELIABILITY = [
    ("real_time", False, "the master keeps wall time (1 kHz): the background workers' answers "
     "are taken when they arrive, never waited for (a run may then differ from an offline "
     "one; the log and `answers_late` say when); false: waited for where the run needs "
     "them, the same bits at any pace", ""),
    ("worker_deadline", 20.0, "seconds a background worker with work outstanding may stay "
     "silent before it is replaced as hung", "s"),
]
STRING_CHOICES = {"solver": ("rk4", "adaptive"), "embedding": EMBEDDINGS,
                  "formulation": FORMULATIONS}


def scenario(name, options, notes=None):
    """The scenario, once per process: shipped in the FMU's resources (``formed``: formed and
    compiled at ``embed-fmu build``), else built; why a shipped file was refused goes to
    ``notes``."""
    key = (name, tuple(sorted(options.items())))
    sc = _SCENARIOS.get(key)
    if sc is None:
        from fmu_src.runtime import formed
        sc, why = formed.load(name, dict(options))
        if notes is not None:
            notes.extend(why)
        _SCENARIOS[key] = sc
    return sc


def compiler(name, options, resources):
    """A client of the process's background embedding workers for this scenario (one per
    instance: its answers are its own).  The workers stop with their last client (closed at
    fmi2Terminate or when the instance is freed), and start again for the next one."""
    key = (name, tuple(sorted(options.items())))
    bc = _COMPILERS.get(key)
    if bc is None or not bc.alive():
        from embed.background.client import BackgroundCompiler
        first = _COMPILERS[key] = BackgroundCompiler(name, dict(options), root=resources)
        client = first.client(resources)
        first.close()          # the pair lives as long as its instances' clients
        return client
    return bc.client(resources)


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
    var = kind(v.name, **kw)
    if v.type in ("Real", "Integer"):
        # its unit (UnitDefinitions: build_fmu.py) and declared range in modelDescription.xml
        attrs = {"unit": v.unit or "1"} if v.type == "Real" else {}
        attrs.update({k: repr(float(x)) if v.type == "Real" else str(int(x))
                      for k, x in (("min", v.min), ("max", v.max)) if x is not None})
        xml = var.to_xml

        def to_xml():
            e = xml()
            for k, x in attrs.items():
                e.find(v.type).set(k, x)
            return e
        var.to_xml = to_xml
    if v.name in ENUMERATIONS and causality == Fmi2Causality.output and v.type == "Integer":
        integer_xml = var.to_xml
        var.to_xml = lambda: as_enumeration(integer_xml(), v.name)
    return var


def _forget_repeated_path(resources):
    """pythonfmu's binary puts the resources folder in front of sys.path at every
    fmi2Instantiate: without this, sys.path grows by one entry per instance."""
    import sys
    if resources and sys.path.count(resources) > 1:
        first = sys.path.index(resources)
        sys.path[first + 1:] = [p for p in sys.path[first + 1:] if p != resources]


class ScenarioSlave(Fmi2Slave):
    """Base class; a built FMU's script subclasses it and sets ``scenario_name``."""

    scenario_name = None
    scenario_options = {}
    author = "embed project"
    description = "On-line symbolic constraint embedding for a hybrid multibody system"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        _forget_repeated_path(self.resources)
        from embed import Var
        self.loader = Loader(self.resources, type(self).__name__)
        self.model_guid = self.loader.guid or f"{self.scenario_name}:{self.scenario_options}"
        self.fmi_state = State.INSTANTIATED
        self.start_time = 0.0
        self.t_comm = 0.0          # the master's communication point
        notes = []
        self.sc = self.scenario = scenario(self.scenario_name, self.scenario_options, notes)
        for note in notes:
            self.log(note, Fmi2Status.warning)
        self.sim = None
        self.status = 0
        self._broken = None        # (status code, message) of a failure no step can get past
        self._rejected = {}        # parameter -> why its last value was refused
        self._specs = {}           # value reference -> (Var, causality)
        for name, start, desc, unit in COMMON:
            start = self.sc.embedding if name == "embedding" else start
            lo, hi = COMMON_RANGES.get(name, (None, None))
            self._register(Var(name, start, desc, unit, type="String" if isinstance(start, str)
                               else "Real", min=lo, max=hi, choices=STRING_CHOICES.get(name, ())),
                           Fmi2Causality.parameter)
        for v in self.sc.parameters:
            self._register(v, Fmi2Causality.parameter)
        self._inputs_set = set()     # inputs the master has set (see Scenario.input_defaults)
        for v in self.sc.inputs:
            self._register(v, Fmi2Causality.input)
        self._input_names = [v.name for v in self.sc.inputs]
        self._good_inputs = {v.name: float(v.start) for v in self.sc.inputs}
        self._inputs_changed = False   # an input was set since the simulator last took them
        self.ext = None
        ext = self.sc.extension
        self._ext_inputs = [v.name for v in ext.inputs] if ext else []
        for v in (ext.inputs if ext else []):
            self._register(v, Fmi2Causality.input)
        failed = self._start_sim(worker=False)     # exact start values of the outputs
        if failed is not None:
            self._fail(failed, rollback=False)
        # every output through the scenario's one reader (``Scenario.reader``); its start
        # value while there is no simulator
        self._getters = {}     # value reference -> getter, Real outputs
        for v in self.sc.outputs:
            getter = (lambda r=self.sc.reader(v.name), d=v.start:
                      d if self.sim is None else r(self.sim))
            vr = self._register(v, Fmi2Causality.output, getter)
            if v.type == "Real":
                self._getters[vr] = getter
        for v in (ext.outputs if ext else []):
            self._register(v, Fmi2Causality.output,
                           lambda n=v.name, d=v.start: self.ext.get(n) if self.ext else d)
        self._register(Var("status", 0, STATUS_DESCRIPTION, type="Integer"),
                       Fmi2Causality.output)
        for name, start, desc, unit in FORMULATION + RELIABILITY:
            kind = "String" if isinstance(start, str) else "Boolean" if isinstance(start, bool) \
                else "Integer" if isinstance(start, int) else "Real"
            lo, hi = COMMON_RANGES.get(name, (None, None))
            self._register(Var(name, start, desc, unit, type=kind, min=lo, max=hi,
                               choices=STRING_CHOICES.get(name, ())), Fmi2Causality.parameter)
        # which outputs may follow the inputs at an instant; the loader's route to
        # get_directional_derivative (fmu_src/runtime/derivatives.py)
        self.dependence = _dependence(self.scenario_name, self.scenario_options, self.sc)
        derivatives.install(self)

    def _formulation(self):
        """(formulation, its options) from the FMU parameters (their defaults before they are
        registered: the start values are computed first)."""
        opts = {name: getattr(self, name, start) for name, start, _, _ in FORMULATION[1:]}
        return str(getattr(self, "formulation", "embedding")), opts

    def to_xml(self, model_options=None):
        """modelDescription.xml; pythonfmu reads the start values through the getters, which
        FMI 2.0 allows only from initialization mode on, so it reads them as in that mode."""
        saved, self.fmi_state = self.fmi_state, State.INITIALIZATION_MODE
        try:
            root = super().to_xml(model_options or {})
        finally:
            self.fmi_state = saved
        names = {v.get("name") for v in root.iter("ScalarVariable")
                 if v.find("Enumeration") is not None}
        after = root.find("CoSimulation")     # then UnitDefinitions (describe.py), the types
        root.insert(list(root).index(after) + 1,
                    type_definitions(self.sc.mode_names(), names | {"status"}))
        if "mode" in names:
            add_integer_alias(root, "mode", MODE_NUMBER)
        derivatives.declare(root, self, self.dependence)
        return root

    def _register(self, v, causality, getter=None):
        """Register the interface variable ``v``; returns its value reference."""
        if causality != Fmi2Causality.output:
            setattr(self, v.name, v.start)
        var = _var(v, causality, getter)
        self.register_variable(var)
        self._specs[var.value_reference] = (v, causality)
        return var.value_reference

    # ------------------------------------------------------------ lifecycle
    @fmi2_call("setup_experiment")
    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        start_time = float(start_time)
        if not math.isfinite(start_time):
            raise CallError(f"startTime = {start_time!r} is not finite")
        if stop_time is not None and math.isfinite(stop_time) and stop_time < start_time:
            raise CallError(f"stopTime = {stop_time!r} lies before startTime = {start_time!r}")
        self.start_time = self.t_comm = start_time

    @fmi2_call("enter_initialization_mode")
    def enter_initialization_mode(self):
        self.fmi_state = State.INITIALIZATION_MODE

    @fmi2_call("exit_initialization_mode")
    def exit_initialization_mode(self):
        self.status = 0
        if self._rejected:
            raise CallError("initialization failed: values were refused for "
                            f"{'; '.join(self._rejected.values())}; set valid values (the "
                            "defaults are not used instead) and call fmi2ExitInitializationMode "
                            "again", code=INPUT_REJECTED)
        self._read_inputs()
        failed = self._start_sim()
        if failed is not None:
            fix = ("fix the model (embed-fmu check) and build the FMU again"
                   if _model_broken(failed) else "set valid parameters and call "
                   "fmi2ExitInitializationMode again")
            raise CallError(f"initialization failed: {_describe(failed)}; {fix}",
                            code=status_of(failed))
        try:
            self.sim.warm_up()
        except Exception as exc:  # noqa: BLE001 - warming is an optimization only
            self.log(f"warm-up skipped: {exc}", Fmi2Status.warning)
        bc = self.sim.compiler
        if bc is not None and not bc.wait_ready(WORKER_START_TIMEOUT):
            self.log(f"background embedding worker not ready after {WORKER_START_TIMEOUT} s;"
                     " stepping on the numeric path until it is", Fmi2Status.warning)
        self.t_comm = self.start_time
        self.fmi_state = State.STEP_COMPLETE
        # everything built so far (models, compiled modes) lives as long as the process: keep
        # it out of the cyclic collector, whose full passes over it paused steps for ms.  The
        # instances freed since the last freeze (their variables' getters make cycles) are
        # collected first, or each would stay frozen for good
        import gc
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    @fmi2_call("terminate")
    def terminate(self):
        self.fmi_state = State.TERMINATED
        self._close_client()

    def _close_client(self):
        """This instance leaves the background workers (they stop with their last client)."""
        if self.sim is not None and self.sim.compiler is not None:
            self.sim.compiler.close()

    def _start_sim(self, worker=True):
        """A simulator from the parameters, at the start time; ``worker``: start the
        background embedding worker if the embedding asks for it (not at build time, when
        pythonfmu only reads the start values).  Returns None if it started, else the
        exception that stopped it (``self.sim`` is then None)."""
        for name, pname in self.sc.input_defaults.items():   # "used when set"
            if name not in self._inputs_set:
                val = getattr(self, pname)
                setattr(self, name, val)
                self._good_inputs[name] = float(val)
        self._close_client()
        self.sim = None
        try:
            embedding = str(self.embedding)
            if embedding == "background" and not worker:
                embedding = "numeric"
            bc = (compiler(self.scenario_name, self.scenario_options, self._resource_dir())
                  if embedding == "background" else None)
            if bc is not None:     # an instance freed without fmi2Terminate leaves too
                weakref.finalize(self, bc.close)
                bc.real_time = bool(getattr(self, "real_time", False))
                bc.deadline = float(getattr(self, "worker_deadline", 20.0))
            params = {v.name: float(getattr(self, v.name)) for v in self.sc.parameters}
            formulation, options = self._formulation()
            sim = self.sc.simulator(params, solver=str(self.solver), h_max=float(self.h_max),
                                    rtol=float(self.rtol), inputs=dict(self._good_inputs),
                                    embedding=embedding, compiler=bc, t0=self.start_time,
                                    formulation=formulation, formulation_options=options)
            if not np.isfinite(sim.mon).all():
                bad = [name for name, x in self.sc.observe(sim).items()
                       if isinstance(x, float) and not math.isfinite(x)]
                raise EmbedError(f"the initial state is not finite (outputs {bad}); check the "
                                 "parameters' magnitudes")
            self.sim = sim
            if sim.start_log:
                self.log(sim.start_log, Fmi2Status.ok)
            if self.sc.extension is not None:
                self.ext = self.sc.extension(
                    self.sim, bc, lambda msg: self.log(msg, Fmi2Status.warning))
        except Exception as exc:   # noqa: BLE001 - never let an exception reach pythonfmu
            return exc
        return None

    @fmi2_call("do_step", default=lambda self, *a: True)
    def do_step(self, current_time, step_size):
        self._check_step(current_time, step_size)
        self.status = 0
        t0 = self.sim.t
        try:
            self._read_inputs()
            if self.ext is not None:
                self.ext.before_step({n: getattr(self, n) for n in self._ext_inputs})
            early = self.sim.advance(current_time + step_size,
                                     stop_at_event=self.loader.early_return_allowed)
            bc = self.sim.compiler
            while bc is not None and bc.errors:     # the stepping goes on without it
                what, message, _ = bc.errors.pop(0)
                self.log(f"background embedding of {what} failed: {message}",
                         Fmi2Status.warning)
            while bc is not None and bc.notes:      # not embedded: the numeric path serves
                what, message = bc.notes.pop(0)
                self.log(f"mode {what} stays on the numeric path: {message}", Fmi2Status.ok)
        except Exception as exc:   # noqa: BLE001
            self._fail(exc)
            self.fmi_state = State.STEP_FAILED
            self.loader.successful_until(t0)
            if _model_broken(exc):      # no retry gets past it: every later step refuses too
                self._broken = (self.status, _describe(exc))
                self.loader.report(ERROR)
            else:
                self.loader.report(DISCARD)
            return True
        self.t_comm = current_time + step_size
        if early:           # FMI 3.0: the step ends at the event it located (fmi3_loader.c)
            self.t_comm = self.sim.t
            self.loader.returned_early(self.sim.t)
        self.fmi_state = State.STEP_COMPLETE
        return True

    def _check_step(self, current_time, step_size):
        """fmi2DoStep's arguments (FMI 2.0, Sec 4.2.3): a positive finite step from the
        previous communication point (rounding of a master's running sum tolerated)."""
        if self._broken is not None:
            code, message = self._broken
            raise CallError(f"a step failed for good ({message}); no step can get past it: fix "
                            "the model and build the FMU again (fmi2Reset starts over)",
                            code=code)
        if not (math.isfinite(step_size) and step_size > 0):
            raise CallError(f"communicationStepSize = {step_size!r} must be positive and finite")
        t = self.t_comm
        if not (math.isfinite(current_time)
                and abs(current_time - t) <= 1e-9 * max(1.0, abs(t), step_size)):
            raise CallError(f"currentCommunicationPoint = {current_time!r} is not the end of the "
                            f"previous step, t = {t!r} (FMI 2.0 Sec 4.2.3: steps follow each "
                            "other; restore a saved FMU state to go back)")
        if self.solver == "rk4" and step_size / self.h_max > MAX_STEPS:
            raise CallError(f"communicationStepSize = {step_size!r} s would take "
                            f"{step_size / self.h_max:.3g} internal steps of h_max = "
                            f"{self.h_max} s (at most {MAX_STEPS:.3g}); use shorter "
                            "communication steps or a larger h_max")
        if self.sim is None:
            raise CallError("the instance did not initialize (see the log)")

    # ------------------------------------------------------------- helpers
    def _resource_dir(self):
        """This FMU's resources folder (holding embed/ and scenarios/), if it has one."""
        from urllib.parse import unquote, urlparse
        res = self.resources or ""
        path = unquote(urlparse(res).path) if res.startswith("file:") else res
        return path if path and os.path.isdir(os.path.join(path, "embed")) else None

    def _read_inputs(self):
        """Inputs the master changed (each was checked when set) go to the simulator, all or
        none: one the engine refuses is set back to its last good value."""
        if not self._inputs_changed:        # the per-step cost when nothing was set
            return
        self._inputs_changed = False
        good = self._good_inputs
        new = {name: float(getattr(self, name)) for name in self._input_names}
        if new == good:
            return
        if self.sim is not None:
            try:
                self.sim.set_inputs(new)
            except Exception:
                for name, value in good.items():
                    setattr(self, name, value)
                raise
        good.update(new)

    def call_failed(self, status, message, code=None):
        """A call refused or failed: log it with its category, make the call return
        ``status`` and report ``code`` (default: a refused call) in the ``status`` output."""
        self.status = REFUSED if code is None else code
        self.loader.report(status)
        self.log(message, Fmi2Status(status))

    def _fail(self, exc, rollback=True):
        """An engine (or internal) error: logged, ``status`` set, the last good state kept."""
        self.status = status_of(exc)
        t = self.sim.t if self.sim is not None else self.start_time
        self.log(f"{_describe(exc, t)}; the last good state is kept", Fmi2Status.error)
        if rollback and self.sim is not None:
            self.sim.rollback()

    # ------------------------------------------------------- get and set
    def _spec(self, vr, type_name):
        spec = self._specs.get(vr)
        if spec is None:
            raise CallError(f"unknown value reference {vr}")
        if spec[0].type != type_name:
            raise CallError(f"value reference {vr} ({spec[0].name}) is a {spec[0].type}, "
                            f"not a {type_name}")
        return spec

    def _get(self, vrs, type_name, convert):
        out = []
        for vr in vrs:
            v, causality = self._spec(vr, type_name)
            out.append(convert(self.vars[vr].getter()))
        return out

    @fmi2_call("get", default=lambda self, vrs: [0.0] * len(vrs))
    def get_real(self, vrs):
        """Real values; outputs through their fast getters (the hot path at 1 kHz)."""
        g = self._getters
        if self._inputs_changed and self.sim is not None:    # direct feedthrough
            self._read_inputs()
            derivatives.refresh_outputs(self.sim)
        try:
            return [float(g[vr]()) for vr in vrs]
        except (KeyError, TypeError):
            return self._get(vrs, "Real", float)

    @fmi2_call("get", default=lambda self, vrs: [0] * len(vrs))
    def get_integer(self, vrs):
        return self._get(vrs, "Integer", int)

    @fmi2_call("get", default=lambda self, vrs: [False] * len(vrs))
    def get_boolean(self, vrs):
        return self._get(vrs, "Boolean", bool)

    @fmi2_call("get", default=lambda self, vrs: [""] * len(vrs))
    def get_string(self, vrs):
        return self._get(vrs, "String", str)

    def _set(self, vrs, values, type_name):
        """Check every value first (causality, state, range); then apply them all."""
        if len(vrs) != len(values):
            raise CallError(f"{len(vrs)} value references but {len(values)} values")
        checked = []
        for vr, value in zip(vrs, values):
            v = self._settable(vr, type_name)
            try:
                checked.append((v, self._check_value(vr, value)))
            except CallError as exc:     # a parameter refused: initialization will fail
                if self._specs[vr][1] == Fmi2Causality.parameter:
                    self._rejected[v.name] = str(exc).split("; the previous value")[0]
                raise
        for v, value in checked:
            self._rejected.pop(v.name, None)
            setattr(self, v.name, value)
            if v.name in self.sc.input_defaults:
                self._inputs_set.add(v.name)
            self._inputs_changed |= v.name in self._good_inputs

    def _settable(self, vr, type_name):
        v, causality = self._spec(vr, type_name)
        if causality == Fmi2Causality.output:
            raise CallError(f"{v.name} is an output; it cannot be set")
        if causality == Fmi2Causality.parameter and self.fmi_state not in (
                State.INSTANTIATED, State.INITIALIZATION_MODE):
            raise CallError(f"{v.name} is a fixed parameter: set it before "
                            "fmi2ExitInitializationMode (or fmi2Reset first)")
        return v

    def _check_value(self, vr, value):
        """A value from outside, checked by its variable (``Var.problem``); returns it
        converted."""
        v, causality = self._specs[vr]
        problem = v.problem(value)
        if problem:
            raise CallError(f"{problem}; the previous value {getattr(self, v.name)!r} is kept",
                            code=INPUT_REJECTED)
        return v.convert(value)

    @fmi2_call("set_real")
    def set_real(self, vrs, values):
        self._set(vrs, values, "Real")

    @fmi2_call("set_other")
    def set_integer(self, vrs, values):
        self._set(vrs, values, "Integer")

    @fmi2_call("set_other")
    def set_boolean(self, vrs, values):
        self._set(vrs, values, "Boolean")

    @fmi2_call("set_other")
    def set_string(self, vrs, values):
        self._set(vrs, values, "String")

    @fmi2_call("get", default=lambda self, unknowns, knowns, seed: [0.0] * len(unknowns))
    def get_directional_derivative(self, unknowns, knowns, seed):
        """fmi2GetDirectionalDerivative: the Real outputs' derivatives along ``seed`` of the Real
        inputs ``knowns``, in the current mode (``derivatives.directional_derivative``)."""
        return derivatives.directional_derivative(self, unknowns, knowns, seed)

    # ---------------------------------------------------------------- state
    @fmi2_call("state", default=lambda self: {"invalid": "the state could not be taken"})
    def _get_fmu_state(self):
        return fmu_state.snapshot(self)

    @fmi2_call("state")
    def _set_fmu_state(self, state):
        """Restore a state taken by fmi2GetFMUstate or deserialized: checked whole first
        (its FMU, its layout, every variable's value); on any failure nothing is changed."""
        fmu_state.check(self, state)
        saved = fmu_state.snapshot(self)
        try:
            fmu_state.apply(self, state)
        except Exception as exc:  # noqa: BLE001 - back to where we were, then refuse
            fmu_state.apply(self, saved)
            raise CallError(f"the FMU state could not be restored ({type(exc).__name__}: "
                            f"{exc}); the instance is unchanged") from exc
        self.loader.successful_until(self.t_comm)   # the restored time (and FMI 3.0's time)

    @classmethod
    def _fmu_state_to_bytes(cls, state):
        try:
            return fmu_state.to_bytes(state)
        except Exception as exc:  # noqa: BLE001
            cls._refuse_class_call(f"the FMU state could not be serialized: {exc}")
            return b"{}"

    @classmethod
    def _fmu_state_from_bytes(cls, data):
        """A serialized state, parsed; anything that is not one becomes a state that
        fmi2SetFMUstate refuses (fmi2DeSerializeFMUstate itself answers fmi2Error)."""
        try:
            return fmu_state.from_bytes(data)
        except Exception as exc:  # noqa: BLE001
            reason = f"the serialized FMU state is corrupted ({type(exc).__name__}: {exc})"
            cls._refuse_class_call(reason)
            return {"invalid": reason}

    @classmethod
    def _refuse_class_call(cls, message):
        refuse_running_call(ERROR, message)


_DEPENDENCE = {}   # (name, options) -> output_dependence, once per process


def _dependence(name, options, sc):
    key = (name, tuple(sorted(options.items())))
    if key not in _DEPENDENCE:
        _DEPENDENCE[key] = derivatives.output_dependence(sc)
    return _DEPENDENCE[key]


def _model_broken(exc):
    """Whether ``exc`` says the model itself is wrong (or the engine is): no retry of the step
    can succeed, so the call is fmi2Error and the instance steps no more."""
    return isinstance(exc, ModelDefinitionError) or not isinstance(exc, EmbedError)


def _describe(exc, t=None):
    """The error's class (engine errors) or "internal error", where, and its message."""
    kind = type(exc).__name__ if isinstance(exc, EmbedError) else \
        f"internal error ({type(exc).__name__})"
    return f"{kind}{'' if t is None else f' at t = {t:.9g} s'}: {exc}"
