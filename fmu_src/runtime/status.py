"""The ``status`` output's codes: one table, keyed by the engine's error classes.

``status`` reports the last doStep, initialization or refused call.  The README's table
is checked against this one by tests/test_fmi2_conformance.py.
"""

from __future__ import annotations

from embed.base.errors import (CompilationError, ConstraintRankError, EventLocationError,
                          ImpactError, InputError, IntegrationError, ModelDefinitionError,
                          ZenoError)

OK = 0
INTERNAL = 1
INPUT_REJECTED = 9
REFUSED = 10

BY_ERROR = {            # engine error class -> status code
    ModelDefinitionError: 2,
    ConstraintRankError: 3,
    CompilationError: 4,
    IntegrationError: 5,
    EventLocationError: 6,
    ZenoError: 7,
    ImpactError: 8,
    InputError: INPUT_REJECTED,
}

STATUS = {
    OK: "ok",
    INTERNAL: "internal error (see the FMI log); no step gets past it",
    2: "model definition error (the FMI log names the mode and guard; `check` finds these "
       "before a build); no step gets past it",
    3: "active constraints redundant or inconsistent",
    4: "compilation of a mode failed",
    5: "integration failed (non-finite state, step budget exceeded, configuration off the "
       "constraint manifold)",
    6: "a switching condition could not be located",
    7: "Zeno behaviour with no persistent mode to switch to",
    8: "impact could not be resolved",
    INPUT_REJECTED: "an input or parameter value was rejected (not finite, out of range, "
                    "unknown option); the previous value is kept",
    REFUSED: "an FMI call was refused (illegal in this state, or a bad argument); nothing of "
             "it was applied",
}


def status_of(exc):
    """The status code of an exception: its engine error class's, else internal error."""
    for cls in type(exc).__mro__:
        if cls in BY_ERROR:
            return BY_ERROR[cls]
    return INTERNAL
