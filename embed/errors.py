"""One error tree for the engine (DESIGN.md, Conventions).

Every message says what was wrong, names the offending item, and what to do.
The FMU boundary translates these into FMI log messages and a status output.
"""


class EmbedError(Exception):
    """Root of all engine errors. ``status`` is the FMU status code it maps to."""

    status = 1


class ModelDefinitionError(EmbedError):
    """The model (coordinates, speeds, loads, force symbols) is ill-formed."""

    status = 2


class ConstraintRankError(EmbedError):
    """An active constraint set is redundant or inconsistent (B loses rank)."""

    status = 3


class CompilationError(EmbedError):
    """A symbolic expression could not be compiled to a numeric function."""

    status = 4


class IntegrationError(EmbedError):
    """The integrator produced a non-finite state or could not meet its tolerance."""

    status = 5


class StepBudgetError(IntegrationError):
    """One advance would take (or took) more internal steps than its budget (h_max too small
    for the communication step, or an adaptive step that collapsed); the state is kept."""

    status = 5


class EventLocationError(EmbedError):
    """A switching condition could not be located inside a step."""

    status = 6


class ZenoError(EmbedError):
    """Too many events at one instant (Zeno behaviour) and no persistent mode to switch to."""

    status = 7


class ImpactError(EmbedError):
    """An impact could not be resolved."""

    status = 8


class InputError(EmbedError):
    """A parameter or input value from outside is invalid (NaN, wrong sign, unknown name)."""

    status = 9


class StateError(InputError):
    """A state handed to Simulator.set_state is incomplete, of another model or corrupt;
    nothing of it is applied."""

    status = 9
