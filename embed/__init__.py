"""On-line symbolic constraint embedding for hybrid multibody systems (gillespie2005 Design IV).

Data flow (docs/design.md): model -> constraints -> embedding -> compile -> integrators +
events -> automaton/simulator.  Nothing here knows about FMI.

The public names are imported when first used (PEP 562 ``__getattr__``): importing one
sub-module (``embed.base.shipped``, the FMU's runtime) does not import the symbolic layers
(sympy, symengine) with every other one (issue 30).
"""

from importlib import import_module

_EXPORTS = {
    ".model.automaton": ("Automaton", "Guard", "Jump", "Mode", "Output"),
    ".model.context": ("Context",),
    ".model.constraints": ("Constraint", "ConstraintSet", "holonomic", "motion"),
    ".embedding.embedding": ("embed",),
    ".embedding.partition": ("partition",),
    ".embedding.equations": ("ModeEquations",),
    ".base.errors": ("CompilationError", "ConstraintRankError", "EmbedError",
                     "EventLocationError", "ImpactError", "InputError", "IntegrationError",
                     "ModelDefinitionError", "StateError", "StepBudgetError", "ZenoError"),
    ".modes.formulations": ("Formulation",),
    ".model.joints": ("QuaternionJoint",),
    ".modes.library": ("ModeLibrary",),
    ".model.model": ("Model",),
    ".interface.feasibility": ("Feasible",),
    ".interface.scenario": ("Scenario", "Start", "Var", "engine_outputs"),
    ".hybrid.simulator": ("Simulator",),
    ".interface.visuals": ("Arrow", "Box", "Curve", "Cylinder", "Segment", "Sphere", "Visuals"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "Automaton", "Guard", "Jump", "Mode", "Output", "Context", "Constraint", "ConstraintSet",
    "holonomic", "motion", "ModeEquations", "embed", "partition", "EmbedError",
    "CompilationError", "ConstraintRankError", "EventLocationError", "ImpactError", "InputError",
    "IntegrationError", "ModelDefinitionError", "StateError", "StepBudgetError", "ZenoError",
    "Model", "Feasible", "Scenario", "Start", "Var", "engine_outputs", "Simulator",
    "ModeLibrary", "Formulation", "QuaternionJoint", "Visuals", "Segment", "Sphere", "Box",
    "Cylinder", "Curve", "Arrow",
]


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value          # once: later look-ups do not come here
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
