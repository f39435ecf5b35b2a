"""The FMU's own variables and the slave's table of every variable by value reference.

Beside a scenario's parameters, inputs and outputs, every FMU has the run's options
(``COMMON``), the formulation and its options (``FORMULATION``) and the run's promises
(``RELIABILITY``), named in ``embed.base.reserved``.  ``Variables`` is what the slave knows of
them between FMI calls: each value reference's interface ``Var`` and causality, the refused
parameter values, and the inputs' bookkeeping (the last values the engine took, which the
master set, whether one changed since); ``get_values`` and ``set_values`` are fmi2Get/Set
(FMI 2.0 Sec 2.1.7): every value checked by its ``Var`` before any is applied.
"""

from __future__ import annotations

from pythonfmu import Boolean, Fmi2Causality, Fmi2Initial, Fmi2Variability, Integer, Real, String

from embed.hybrid.simulator import EMBEDDINGS
from embed.modes.formulations import FORMULATIONS, Formulation
from fmu_src.runtime.fmi2 import CallError, State
from fmu_src.runtime.status import ENUMERATIONS, INPUT_REJECTED, as_enumeration

__all__ = ["COMMON", "COMMON_RANGES", "FORMULATION", "RELIABILITY", "STRING_CHOICES",
           "Variables", "fmi_variable", "get_values", "set_values"]

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



class Variables:
    """The slave's variables by value reference, and its inputs' bookkeeping."""

    def __init__(self):
        self.specs = {}            # value reference -> (Var, causality)
        self.rejected = {}         # parameter -> why its last value was refused
        self.inputs_set = set()    # inputs the master has set (see Scenario.input_defaults)
        self.input_names = []      # the scenario's inputs, in order
        self.good_inputs = {}      # input -> the last value the engine took
        self.inputs_changed = False   # an input was set since the simulator last took them
        self.getters = {}          # value reference -> getter, Real outputs (the hot path)

    def spec(self, vr, type_name=None):
        """(Var, causality) of value reference ``vr``; CallError if there is none or it is not
        of ``type_name``."""
        spec = self.specs.get(vr)
        if spec is None:
            raise CallError(f"unknown value reference {vr}")
        if type_name is not None and spec[0].type != type_name:
            raise CallError(f"value reference {vr} ({spec[0].name}) is a {spec[0].type}, "
                            f"not a {type_name}")
        return spec

    def check_value(self, vr, value, current):
        """A value from outside, checked by its variable (``Var.problem``); returns it
        converted.  CallError keeping ``current`` otherwise."""
        v, _ = self.specs[vr]
        problem = v.problem(value)
        if problem:
            raise CallError(f"{problem}; the previous value {current!r} is kept",
                            code=INPUT_REJECTED)
        return v.convert(value)


def get_values(slave, vrs, type_name, convert):
    """fmi2Get*: the values of ``vrs``, each through its variable's getter."""
    table = slave.variables
    out = []
    for vr in vrs:
        table.spec(vr, type_name)
        out.append(convert(slave.vars[vr].getter()))
    return out


def set_values(slave, vrs, values, type_name):
    """fmi2Set*: check every value first (causality, state, range); then apply them all."""
    table = slave.variables
    if len(vrs) != len(values):
        raise CallError(f"{len(vrs)} value references but {len(values)} values")
    checked = []
    for vr, value in zip(vrs, values):
        v = _settable(slave, vr, type_name)
        try:
            checked.append((v, table.check_value(vr, value, getattr(slave, v.name))))
        except CallError as exc:     # a parameter refused: initialization will fail
            if table.specs[vr][1] == Fmi2Causality.parameter:
                table.rejected[v.name] = str(exc).split("; the previous value")[0]
            raise
    for v, value in checked:
        table.rejected.pop(v.name, None)
        setattr(slave, v.name, value)
        if v.name in slave.sc.input_defaults:
            table.inputs_set.add(v.name)
        table.inputs_changed |= v.name in table.good_inputs


def _settable(slave, vr, type_name):
    v, causality = slave.variables.spec(vr, type_name)
    if causality == Fmi2Causality.output:
        raise CallError(f"{v.name} is an output; it cannot be set")
    if causality == Fmi2Causality.parameter and slave.fmi_state not in (
            State.INSTANTIATED, State.INITIALIZATION_MODE):
        raise CallError(f"{v.name} is a fixed parameter: set it before "
                        "fmi2ExitInitializationMode (or fmi2Reset first)")
    return v


def fmi_variable(v, causality, getter=None, setter=None):
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
        # its unit (UnitDefinitions: fmu_src/builder/describe.py) and declared range in modelDescription.xml
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
