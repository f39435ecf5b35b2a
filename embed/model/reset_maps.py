"""A reset map called and its jump checked as it happens (gillespie2005 Sec 4, eq 19-20).

``reset_map`` is what the simulator calls instead of a scenario's ``transition``, ``zeno`` or
``initial``: the same call, with its ``Jump`` validated (``jump_problem``), so that a reset
map with no branch for a guard or a jump to nowhere is a ``ModelDefinitionError`` naming mode
and guard, never an AssertionError or a bare KeyError from deep inside the engine.  The model
checker (``embed.check``) probes the reset maps through the same call.
"""

from __future__ import annotations

from ..base.errors import EmbedError, ModelDefinitionError
from .automaton import Jump, impact_problem
from .context import Context


def _where(aut, ctx, kind, guard):
    if kind == "initial":
        return "the initial reset map (eq 20)"
    mode = aut.modes.get(ctx.mode)
    name = f" {mode.name!r}" if mode is not None else ""
    return f"the {kind} reset map of mode {ctx.mode}{name}, guard {guard!r}"


def jump_problem(aut, jump) -> str | None:
    """What keeps the automaton ``aut`` from applying ``jump`` (a reset map's result), or None.

    Parameters
    ----------
    aut : Automaton
        The automaton (a simulator's own view: modes added at run time count).
    jump : object
        What a reset map returned.

    Returns
    -------
    str or None
        The problem, worded to follow the name of the reset map.
    """
    if not isinstance(jump, Jump):
        return f"returned {jump!r}, not a Jump; return Jump(mode, {{discrete: value}}, ...)"
    if jump.mode not in aut.modes:
        return f"jumps to mode {jump.mode!r}, which does not exist; modes: {sorted(aut.modes)}"
    unknown = [k for k in jump.discrete if k not in aut.discrete]
    if unknown:
        return (f"sets discrete variables {unknown} that the automaton does not declare; "
                f"declared: {sorted(aut.discrete)}: declare them in Automaton(discrete=...) or "
                "correct the names")
    if jump.constraints is not None:
        unknown = [c for c in jump.constraints if c not in aut.constraints]
        if unknown:
            return (f"activates constraints {unknown}, which do not exist; known: "
                    f"{sorted(aut.constraints)}")
    if jump.impact_constraints is not None:
        return impact_problem(aut, jump)
    return None


def reset_map(aut, kind: str, ctx: Context, guard: str | None = None) -> Jump:
    """Call the automaton's reset map ``kind`` ("transition", "zeno": (ctx, guard); "initial":
    (ctx)) and check its jump (``jump_problem``).

    Parameters
    ----------
    aut : Automaton
    kind : str
    ctx : Context
        The state at the event.
    guard : str or None
        The switching condition that fired (None for "initial").

    Returns
    -------
    Jump

    Raises
    ------
    ModelDefinitionError
        The reset map raised something other than an engine error (an AssertionError for a
        guard it has no branch for, a KeyError, ...) or returned a jump the automaton cannot
        apply; the message names mode and guard.
    EmbedError
        The reset map's own engine error (an impact it cannot resolve, say), as raised.
    """
    try:
        jump = aut.initial(ctx) if kind == "initial" else getattr(aut, kind)(ctx, guard)
    except ModelDefinitionError as exc:
        if guard is not None and repr(guard) in str(exc):
            raise             # it names its guard already (a guard without a reset map)
        raise ModelDefinitionError(f"{_where(aut, ctx, kind, guard)}: {exc}") from exc
    except EmbedError:
        raise
    except Exception as exc:  # noqa: BLE001 - a scenario's bug, named with its mode and guard
        raise ModelDefinitionError(
            f"{_where(aut, ctx, kind, guard)} raised {type(exc).__name__}: {exc}; give it a "
            "branch for every guard of every mode (and read only declared discrete variables "
            "and parameters)") from exc
    if isinstance(jump, (list, tuple)) and jump:     # several jumps at one instant, in order
        problems = [jump_problem(aut, j) for j in jump]
        problem = next((f"(jump {i + 1} of {len(jump)}) {p}" for i, p in enumerate(problems)
                        if p is not None), None)
    else:
        problem = jump_problem(aut, jump)
    if problem is not None:
        raise ModelDefinitionError(f"{_where(aut, ctx, kind, guard)} {problem}")
    return jump
