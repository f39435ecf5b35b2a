"""A scenario checked before it ships.

``check_scenario`` reads a scenario (docs/design.md, "Data flow": the hybrid automaton of
gillespie2005 Sec 4 over its model) the way the engine will run it and lists what is wrong,
naming the offending guard, output, law, mode, constraint, parameter or discrete variable and
the fix: symbols nobody defines, modes, constraints and discrete variables that do not exist,
parameters with no value, outputs that resolve to nothing, redundant constraint sets (B of
eq 7 losing rank at a consistent state), reset maps (eq 19-20) that fail or jump nowhere, and
modes with no way out.  It compiles every mode and enters it through the engine's public calls.

The reset maps are probed through ``embed.model.reset_maps.reset_map``, the call the
simulator makes at every event; the modes are entered by ``embed.check.probe``.
"""

from __future__ import annotations

import math

import symengine as se

from ..base.reserved import RESERVED
from ..model.reset_maps import jump_problem, reset_map  # noqa: F401 - the checker's own too
from .findings import Finding, mode_label
from .probe import probe_modes


# --------------------------------------------------------------------- static checks
def _known_symbols(aut):
    m = aut.model
    names = {str(s) for s in list(m.q) + list(m.u) + list(m.forces) + list(m.params)
             + list(m.inputs)}
    return names | set(aut.discrete) | {"t"} | {"lambda_" + c for c in aut.constraints}


def _unknown_in(aut, expr, known):
    """Names in ``expr`` that nobody defines: free symbols and undefined functions (a
    dynamicsymbol that is not a coordinate or speed)."""
    e = aut.model.sym(expr)
    names = {str(s) for s in e.free_symbols} - known
    names |= {f"{f.get_name()}(...)" for f in e.atoms(se.FunctionSymbol)}
    return sorted(names)


def _expression(aut, expr, known, level, item, what, findings):
    """Check one expression's symbols; returns its symengine form, or None if it is unusable."""
    try:
        e = aut.model.sym(expr)
        unknown = _unknown_in(aut, e, known)
    except Exception as exc:  # noqa: BLE001 - text or an object sympy cannot read
        findings.append(Finding(level, item, f"{what} is not an expression: {exc}"))
        return None
    if unknown:
        findings.append(Finding(level, item, f"{what} names {unknown}, which are neither "
                                "coordinates, speeds, forces, parameters, inputs, discrete "
                                "variables, t nor lambda_<constraint>; correct the names or "
                                "declare them in the Model or the Automaton"))
    return e


def _multipliers_outside(e, mode, constraints):
    """The multipliers lambda_<c> named in ``e`` of constraints c the mode does not hold
    (those of unknown constraints are reported as unknown symbols)."""
    names = (str(s) for s in e.free_symbols if str(s).startswith("lambda_"))
    return sorted(n for n in names if n[len("lambda_"):] in constraints
                  and n[len("lambda_"):] not in mode.constraints)


def check_expressions(scenario) -> list[Finding]:
    """Every symbol of the guards, laws and outputs is known; a multiplier lambda_<c> is named
    only in a mode that holds c (it exists only there)."""
    aut, found = scenario.automaton, []
    known = _known_symbols(aut)
    outs = {}
    for name, expr in aut.outputs.items():
        outs[name] = _expression(aut, expr, known, "error", f"output {name!r}",
                                 f"output {name!r}", found)
    forces = {str(f) for f in aut.model.forces}
    for mode in aut.modes.values():
        label = mode_label(mode)
        own = dict(mode.outputs)
        for name in own:
            if name not in aut.outputs:
                found.append(Finding("error", f"output {name!r} in {label}",
                                     f"{label} gives its own value of output {name!r}, which "
                                     f"is not an automaton output; outputs: {list(aut.outputs)}"))
        for name in aut.outputs:
            item = f"output {name!r} in {label}"
            e = (_expression(aut, own[name], known, "error", item, item, found)
                 if name in own else outs[name])
            lam = [] if e is None else _multipliers_outside(e, mode, aut.constraints)
            if lam:
                found.append(Finding("error", item, f"output {name!r} names {lam} in {label}, "
                                     "which does not hold that constraint (a multiplier exists "
                                     "only where its constraint is active); give the mode its "
                                     f"own value: Mode(..., outputs=(({name!r}, 0),))"))
        for force, expr in mode.laws:
            item = f"law of {force} in {label}"
            if str(force) not in forces:
                found.append(Finding("error", item, f"{label} has a law for {force}, which is "
                                     f"not a force symbol of the model; forces: {sorted(forces)}"))
            _expression(aut, expr, known, "error", item, item, found)
        for g in mode.guards:
            item = f"guard {g.name!r} in {label}"
            e = _expression(aut, g.expr, known, "error", item, item, found)
            lam = [] if e is None else _multipliers_outside(e, mode, aut.constraints)
            if lam:
                found.append(Finding("error", item, f"guard {g.name!r} names {lam}, multipliers "
                                     f"of constraints that {label} does not hold; a guard may "
                                     "name only its own mode's multipliers"))
    return found


def check_modes(scenario) -> list[Finding]:
    """Every constraint a mode names exists, mode ids match their keys, guards' names are
    unique in a mode, their ``enabled`` reads only declared discrete variables and each has a
    reset map (eq 19: attached to it, or the automaton's transition)."""
    aut, found = scenario.automaton, []
    for key, mode in aut.modes.items():
        label = mode_label(mode)
        if key != mode.id:
            found.append(Finding("error", label, f"{label} is kept under the key {key!r}; key "
                                 "the modes dict by each mode's id"))
        for c in mode.constraints:
            if c not in aut.constraints:
                found.append(Finding("error", f"constraint {c!r}", f"{label} names constraint "
                                     f"{c!r}, which the automaton does not define; known: "
                                     f"{sorted(aut.constraints)}"))
        names = [g.name for g in mode.guards]
        for name in sorted({n for n in names if names.count(n) > 1}):
            found.append(Finding("error", f"guard {name!r} in {label}", f"{label} has two guards "
                                 f"named {name!r}; the reset map cannot tell them apart: rename"))
        for g in mode.guards:
            if g.enabled is None:
                continue
            try:
                g.enabled(dict(aut.discrete))
            except Exception as exc:  # noqa: BLE001 - the scenario's callable
                found.append(Finding("error", f"guard {g.name!r} in {label}",
                                     f"its enabled() fails on the declared discrete variables "
                                     f"{sorted(aut.discrete)}: {type(exc).__name__}: {exc}"))
    for mode_id, mode_name, guard in aut.unhandled_guards():
        label = mode_label(aut.modes[mode_id])
        found.append(Finding("error", f"guard {guard!r} in {label}", "it has no reset map: "
                             "give it one (Guard(..., reset=...)) "
                             "or give the automaton a transition"))
    if len(aut.modes) > 1:
        for mode in aut.modes.values():
            if not mode.guards:
                found.append(Finding("warning", mode_label(mode), "it has no guard: "
                                     "once entered it is never left; give it a switching "
                                     "condition if it should end"))
    return found


def check_parameters(scenario, params=None) -> list[Finding]:
    """Every model parameter has a value (a Var); the values (``params`` over the defaults) are
    finite and in their ranges; the names the scenario lists (positive, nonnegative,
    input_defaults) and those of ``params`` are parameters; discrete variables start at
    finite numbers."""
    aut, found = scenario.automaton, []
    values = {**scenario.defaults(), **(params or {})}
    model_params = {str(s) for s in aut.model.params}
    for name in sorted(model_params - set(scenario.defaults())):   # the FMU needs a Var
        found.append(Finding("error", f"parameter {name!r}", f"model parameter {name} has no "
                             f"value: add Var({name!r}, <value>, ...) to the scenario's "
                             "parameters"))
    for v in scenario.parameters:
        problem = v.problem(values[v.name])
        if problem:
            found.append(Finding("error", f"parameter {v.name!r}", problem))
    listed = [(n, "positive") for n in scenario.positive] + \
        [(n, "nonnegative") for n in scenario.nonnegative] + \
        [(n, "input_defaults") for n in scenario.input_defaults.values()] + \
        [(n, "parameter values given to the check") for n in (params or {})]
    known = set(scenario.defaults()) | model_params
    for name, where in listed:
        if name not in known:
            found.append(Finding("error", f"parameter {name!r}", f"the scenario's {where} "
                                 f"names {name!r}, which is not one of its parameters"))
    for k, v in aut.discrete.items():
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            found.append(Finding("error", f"discrete variable {k!r}", f"its initial value "
                                 f"{v!r} is not a finite number"))
    return found


def check_interface(scenario) -> list[Finding]:
    """Every model input has a Var (a master can set it) and every input Var is the model's;
    the FMU's variable names are unique."""
    aut, found = scenario.automaton, []
    inputs = {v.name for v in scenario.inputs}
    model_inputs = {str(s) for s in aut.model.inputs}
    for name in sorted(model_inputs - inputs):
        found.append(Finding("error", f"input {name!r}", f"model input {name} has no Var in "
                             "the scenario's inputs: a master cannot set it; add one"))
    for name in sorted(inputs - model_inputs):
        found.append(Finding("warning", f"input {name!r}", f"{name!r} is not an input of the "
                             "model: setting it changes nothing; remove it or add it to Model("
                             "inputs=...)"))
    ext = scenario.extension
    extra = list(getattr(ext, "inputs", ())) + list(getattr(ext, "outputs", ()))
    names = ([v.name for v in scenario.parameters + scenario.inputs + scenario.outputs + extra]
             + list(RESERVED))
    for name in sorted({n for n in names if names.count(n) > 1}):
        found.append(Finding("error", f"variable {name!r}", f"{name!r} is declared more than "
                             "once among parameters, inputs, outputs and the FMU's own "
                             f"{RESERVED}; rename one"))
    return found


def check_outputs(scenario) -> list[Finding]:
    """Every FMU output resolves (``Scenario.source``) to something that exists."""
    aut, found = scenario.automaton, []
    for v in scenario.outputs:
        item = f"FMU output {v.name!r}"
        try:
            kind, where = scenario.source(v.name)
        except KeyError:
            found.append(Finding("error", item, f"{v.name!r} is neither an automaton output "
                                 f"{list(aut.outputs)}, an extra output, constraint_residual nor "
                                 "an engine attribute; correct the name or add the output"))
            continue
        if kind == "lambda" and where not in aut.constraints:
            found.append(Finding("error", item, f"{v.name!r} is the multiplier of constraint "
                                 f"{where!r}, which does not exist; known: "
                                 f"{sorted(aut.constraints)}"))
        elif kind == "discrete" and where not in aut.discrete:
            found.append(Finding("error", item, f"{v.name!r} is discrete variable {where!r}, "
                                 f"which is not declared; declared: {sorted(aut.discrete)}"))
        elif kind not in ("mon", "attr", "lambda", "discrete"):
            found.append(Finding("error", item, f"extra output {v.name!r} is of kind {kind!r}; "
                                 "use ('lambda', constraint) or ('discrete', variable)"))
    return found


def check_scenario(scenario, params=None, embedding=None) -> list[Finding]:
    """Everything found wrong with ``scenario`` (an ``embed.Scenario``), errors first.

    The static checks read the automaton and the interface; if they find no error, a simulator
    is started from the defaults (``params`` override them) and every mode is entered,
    compiled and probed (``embed.check.probe``).

    Parameters
    ----------
    scenario : Scenario
    params : dict or None
        Parameter values other than the defaults.
    embedding : str or None
        The embedding path the modes are compiled on (default: the scenario's, its
        background worker's symbolic one for "background": ``probe.probe_embedding``).

    Returns
    -------
    list of Finding
        Empty when the scenario is clean.
    """
    found = (check_parameters(scenario, params) + check_interface(scenario)
             + check_modes(scenario) + check_expressions(scenario) + check_outputs(scenario))
    if any(f.level == "error" for f in found):
        found.append(Finding("warning", "modes", "the modes were not compiled nor their reset "
                             "maps probed: fix the errors above first"))
    else:
        found += probe_modes(scenario, params, embedding)
    return sorted(found, key=lambda f: f.level != "error")
