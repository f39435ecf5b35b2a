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

from pythonfmu import Fmi2Causality, Fmi2Slave
from pythonfmu.enums import Fmi2Status

from embed import ModelDefinitionError
from embed.hybrid.simulator import MAX_STEPS
from embed.modes.library import ModeLibrary
from fmu_src.runtime import arrays, derivatives, fast_step, fmu_state, simulation
from fmu_src.runtime.fmi2 import (DISCARD, ERROR, CallError, Loader, State, check_step,
                                  fmi2_call, refuse_running_call)
from fmu_src.runtime.gc_pause import collect_now_and_then, gc_paused
from fmu_src.runtime.instances import dependence, forget_repeated_path, scenario
from fmu_src.runtime.status import (MODE_NUMBER, REFUSED, STATUS, STATUS_DESCRIPTION,
                                    add_integer_alias, describe, model_broken, status_of,
                                    type_definitions)
from fmu_src.runtime.variables import (COMMON, COMMON_RANGES, FORMULATION, RELIABILITY,
                                       STRING_CHOICES, Variables, fmi_variable, get_values,
                                       set_values)

__all__ = ["ScenarioSlave", "STATUS"]


class ScenarioSlave(Fmi2Slave):
    """Base class; a built FMU's script subclasses it and sets ``scenario_name``."""

    scenario_name = None
    scenario_options = {}
    author = "embed project"
    description = "On-line symbolic constraint embedding for a hybrid multibody system"

    def __init__(self, **kwargs):
        collect_now_and_then()
        with gc_paused():       # (its collections were 10-30 ms of a start; frozen after)
            self._instantiate(**kwargs)

    def _instantiate(self, **kwargs):
        super().__init__(**kwargs)
        forget_repeated_path(self.resources)
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
        self.lock = ModeLibrary.lock_of(self.sc.automaton)   # FMI calls take turns (fmi2_call)
        self.sim = None
        self.workers_later = None   # [client, first]: ``simulation.start_workers_later``
        self.status = 0
        self.broken = None        # (status code, message) of a failure no step can get past
        self.variables = Variables()   # every variable by value reference, the inputs' book
        for name, start, desc, unit in COMMON:
            start = self.sc.embedding if name == "embedding" else start
            lo, hi = COMMON_RANGES.get(name, (None, None))
            self._register(Var(name, start, desc, unit, type="String" if isinstance(start, str)
                               else "Real", min=lo, max=hi, choices=STRING_CHOICES.get(name, ())),
                           Fmi2Causality.parameter)
        for v in self.sc.parameters:
            self._register(v, Fmi2Causality.parameter)
        for v in self.sc.inputs:
            self._register(v, Fmi2Causality.input)
        self.variables.input_names = [v.name for v in self.sc.inputs]
        self.variables.good_inputs = {v.name: float(v.start) for v in self.sc.inputs}
        self.ext, ext = None, self.sc.extension
        self.ext_inputs = [v.name for v in ext.inputs] if ext else []
        for v in (ext.inputs if ext else []):
            self._register(v, Fmi2Causality.input)
        failed = simulation.start_sim(self, worker=False)     # exact start values of the outputs
        if failed is not None:
            self._fail(failed, rollback=False)
        # every output through the scenario's one reader (``Scenario.reader``); its start
        # value while there is no simulator
        for v in self.sc.outputs:
            getter = (lambda r=self.sc.reader(v.name), d=v.start:
                      d if self.sim is None else r(self.sim))
            vr = self._register(v, Fmi2Causality.output, getter)
            if v.type == "Real":
                self.variables.getters[vr] = getter
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
        # which outputs may follow the inputs at an instant; the loader's routes to the
        # directional derivatives (derivatives.py) and FMI 3.0's arrays and dependencies
        self.dependence = dependence(self.scenario_name, self.scenario_options, self.sc)
        derivatives.install(self)
        arrays.install(self)
        self.fast = fast_step.install(self)   # steps with no event run in the C loader

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
        """Register the interface variable ``v``; returns its value reference.  A parameter or
        input lives as an attribute of the slave: ModelDefinitionError (the build stops with
        it) where its name would hide one of the slave's own (``log``, ``sim``, ...)."""
        if causality != Fmi2Causality.output:
            if hasattr(self, v.name):
                raise ModelDefinitionError(
                    f"the {causality.name} {v.name!r} would hide the FMU slave's own attribute "
                    f"of that name ({type(getattr(self, v.name)).__name__}); rename it")
            setattr(self, v.name, v.start)
        var = fmi_variable(v, causality, getter)
        self.register_variable(var)
        self.variables.specs[var.value_reference] = (v, causality)
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
        with gc_paused():
            simulation.initialize(self)
        self.t_comm = self.start_time
        self.fmi_state = State.STEP_COMPLETE

    @fmi2_call("terminate")
    def terminate(self):
        self.fmi_state = State.TERMINATED
        self.close_client()

    def close_client(self):
        """This instance leaves the background workers (they stop with their last client)."""
        if self.sim is not None and self.sim.compiler is not None:
            self.sim.compiler.close()

    @fmi2_call("do_step", default=lambda self, *a: True)
    def do_step(self, current_time, step_size):
        check_step(self, current_time, step_size, MAX_STEPS)
        if self.workers_later is not None:
            simulation.start_workers_later(self)
        self.status = 0
        t0 = self.sim.t
        try:
            self.read_inputs()
            if self.ext is not None:
                self.ext.before_step(simulation.extension_inputs(self))
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
            if model_broken(exc):      # no retry gets past it: every later step refuses too
                self.broken = (self.status, describe(exc))
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

    # ------------------------------------------------------------- helpers
    def read_inputs(self):
        """The inputs the master changed to the simulator (``simulation.read_inputs``)."""
        simulation.read_inputs(self)

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
        self.log(f"{describe(exc, t)}; the last good state is kept", Fmi2Status.error)
        if rollback and self.sim is not None:
            self.sim.rollback()

    # ------------------------------------------------------- get and set
    @fmi2_call("get", default=lambda self, vrs: [0.0] * len(vrs))
    def get_real(self, vrs):
        """Real values; outputs through their fast getters (the hot path at 1 kHz)."""
        g = self.variables.getters
        if self.variables.inputs_changed and self.sim is not None:    # direct feedthrough
            self.read_inputs()
            derivatives.refresh_outputs(self.sim)
        try:
            return [float(g[vr]()) for vr in vrs]
        except (KeyError, TypeError):
            return get_values(self, vrs, "Real", float)

    @fmi2_call("get", default=lambda self, vrs: [0] * len(vrs))
    def get_integer(self, vrs):
        return get_values(self, vrs, "Integer", int)

    @fmi2_call("get", default=lambda self, vrs: [False] * len(vrs))
    def get_boolean(self, vrs):
        return get_values(self, vrs, "Boolean", bool)

    @fmi2_call("get", default=lambda self, vrs: [""] * len(vrs))
    def get_string(self, vrs):
        return get_values(self, vrs, "String", str)

    @fmi2_call("set_real")
    def set_real(self, vrs, values):
        set_values(self, vrs, values, "Real")

    @fmi2_call("set_other")
    def set_integer(self, vrs, values):
        set_values(self, vrs, values, "Integer")

    @fmi2_call("set_other")
    def set_boolean(self, vrs, values):
        set_values(self, vrs, values, "Boolean")

    @fmi2_call("set_other")
    def set_string(self, vrs, values):
        set_values(self, vrs, values, "String")

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
        """Restore a state taken by fmi2GetFMUstate or deserialized, all or nothing
        (``fmu_state.restore``)."""
        fmu_state.restore(self, state)
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
