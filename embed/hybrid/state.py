"""The running state of a simulator: everything that decides the future, in one class.

``RunState`` is to a ``Simulator`` what MuJoCo's MjData is to its MjModel: the compiled modes
live in the mode library (``embed.modes.library``), shared; this is what one run changes.  Its
fields are the one list: the checkpoint an ``advance`` rolls back to, the serialized state
(``get_state``/``set_state``, the FMU state of docs/design.md, "The FMU boundary") and the
whole-state check (``check_state``) all follow it, and so does the finiteness check of a new
state (``check_finite``).  Adding a field means adding it here, with
its ``StateField``: whether the checkpoint keeps it, how it is serialized and restored, and how a
serialized value is checked.

Arrays and containers in the state are replaced, never changed in place (``pvec`` excepted:
inputs, set between advances, are not rolled back), so a checkpoint is a tuple of references.
"""

from __future__ import annotations

import copy
import math
from operator import attrgetter

import numpy as np

from ..base.errors import EmbedError, IntegrationError, StateError
from .events import ARMED, HELD, UNARMED


class StateField:
    """A field of ``RunState`` and its role.  ``default``, or ``factory()`` for a fresh
    container; ``checkpoint``: kept by the checkpoint of an advance; ``save``: its place in
    the serialized state (a key, or (key, index) in a list of several fields; None: derived,
    not saved); ``restore``: the conversion of a serialized value."""

    __slots__ = ("name", "default", "factory", "checkpoint", "save", "restore")

    def __init__(self, name, default=None, factory=None, checkpoint=True, save=None,
                 restore=None):
        self.name, self.default, self.factory = name, default, factory
        self.checkpoint, self.save, self.restore = checkpoint, save, restore

    def initial(self):
        """The field's value in a new ``RunState``."""
        return self.factory() if self.factory is not None else self.default


def _floats(v):
    return [float(g) for g in v]


def _chart(v):
    return None if v is None else tuple(np.array(a, dtype=float) for a in v)


def _float_or_none(v):
    return None if v is None else float(v)


FIELDS = (
    StateField("t", 0.0, save="t", restore=float),
    StateField("x", None, save="x", restore=lambda v: np.array(v, dtype=float)),
    StateField("mon", None, save="mon", restore=lambda v: np.array(v, dtype=float)),
    StateField("mode", None, save="mode", restore=int),
    StateField("discrete", factory=dict, save="discrete",
               restore=lambda v: {k: float(x) for k, x in v.items()}),
    StateField("dep", (), save="dep", restore=lambda v: tuple(int(i) for i in v)),
    StateField("armed", (), save="armed", restore=lambda v: tuple(int(a) for a in v)),
    StateField("enabled", (), save="enabled", restore=lambda v: tuple(bool(a) for a in v)),
    StateField("event_count", 0, save="event_count", restore=int),
    StateField("last_event_time", 0.0, save="last_event_time", restore=float),
    # (t, label, from mode, to mode); the checkpoint keeps its length (events are appended)
    StateField("events", factory=list, checkpoint=False, save="events",
               restore=lambda v: [tuple(e) for e in v]),
    StateField("same_instant", 0, save="same_instant", restore=int),
    StateField("pvec", None, checkpoint=False, save="pvec",
               restore=lambda v: np.array(v, dtype=float)),
    StateField("active", (), save="active", restore=tuple),
    StateField("chart", None, save="chart", restore=_chart),
    StateField("kappa0", 1.0, save="kappa0", restore=float),
    StateField("reselections", 0, checkpoint=False, save=("counters", 0), restore=int),
    StateField("recharts", 0, checkpoint=False, save=("counters", 1), restore=int),
    StateField("impact_count", 0, save=("impacts", 0), restore=int),
    StateField("zeno_count", 0, save=("impacts", 1), restore=int),
    StateField("impact_gaps", factory=list, save=("impacts", 2), restore=_floats),
    StateField("last_impact", None, save=("impacts", 3), restore=_float_or_none),
    # derived from the fields above (set_state recomputes them): the compiled mode it runs
    # in, the projection of its holonomic constraints, whether kappa(B1) is watched
    StateField("compiled_mode", None),
    StateField("projection", None),
    StateField("watch", False),
)


class RunState:
    """Everything that decides a simulator's future: the ``FIELDS``, each an attribute.

    ``x`` = [q, u_ind] of the active mode, ``mon`` the compiled mode's monitor vector at x
    (its first n entries are the full speeds); neither is ever changed in place, so
    references to them are snapshots.  Compared by identity."""

    def __init__(self, **values):
        unknown = sorted(set(values) - {f.name for f in FIELDS})
        if unknown:
            raise TypeError(f"RunState has no field(s) {unknown}")
        for f in FIELDS:
            setattr(self, f.name, values[f.name] if f.name in values else f.initial())

    def __repr__(self):
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in FIELDS)
        return f"RunState({inner})"


CHECKPOINTED = tuple(f.name for f in FIELDS if f.checkpoint)
SAVED = tuple(f for f in FIELDS if f.save is not None)
_take = attrgetter(*CHECKPOINTED)
# the serialized state's keys: each saved field's key, "integrator" and "path"
STATE_KEYS = tuple(dict.fromkeys([f.save if isinstance(f.save, str) else f.save[0]
                                  for f in SAVED]
                                 + ["integrator"]))


def checkpoint(state, integrator):
    """References to the state at the start of an advance (nothing is changed in place)."""
    return _take(state), len(state.events), integrator.get_state()


def rollback(state, integrator, saved):
    """Back to a ``checkpoint``: the fields it keeps, the events logged after it dropped."""
    values, n_events, integ = saved
    for name, v in zip(CHECKPOINTED, values):
        setattr(state, name, v)
    del state.events[n_events:]
    integrator.set_state(integ)


def serialize(state, integrator):
    """The state as plain Python/numpy values, deep-copied (``Simulator.get_state``)."""
    out = {}
    for f in SAVED:
        where, v = f.save, getattr(state, f.name)
        if isinstance(where, str):
            out[where] = v
        else:
            out.setdefault(where[0], []).append(v)
    out["integrator"] = integrator.get_state()
    out["path"] = state.compiled_mode.path
    return copy.deepcopy(out)


def restore(state, s):
    """Set the saved fields of ``state`` from a serialized state already checked."""
    for f in SAVED:
        where = f.save
        v = s[where] if isinstance(where, str) else s[where[0]][where[1]]
        setattr(state, f.name, f.restore(v))


def _bad(field_name, why):
    return StateError(f"state field {field_name!r} {why}; the state is refused and the "
                      "simulator keeps its own")


def _number(field_name, v, lo=-math.inf, integer=False):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _bad(field_name, f"= {v!r} is not a number")
    if not (math.isfinite(float(v)) and v >= lo):
        raise _bad(field_name, f"= {v!r} is not finite" + (f" and >= {lo}" if lo > -math.inf
                                                           else ""))
    if integer and float(v) != int(v):
        raise _bad(field_name, f"= {v!r} is not an integer")
    return v


def _vector(field_name, v, n):
    try:
        a = np.array(v, dtype=float)
    except (TypeError, ValueError):
        raise _bad(field_name, "is not a vector of numbers") from None
    if a.ndim != 1 or len(a) != n:
        raise _bad(field_name, f"has shape {a.shape}; this simulator needs ({n},)")
    if not np.all(np.isfinite(a)):
        raise _bad(field_name, "holds non-finite numbers")
    return a


def check_state(sim, s):
    """StateError unless ``s`` is a whole, consistent state of ``sim``'s automaton.

    Every field present and of its type, the mode and constraints known, the dependent
    speeds a valid choice for the active constraints, x, mon, pvec, armed and enabled of the
    lengths that mode needs, every number finite.

    Parameters
    ----------
    sim : Simulator
    s : dict
        A state of ``serialize``.

    Returns
    -------
    (dict, compiled mode)
        A deep copy of s and the compiled mode it runs in; nothing of ``sim`` changes.
    """
    s = copy.deepcopy(s)
    if not isinstance(s, dict):
        raise StateError(f"a state is a dict of fields, not {type(s).__name__}")
    for k in STATE_KEYS:
        if k not in s:
            raise _bad(k, "is missing")
    aut, n = sim.aut, sim.model.n
    _number("t", s["t"])
    _number("last_event_time", s["last_event_time"])
    _number("kappa0", s["kappa0"], 0.0)
    for f in ("event_count", "same_instant"):
        _number(f, s[f], 0, integer=True)
    mode = s["mode"]
    if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)) \
            or int(mode) not in aut.modes:
        raise _bad("mode", f"= {mode!r} is not a mode of this automaton ({sorted(aut.modes)})")
    guards = aut.modes[int(mode)].guards
    disc = s["discrete"]
    if not isinstance(disc, dict) or sorted(disc) != sorted(sim.dnames):
        raise _bad("discrete", f"must have exactly the discrete variables {sim.dnames}")
    for k, v in disc.items():
        _number(f"discrete[{k}]", v)
    active = s["active"]
    if not isinstance(active, (list, tuple)) or not all(isinstance(c, str) for c in active):
        raise _bad("active", "is not a list of constraint names")
    unknown = [c for c in active if c not in aut.constraints]
    if unknown or len(set(active)) != len(active) or list(active) != sorted(active):
        raise _bad("active", f"= {list(active)} is not a sorted set of this automaton's "
                             f"constraints ({sorted(aut.constraints)})")
    dep = s["dep"]
    if not isinstance(dep, (list, tuple)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in dep) \
            or len(dep) != len(active) or len(set(dep)) != len(dep) \
            or not all(0 <= i < n for i in dep):
        raise _bad("dep", f"= {dep!r} is not one distinct speed index in 0..{n - 1} per "
                          f"constraint of the field 'active' ({list(active)})")
    pvec = _vector("pvec", s["pvec"], len(sim.psyms))
    o = sim.discrete_offset
    if [float(disc[k]) for k in sim.dnames] != pvec[o:o + len(sim.dnames)].tolist():
        raise _bad("pvec", "disagrees with the field 'discrete'")
    for f in ("armed", "enabled"):
        v = s[f]
        if not isinstance(v, (list, tuple)) or len(v) != len(guards):
            raise _bad(f, f"must hold one entry per switching condition of mode {mode} "
                          f"({len(guards)})")
    if not all(a in (UNARMED, ARMED, HELD) and not isinstance(a, float) for a in s["armed"]):
        raise _bad("armed", f"= {s['armed']!r} holds other than {UNARMED}, {ARMED}, {HELD}")
    if not all(isinstance(a, (bool, np.bool_)) for a in s["enabled"]):
        raise _bad("enabled", f"= {s['enabled']!r} holds other than booleans")
    ev = s["events"]
    if not isinstance(ev, (list, tuple)) or not all(
            isinstance(e, (list, tuple)) and len(e) == 4 and isinstance(e[1], str) for e in ev):
        raise _bad("events", "is not a list of (t, label, from mode, to mode)")
    for e in ev:
        _number("events", e[0])
    integ = s["integrator"]
    if not isinstance(integ, dict):
        raise _bad("integrator", "is not a dict")
    for k, v in integ.items():
        _number(f"integrator[{k}]", v, 0.0 if k == "h" else -math.inf)
    if "h" in integ and not integ["h"] > 0:
        raise _bad("integrator[h]", "must be > 0")
    cnt = s["counters"]
    if not isinstance(cnt, (list, tuple)) or len(cnt) != 2:
        raise _bad("counters", "is not [reselections, recharts]")
    for v in cnt:
        _number("counters", v, 0, integer=True)
    imp = s["impacts"]
    if not isinstance(imp, (list, tuple)) or len(imp) != 4 \
            or not isinstance(imp[2], (list, tuple)):
        raise _bad("impacts", "is not [impact count, Zeno count, gaps, last impact time]")
    _number("impacts", imp[0], 0, integer=True)
    _number("impacts", imp[1], 0, integer=True)
    for g in imp[2]:         # the gap before a first impact is inf
        if not (isinstance(g, (int, float, np.floating)) and g >= 0 and not math.isnan(g)):
            raise _bad("impacts", f"holds a gap {g!r}")
    if imp[3] is not None:
        _number("impacts", imp[3])
    hol = [c for c in active if aut.constraints[c].holonomic]
    chart = s["chart"]
    if chart is not None:
        if not isinstance(chart, (list, tuple)) or len(chart) != 2:
            raise _bad("chart", "is not None or (U, B)")
        try:
            U, Bh = (np.array(a, dtype=float) for a in chart)
        except (TypeError, ValueError):
            raise _bad("chart", "is not a pair of matrices") from None
        if U.shape != (n, len(hol)) or Bh.shape != (len(hol), len(hol)) \
                or not (np.all(np.isfinite(U)) and np.all(np.isfinite(Bh))):
            raise _bad("chart", f"must be finite matrices of shapes ({n}, {len(hol)}) and "
                                f"({len(hol)}, {len(hol)})")
    if not isinstance(s.get("path"), (str, type(None))):
        raise _bad("path", f"= {s.get('path')!r} is not a path name")
    try:
        compiled = sim.mode_compiler.compiled(int(mode), tuple(int(i) for i in dep), tuple(active))
        if s.get("path") == "numeric" and compiled.path != "numeric":
            compiled = sim.library.numeric_modes[compiled.key]   # replay on the path it ran on
    except (EmbedError, KeyError) as exc:
        raise _bad("dep", f"= {list(dep)} cannot be embedded for {list(active)}: {exc}") \
            from None
    x = _vector("x", s["x"], compiled.nx)
    _vector("mon", s["mon"], len(compiled.monitors(float(s["t"]), x, pvec)))
    return s, compiled


def check_finite(sim, y, what):
    """IntegrationError unless every entry of y (state and monitors: outputs, forces,
    conditions) is finite: nothing non-finite is ever accepted, so none reaches outputs."""
    # the sum is nan or inf where any entry is (or where it overflows: then look closer)
    if not math.isfinite(sum(y.tolist())) and not all(map(math.isfinite, y.tolist())):
        compiled = sim.state.compiled_mode
        names = ([str(c) for c in sim.model.q] + [str(sim.model.u[i]) for i in compiled.ind]
                 if len(y) > len(sim.state.mon) else [])
        names += ([str(u) for u in sim.model.u] + [str(f) for f in sim.model.forces]
                  + list(sim.outputs))
        bad = [names[i] if i < len(names) else f"monitor {i}"
               for i, e in enumerate(y.tolist()) if not math.isfinite(e)]
        raise IntegrationError(
            f"non-finite {what} at t = {sim.state.t:.9g} s in mode {compiled.key} "
            f"({', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}); check inputs and "
            "parameters; the last good state is kept")
