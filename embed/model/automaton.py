"""Hybrid automaton (gillespie2005 Sec 4): modes, switching conditions, reset maps.

A ``Mode`` names its active constraints (the constraint set embedded while it
is visited, eq 17), the constitutive laws of the contact forces that are not
constraint forces in it, and its switching conditions f_{j,i}^{(k)} (eq 18).
A reset map phi_{j,i}^{(k)} (eq 19) returns a ``Jump`` to the next mode from the
located event: either attached to the ``Guard`` that triggers it (``reset``), or
one ``transition(ctx, guard_name)`` for the whole automaton; ``initial`` is the
special reset map of eq 20.  An ``Output`` is declared once and serves both the
compiled modes and the FMU interface (``embed.interface.scenario``).  See docs/design.md,
"Data flow", and docs/guide.md.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from ..base.errors import ModelDefinitionError
from ..base.record import Record

# simulator attributes an output may report (``Output`` with no expression)
SIM_ATTRIBUTES = ("mode", "event_count", "last_event_time", "impact_count", "start_correction")


class Guard(Record):
    """Switching condition f(x) = 0 (eq 18), watched in one direction.

    Parameters
    ----------
    name : str
        Names the condition in events, in ``transition(ctx, name)`` and in messages.
    expr : sympy expression
        f, in coordinates, speeds, forces (declared ones or ``lambda_<constraint>``),
        parameters, inputs and discrete variables.
    direction : int
        -1: fires when f falls from > 0 to <= 0; +1: when it rises from < 0 to >= 0.
    enabled : callable, optional
        ``enabled(discrete) -> bool``: whether f is watched for these discrete values.
    reset : callable, optional
        The reset map of this condition (eq 19), ``reset(ctx) -> Jump``, ``ctx`` an
        ``embed.model.context.Context`` at the located event.  When every guard has one the
        automaton needs no ``transition``.
    """

    FIELDS = ("name", "expr", "direction", "enabled", "reset")
    FROZEN = True

    def __init__(self, name: str, expr, direction: int = -1,
                 enabled: Optional[Callable[[dict], bool]] = None,
                 reset: Optional[Callable[..., "Jump"]] = None):
        self.__dict__.update(name=name, expr=expr, direction=direction, enabled=enabled,
                             reset=reset)


class Mode(Record):
    """A discrete state of the automaton: its active constraints, laws and switching conditions.

    Parameters
    ----------
    id : int, optional
        The mode's number (``Jump.mode``); in ``Automaton(modes={id: Mode(...)})`` the
        dict key gives it when omitted.
    name : str
        Shown in messages and in the generated description of the ``mode`` output
        (default: "mode <id>").
    constraints : tuple of str
        Names of the constraints embedded while the mode is visited (eq 17).
    laws : tuple of (force symbol, expression)
        Constitutive laws of the declared forces that are no constraint forces here.
    guards : tuple of Guard
        Switching conditions watched in this mode (eq 18).
    outputs : tuple of (output name, expression)
        This mode's own value of an output.
    report : int, optional
        The mode number shown outside (default: id).
    """

    FIELDS = ("id", "name", "constraints", "laws", "guards", "outputs", "report")
    FROZEN = True

    def __init__(self, id: Optional[int] = None, name: str = "", constraints: tuple = (),
                 laws: tuple = (), guards: tuple = (), outputs: tuple = (),
                 report: Optional[int] = None):
        if not name and id is not None:
            name = f"mode {id}"
        given = dict(constraints=constraints, laws=laws, guards=guards, outputs=outputs)
        for attr, value in given.items():
            if isinstance(value, (str, Guard)):
                raise ModelDefinitionError(
                    f"mode {name!r}: {attr} must be a tuple, not one {attr[:-1]} "
                    f"(write {attr}=({value!r},))")
            given[attr] = tuple(value)
        self.__dict__.update(id=id, name=name, **given, report=report)


class Jump(Record):
    """Result of a reset map: the next mode, discrete-variable updates, optional new q, u.

    Parameters
    ----------
    mode : int
        The mode entered.
    discrete : dict
        Discrete variables set by the jump (the others keep their values).
    q, u : array, optional
        New coordinates and speeds (an impact's u+); default: unchanged.
    constraints : tuple of str, optional
        Active constraint names, if not the mode's own.
    impact : bool
        An impact (counted in ``impact_count``, watched for accumulation, wang2019).
    impact_constraints : tuple of str, optional
        The impact's own constraint set, apart from the entered mode's: the speeds after the
        event are the plastic impact map over these constraints (wang2019 eq 19, mueller
        eq 7: M (u+ - u-) = B^T Lambda, B u+ + C = 0), then the mode is entered with them.
        It must hold every constraint of the entered mode (a passive walker's heel strike
        keeps the trailing knee locked through the impact, which the next mode releases).
        Not with ``u``.

    A reset map may return a list of Jumps: they are applied in order at the event's
    instant, each with its own impact (several impacts at one instant, resolved in order).
    """

    FIELDS = ("mode", "discrete", "q", "u", "constraints", "impact", "impact_constraints")

    def __init__(self, mode: int, discrete: Optional[dict] = None, q: Optional[np.ndarray] = None,
                 u: Optional[np.ndarray] = None, constraints: Optional[tuple] = None,
                 impact: bool = False, impact_constraints: Optional[tuple] = None):
        self.__dict__.update(mode=mode, discrete={} if discrete is None else discrete, q=q, u=u,
                             constraints=constraints, impact=impact,
                             impact_constraints=impact_constraints)


class Output(Record):
    """An output declared once: its value and how the FMU interface shows it.

    Exactly one of ``expr``, ``multiplier`` and ``discrete`` gives the value; with none
    the name must be a simulator attribute (``impact_count``, say).

    Parameters
    ----------
    name : str
        The output's name (FMU variable, ``ctx.outputs[name]``).
    expr : sympy expression, optional
        Evaluated by the compiled mode (in q, u, forces, parameters, inputs, discrete).
    description, unit : str
        Shown in modelDescription.xml.
    start : number
        The FMU variable's start value.
    type : str
        Real, Integer or Boolean.
    multiplier : str, optional
        A constraint's name: its multiplier (constraint force), 0 while it is inactive.
    discrete : str, optional
        A discrete variable's name: its value.
    interface : bool
        False: an output of the automaton only (reset maps read it), not of the FMU.
    """

    FIELDS = ("name", "expr", "description", "unit", "start", "type", "multiplier", "discrete",
              "interface")
    FROZEN = True

    def __init__(self, name: str, expr=None, description: str = "", unit: str = "",
                 start=0.0, type: str = "Real", multiplier: Optional[str] = None,
                 discrete: Optional[str] = None, interface: bool = True):
        given = [k for k, v in (("expr", expr), ("multiplier", multiplier),
                                ("discrete", discrete)) if v is not None]
        if len(given) > 1:
            raise ModelDefinitionError(f"output {name!r}: give one of expr, multiplier "
                                       f"and discrete, not {' and '.join(given)}")
        if not given and name not in SIM_ATTRIBUTES:
            raise ModelDefinitionError(
                f"output {name!r} has no value: give expr=, multiplier= (a constraint) "
                f"or discrete= (a discrete variable), or name one of {SIM_ATTRIBUTES}")
        self.__dict__.update(name=name, expr=expr, description=description, unit=unit,
                             start=start, type=type, multiplier=multiplier, discrete=discrete,
                             interface=interface)

    @property
    def source(self):
        """Where the value lives: ("expr", expr), ("lambda", constraint),
        ("discrete", variable) or ("attr", simulator attribute)."""
        if self.expr is not None:
            return "expr", self.expr
        if self.multiplier is not None:
            return "lambda", self.multiplier
        if self.discrete is not None:
            return "discrete", self.discrete
        return "attr", self.name


class GuardResets:
    """The automaton's transition derived from the reset maps attached to its guards.

    Called as ``transition(ctx, guard_name)``: the reset of that guard of mode
    ``ctx.mode``; a guard without one goes to ``fallback`` (the scenario's own
    transition), or is a ``ModelDefinitionError`` naming mode and guard.
    """

    def __init__(self, modes: Mapping[int, Mode], fallback: Optional[Callable] = None):
        self.modes, self.fallback = modes, fallback
        self._resets = {}     # (mode id, guard name) -> reset or None: modes are never replaced

    def reset(self, mode_id, guard_name):
        """The reset map of guard ``guard_name`` in mode ``mode_id``, or None."""
        key = (mode_id, guard_name)
        if key not in self._resets:
            mode = self.modes.get(mode_id)
            self._resets[key] = next((g.reset for g in (mode.guards if mode is not None else ())
                                      if g.name == guard_name and g.reset is not None), None)
        return self._resets[key]

    def __call__(self, ctx, guard_name):
        reset = self.reset(ctx.mode, guard_name)
        if reset is not None:
            return reset(ctx)
        if self.fallback is not None:
            return self.fallback(ctx, guard_name)
        mode = self.modes.get(ctx.mode)
        raise ModelDefinitionError(
            f"mode {ctx.mode} ({mode.name if mode else 'unknown'}): guard {guard_name!r} has no "
            "reset map; give it one (Guard(..., reset=...)) or give the automaton a "
            "transition(ctx, guard)")


class EnterMode:
    """The initial reset map (eq 20) that enters one mode, the state unchanged."""

    def __init__(self, mode_id: int):
        self.mode_id = mode_id

    def __call__(self, ctx):
        return Jump(self.mode_id)


class Automaton(Record):
    """Modes and reset maps over one model and its library of constraints.

    Parameters
    ----------
    model : embed.Model
    constraints : dict or sequence of Constraint
        name -> Constraint (a sequence is keyed by each constraint's name).
    modes : dict
        id -> Mode; a Mode without id takes its key.
    discrete : dict
        Discrete variable name -> initial value (floats; passed to compiled functions).
    outputs : dict or sequence of Output
        name -> expression (in q, u, forces, params, discrete), or ``Output`` declarations,
        which also give the FMU interface (``Scenario`` with ``outputs=None``).
    transition : callable, optional
        ``(ctx, guard_name) -> Jump`` for the guards that have no ``reset``; with none,
        every guard needs one (``unhandled_guards``).
    initial : callable or int, optional
        ``(ctx) -> Jump`` (eq 20), or a mode id to enter; default: the first mode.
    zeno : callable, optional
        ``(ctx, guard_name) -> Jump`` into the persistent mode when impacts accumulate.
    allowed : dict
        Input name -> its allowed values (a latch pin, a selector); other inputs: any finite.
    declared_outputs : tuple of Output
        Filled from ``outputs`` when it is a sequence of Output.
    """

    FIELDS = ("model", "constraints", "modes", "discrete", "outputs", "transition", "initial",
              "zeno", "allowed", "declared_outputs")

    def __init__(self, model, constraints: dict | Sequence, modes: dict,
                 discrete: Optional[dict] = None, outputs: dict | Sequence[Output] = None,
                 transition: Optional[Callable] = None, initial: Optional[Callable | int] = None,
                 zeno: Optional[Callable] = None, allowed: Optional[dict] = None,
                 declared_outputs: tuple = ()):
        self.model, self.constraints, self.modes = model, constraints, modes
        self.discrete = {} if discrete is None else discrete
        self.outputs = {} if outputs is None else outputs
        self.transition, self.initial, self.zeno = transition, initial, zeno
        self.allowed = {} if allowed is None else allowed
        self.declared_outputs = declared_outputs
        if not isinstance(self.constraints, Mapping):
            self.constraints = {c.name: c for c in self.constraints}
        self.modes = _numbered(self.modes)
        if not isinstance(self.outputs, Mapping):
            self.declared_outputs = tuple(self.outputs)
            self.outputs = _expressions(self.declared_outputs, self)
        fallback = self.transition
        if isinstance(fallback, GuardResets):    # a copy (``replace``): derive again
            fallback = fallback.fallback
        if fallback is None or any(g.reset is not None for m in self.modes.values()
                                   for g in m.guards):
            self.transition = GuardResets(self.modes, fallback)
        if self.initial is None:
            if not self.modes:
                raise ModelDefinitionError("the automaton has no modes")
            self.initial = EnterMode(next(iter(self.modes)))
        elif isinstance(self.initial, (int, np.integer)):
            self.initial = EnterMode(int(self.initial))

    def unhandled_guards(self) -> list:
        """Guards no reset map handles: [(mode id, mode name, guard name)].

        Returns
        -------
        list of tuple
            Empty when every guard has a ``reset`` or the automaton has its own transition.
        """
        t = self.transition
        if not isinstance(t, GuardResets) or t.fallback is not None:
            return []
        return [(k, m.name, g.name) for k, m in self.modes.items() for g in m.guards
                if g.reset is None]


def _numbered(modes) -> dict:
    """id -> Mode, each Mode carrying its id (taken from the key when it has none)."""
    if not isinstance(modes, Mapping):
        raise ModelDefinitionError(f"modes must be a dict id -> Mode, not {type(modes).__name__}")
    out = {}
    for key, mode in modes.items():
        if mode.id is None:
            mode = mode.replace(id=key)
        elif mode.id != key:
            raise ModelDefinitionError(f"mode {mode.name!r} has id {mode.id} but is listed under "
                                       f"key {key}; make them equal (or omit the id)")
        out[key] = mode
    return out


def _expressions(declared: Sequence[Output], aut: Automaton) -> dict:
    """The automaton's outputs (name -> expression) of declared Outputs, checked."""
    wrong = [o for o in declared if not isinstance(o, Output)]
    if wrong:
        raise ModelDefinitionError(f"outputs must be a dict name -> expression or a sequence of "
                                   f"embed.Output, not {wrong[0]!r}")
    names = [o.name for o in declared]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ModelDefinitionError(f"outputs {repeated} are declared more than once")
    for o in declared:
        if o.multiplier is not None and o.multiplier not in aut.constraints:
            raise ModelDefinitionError(f"output {o.name!r}: multiplier of {o.multiplier!r}, which "
                                       f"is no constraint ({sorted(aut.constraints)})")
        if o.discrete is not None and o.discrete not in aut.discrete:
            raise ModelDefinitionError(f"output {o.name!r}: discrete variable {o.discrete!r} is "
                                       f"not declared ({sorted(aut.discrete)})")
    return {o.name: o.expr for o in declared if o.expr is not None}


def impact_problem(aut, jump) -> str | None:
    """What is wrong with ``jump.impact_constraints`` (an impact's own set), or None."""
    if isinstance(jump.impact_constraints, str):
        return (f"gives impact_constraints={jump.impact_constraints!r}, a string; give a tuple "
                f"of constraint names: ({jump.impact_constraints!r},)")
    unknown = [c for c in jump.impact_constraints if c not in aut.constraints]
    if unknown:
        return (f"impacts with constraints {unknown}, which do not exist; known: "
                f"{sorted(aut.constraints)}")
    if jump.u is not None:
        return ("gives both u and impact_constraints: the impact map over impact_constraints "
                "gives the speeds; drop one")
    entered = aut.modes[jump.mode].constraints if jump.constraints is None else jump.constraints
    missing = sorted(set(entered) - set(jump.impact_constraints))
    if missing:
        return (f"enters mode {jump.mode} whose constraints {missing} are not in "
                f"impact_constraints {tuple(jump.impact_constraints)}: they would not hold after "
                "the impact; add them to impact_constraints")
    return None
