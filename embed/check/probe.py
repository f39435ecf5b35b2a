"""A scenario's modes entered, compiled and their reset maps probed, for ``embed.check.check``.

A simulator is started from the scenario's defaults (the initial reset map, gillespie2005
eq 20, validated by ``embed.model.reset_maps.reset_map``).  From that start state every mode is entered
through ``Simulator.jump_to``: its configuration projected on the mode's constraints
(haug_pavesic2023 eq 13-16), the speeds made consistent (mueller eq 7), the speeds partitioned
(eq 11) and the mode compiled; there its constraint Jacobian B (eq 7) must have full rank, and
the scenario's ``transition`` (and, after an impact, ``zeno``) is called for each of the mode's
guards and its jump validated, at the mode's state entered with the start speeds and with
PROBES - 1 random speeds around them (fixed seed).  A probe finds only the branches its states
take: branches that hang on the position or on discrete values may stay unprobed.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .findings import Finding, mode_label
from ..model.reset_maps import reset_map
from ..base.tolerances import REDUNDANCY_TOL
from ..model.context import Context
from ..base.errors import ConstraintRankError, EmbedError, ModelDefinitionError


PROBES = 3           # consistent states of each mode its reset maps are probed at
SEED = 13            # of the random speeds of all but the first


def _rank(B):
    if B.size == 0:
        return 0
    s = np.linalg.svd(B, compute_uv=False)
    return int(np.sum(s > REDUNDANCY_TOL * max(1.0, float(s[0]))))


def redundant_groups(B, names) -> list[tuple]:
    """The constraints whose rows of B depend on others: every zero row and dependent pair,
    else, adding rows one by one, each row that adds no rank with the rows kept before it."""
    zero = [i for i in range(len(names)) if _rank(B[[i]]) == 0]
    rows = [i for i in range(len(names)) if i not in zero]
    groups = [(names[i],) for i in zero]
    groups += [(names[i], names[j]) for i, j in combinations(rows, 2) if _rank(B[[i, j]]) < 2]
    if groups:
        return groups
    kept = []
    for i in rows:
        if _rank(B[kept + [i]]) == len(kept) + 1:
            kept.append(i)
        else:
            groups.append(tuple(names[k] for k in kept) + (names[i],))
    return groups


def _jacobian(sim, names):
    """B of the constraints ``names`` at the simulator's state (``Context.row``, eq 7)."""
    ctx = Context(sim)
    return np.array([ctx.row(c)[0] for c in names]).reshape(len(names), sim.model.n)


def _rank_finding(sim, mode, names, where):
    """An error naming the redundant constraints if B of ``names`` loses rank here; None if
    it has full rank (or is not finite here: nothing can be said)."""
    B = _jacobian(sim, names)
    if not np.isfinite(B).all() or _rank(B) == len(names):
        return None
    groups = redundant_groups(B, list(names))
    text = "; ".join(_and(g) for g in groups)
    return Finding("error", "constraints " + ", ".join(repr(c) for g in groups for c in g),
                   f"{mode_label(mode)}: constraints {text} are redundant {where} (rank of B "
                   f"{_rank(B)} < {len(names)}): their rows of B are dependent; remove one "
                   "constraint of each such group from the mode (or from Jump.constraints)")


def _and(names):
    quoted = [repr(c) for c in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def probe_embedding(scenario):
    """The embedding path the checker runs ``scenario`` on: the numeric one if the scenario's
    FMU runs numeric by default, else the symbolic one (a background scenario's worker embeds
    its modes symbolically: they are embedded and compiled here)."""
    return "numeric" if scenario.embedding == "numeric" else "symbolic"


def _start(scenario, params, embedding=None):
    embedding = embedding or probe_embedding(scenario)
    try:    # every mode embedded (eq 11-16) and compiled here, on the scenario's path
        return scenario.simulator(params, embedding=embedding), None
    except ModelDefinitionError as exc:
        return None, Finding("error", "initial", f"the simulator could not start: {exc}")
    except Exception as exc:  # noqa: BLE001 - everything else: reported, never raised
        return None, Finding("error", "initial", f"the simulator could not start from the "
                             f"defaults: {type(exc).__name__}: {exc}")


def _nearest(sim, names, q, discrete):
    """The configuration on the constraints ``names`` (with the jump's ``discrete`` values)
    nearest to q (default: the simulator's): where a guard into the mode fires, the mode's
    constraints hold or nearly, which the start state of the check need not be near (a tip
    a metre from the point that catches it); the state's own q if none is found near it
    (the entry then reports why)."""
    kept = sim.get_state()
    try:
        sim.set_discrete(discrete)
        near = sim.nearest_configuration(names, q)
        return near if np.isfinite(near).all() else q
    except EmbedError:
        return q
    finally:
        sim.set_state(kept)


def _enter(sim, mode, start, u=None, jump=None, near=False):
    """Enter ``mode`` from the state ``start`` (with the speeds ``u`` if given), through
    ``jump`` (a reset map's jump into it, probed at ``start``: its coordinates, speeds and
    discrete values, consistent with the mode's constraints) if given; a Finding when it
    cannot be, else None.  With no coordinates from the jump (or ``near``: a scenario's
    ``check_entries`` state), the mode is entered at the configuration on its constraints
    nearest to them (``_nearest``)."""
    sim.set_state(start)
    names = tuple(sorted(mode.constraints))
    q, discrete = (None, {}) if jump is None else (jump.q, dict(jump.discrete or {}))
    if u is None and jump is not None:
        u = jump.u
    if q is None or near:
        q = _nearest(sim, names, q, discrete)
    try:
        sim.jump_to(mode.id, q=q, u=u, label="check", **discrete)
    except ModelDefinitionError as exc:
        return Finding("error", mode_label(mode),
                       f"cannot be entered: {exc}")
    except EmbedError as exc:     # no consistent state near the start: judge B there
        sim.set_state(start)
        return (_rank_finding(sim, mode, names, "at the start state")
                or _compile_only(sim, mode, names, exc))
    except Exception as exc:  # noqa: BLE001 - the scenario's own code (an enabled(), say)
        return Finding("error", mode_label(mode), f"entering it raised "
                       f"{type(exc).__name__}: {exc}")
    return _rank_finding(sim, mode, names, "at a consistent state")


def _compile_only(sim, mode, names, why):
    """The mode compiled at the start state, where it could not be entered (``why``): a
    warning if it compiles (or its partition is singular there), else an error."""
    n, m = sim.model.n, len(names)
    try:
        try:
            dep = sim.partition(names, sim.t, sim.q)
        except ConstraintRankError:     # singular or not finite here: the later speeds
            dep = tuple(range(n - m, n))
        sim.mode_compiler.compiled(mode.id, dep, names)
    except ConstraintRankError:
        pass
    except Exception as exc:  # noqa: BLE001 - a compile error, or the scenario's own code
        return Finding("error", mode_label(mode), "does not compile: "
                       f"{type(exc).__name__}: {exc}")
    return Finding("warning", mode_label(mode), "could not be entered from the start "
                   f"state ({type(why).__name__}: {why}): it was compiled "
                   "there but its reset maps were not probed")


def _probe(sim, mode, kind, guard):
    """Call reset map ``kind`` for ``guard`` here; (jump or None, Finding or None)."""
    item = f"guard {guard!r} in {mode_label(mode)}"
    try:
        return reset_map(sim.automaton, kind, Context(sim, guard), guard), None
    except ModelDefinitionError as exc:
        return None, Finding("error", item, str(exc))
    except EmbedError as exc:
        return None, Finding("warning", item, f"the {kind} reset map could not be probed at a "
                             f"consistent state of the mode: {type(exc).__name__}: {exc}")


def _probe_guard(sim, mode, states, guard, zeno, jumps):
    """Probe ``guard``'s reset maps at each of the mode's ``states``: its first error, else a
    warning if no probe went through, else None.  Each jump into a mode not seen in ``jumps``
    yet is kept there with the state it was probed at (mode id -> (state, jump))."""
    warnings = []
    for state in states:
        for kind in ("transition", "zeno"):
            if kind == "zeno" and not zeno:
                break
            sim.set_state(state)
            jump, problem = _probe(sim, mode, kind, guard)
            if problem is not None and problem.level == "error":
                return problem
            warnings += [problem] if problem else []
            listed = list(jump) if isinstance(jump, (list, tuple)) else [jump]
            if listed and listed[0] is not None:     # the first jump leaves this state
                jumps.setdefault(listed[0].mode, (state, listed[0]))
            if jump is None or not any(j.impact for j in listed):
                break
    return warnings[0] if len(warnings) == len(states) else None


def _speeds(sim, seed=SEED):
    """The start speeds and PROBES - 1 random draws around them (fixed seed): the reset maps'
    branches that depend on the speeds (a rebound or a rest) are met at some of them."""
    rng = np.random.default_rng(seed)
    u0 = np.array(sim.u)
    scale = max(1.0, float(np.max(np.abs(u0), initial=0.0)))
    return [None] + [u0 + scale * rng.standard_normal(len(u0)) for _ in range(PROBES - 1)]


def probe_modes(scenario, params=None, embedding=None) -> list[Finding]:
    """Start a simulator from the defaults, enter and compile every mode, check its
    constraints' rank and probe its guards' reset maps at a few consistent states (module
    docstring).

    The modes are visited from the start mode on, each entered through the first probed
    reset map that jumps into it (with that jump's coordinates, speeds and discrete
    variables: a lock's held angle set to the angle at the lock, say), a mode no probed jump
    reaches from the start state with the discrete variables' initial values, at the
    configuration on its constraints nearest to the start state.  A mode that only an
    extension enters (a fence announced at run time) is entered through the scenario's
    ``check_entries`` jump (``Scenario``), at the configuration on its constraints nearest
    to that jump's.

    Parameters
    ----------
    scenario : Scenario
    params : dict or None
        Parameter values other than the defaults.
    embedding : str or None
        The embedding path (default ``probe_embedding(scenario)``).

    Returns
    -------
    list of Finding
    """
    sim, failed = _start(scenario, params, embedding)
    if failed:
        return [failed]
    found = []
    start = sim.get_state()
    aut = sim.automaton
    speeds = _speeds(sim)
    entries = dict(getattr(scenario, "check_entries", None) or {})
    # mode id -> (state, jump) of a probed jump into it (or of the scenario's check entry)
    jumps = {mid: (start, entry(sim)) for mid, entry in entries.items()}
    todo = sorted(aut.modes.values(), key=lambda md: md.id != sim.mode)
    while todo:
        reached = [md for md in todo if md.id in jumps]
        mode = reached[0] if reached else todo[0]
        todo.remove(mode)
        source, jump = jumps.get(mode.id, (start, None))
        near = mode.id in entries
        problem = _enter(sim, mode, source, jump=jump, near=near)
        if problem is not None:
            found.append(problem)
            continue
        states = [sim.get_state()]
        for u in speeds[1:]:
            if _enter(sim, mode, source, u, jump, near) is None:
                states.append(sim.get_state())
        for g in mode.guards:
            problem = _probe_guard(sim, mode, states, g.name, aut.zeno is not None, jumps)
            found += [problem] if problem else []
    return found
