"""On-line symbolic constraint embedding for hybrid multibody systems (gillespie2005 Design IV).

Data flow (docs/design.md): model -> constraints -> embedding -> compile -> integrators +
events -> automaton/simulator.  Nothing here knows about FMI.
"""

from .model.automaton import Automaton, Guard, Jump, Mode, Output
from .model.context import Context
from .model.constraints import Constraint, ConstraintSet, holonomic, motion
from .embedding.embedding import embed
from .embedding.partition import partition
from .embedding.equations import ModeEquations
from .base.errors import (CompilationError, ConstraintRankError, EmbedError, EventLocationError,
                     ImpactError, InputError, IntegrationError, ModelDefinitionError,
                     StateError, StepBudgetError, ZenoError)
from .modes.formulations import Formulation
from .model.joints import QuaternionJoint
from .modes.library import ModeLibrary
from .model.model import Model
from .interface.feasibility import Feasible
from .interface.scenario import Scenario, Start, Var, engine_outputs
from .hybrid.simulator import Simulator
from .interface.visuals import Arrow, Box, Curve, Cylinder, Segment, Sphere, Visuals

__all__ = [
    "Automaton", "Guard", "Jump", "Mode", "Output", "Context", "Constraint", "ConstraintSet",
    "holonomic", "motion", "ModeEquations", "embed", "partition", "EmbedError",
    "CompilationError", "ConstraintRankError", "EventLocationError", "ImpactError", "InputError",
    "IntegrationError", "ModelDefinitionError", "StateError", "StepBudgetError", "ZenoError",
    "Model", "Feasible", "Scenario", "Start", "Var", "engine_outputs", "Simulator",
    "ModeLibrary", "Formulation", "QuaternionJoint", "Visuals", "Segment", "Sphere", "Box",
    "Cylinder", "Curve", "Arrow",
]
