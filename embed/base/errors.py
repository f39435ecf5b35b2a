"""One error tree for the engine (docs/design.md, Conventions).

Every message says what was wrong, names the offending item, and what to do.
The FMU boundary translates these into FMI log messages, an FMI status and a
status output code (fmu_src/runtime/status.py): the engine knows nothing of either.
"""


class EmbedError(Exception):
    """Root of all engine errors."""


class ModelDefinitionError(EmbedError):
    """The model (coordinates, speeds, loads, force symbols) is ill-formed."""


class ConstraintRankError(EmbedError):
    """An active constraint set is redundant or inconsistent (B loses rank)."""


class CompilationError(EmbedError):
    """A symbolic expression could not be compiled to a numeric function."""


class SymbolicBudgetError(CompilationError):
    """A mode's symbolic embedding outgrew its size budget (a closed spatial loop's D and E,
    say): the mode runs on the numeric path instead (``embed.modes.mode_compiler``)."""


class IntegrationError(EmbedError):
    """The integrator produced a non-finite state or could not meet its tolerance."""


class StepBudgetError(IntegrationError):
    """One advance would take (or took) more internal steps than its budget (h_max too small
    for the communication step, or an adaptive step that collapsed); the state is kept."""


class EventLocationError(EmbedError):
    """A switching condition could not be located inside a step."""


class ZenoError(EmbedError):
    """Too many events at one instant (Zeno behaviour) and no persistent mode to switch to."""


class ImpactError(EmbedError):
    """An impact could not be resolved."""


class InputError(EmbedError):
    """A parameter or input value from outside is invalid (NaN, wrong sign, unknown name)."""


class StateError(InputError):
    """A state handed to Simulator.set_state is incomplete, of another model or corrupt;
    nothing of it is applied."""


# the codes of an ExpressionError (``embed.base.whitelist`` names them too; a user may map them
# to its own status output); here so that a module reads them without sympy
SYNTAX = 1          # empty, bad characters, too long/deep/large, does not parse
NOT_ALLOWED = 2     # a name, function, operator, construct, literal or exponent outside the
#                     whitelist
NOT_FINITE = 3      # a constant (sub)expression that is not a finite real number


class ExpressionError(InputError):
    """A text from outside is rejected (``embed.base.whitelist``, here so that a class derived
    from it loads without sympy: disk_fence's ``GeometryError`` in a scenario image): ``code``
    (SYNTAX, NOT_ALLOWED or NOT_FINITE) says why, ``check`` names the failed check, ``value``
    the offending token, name or number."""

    def __init__(self, message, *, code, check, value=None):
        super().__init__(message)
        self.code, self.check, self.value = code, check, value
