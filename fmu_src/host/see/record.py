"""A run recorded at evenly spaced frames: its columns (t, q, u, parameters, inputs, discrete
variables, forces, multipliers), the mode at each frame and the events (time, guard, from, to,
impact).  Recorded from the engine (``from_engine``: every column), or from an FMU's or a
``embed-fmu simulate`` CSV's outputs (``from_table``: the columns the outputs name, parameters
at their values, discrete variables at their start values unless an output names them)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embed.base.errors import InputError


@dataclass
class Event:
    t: float
    label: str
    before: int
    after: int
    impact: bool = False


@dataclass
class Record:
    """A run at ``frames`` times ``t``; ``values`` name -> array (frames,) or a float."""

    scenario: str
    t: np.ndarray
    values: dict
    mode: np.ndarray
    events: list = field(default_factory=list)
    mode_names: dict = field(default_factory=dict)     # mode number -> name

    @property
    def frames(self) -> int:
        return len(self.t)

    def column(self, name) -> np.ndarray:
        """Column ``name`` over the frames (a constant broadcast); a force or multiplier the run
        did not record is NaN (no arrow is drawn); any other missing name is an error."""
        if name == "t":
            return self.t
        v = self.values.get(name)
        if v is None:
            if name.startswith("lambda_") or name in self.values.get("_forces", ()):
                return np.full(self.frames, np.nan)
            raise InputError(f"{self.scenario}: the run has no column {name!r}, which the "
                             "visuals need (an FMU or CSV run must output every coordinate)")
        return np.broadcast_to(np.asarray(v, dtype=float), (self.frames,))


def mode_names(sc) -> dict:
    return sc.mode_names()


def read_inputs(path) -> tuple:
    """An input CSV (header ``time,<input>,...``): (times, {input: values})."""
    try:
        with open(path, newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except OSError as exc:
        raise InputError(f"--input {path}: {exc.strerror}") from None
    head = [c.strip() for c in rows[0]]
    if head[0] != "time" or len(rows) < 2:
        raise InputError(f"--input {path}: needs a header 'time,<input>,...' and rows")
    try:
        data = np.array([[float(c) for c in r] for r in rows[1:]])
    except ValueError as exc:
        raise InputError(f"--input {path}: {exc}") from None
    return data[:, 0], {n: data[:, i + 1] for i, n in enumerate(head[1:])}


def from_engine(sc, params=None, inputs_csv=None, stop_time=10.0, fps=100.0, sim=None) -> Record:
    """Run scenario ``sc`` in the engine and record every column at ``fps`` frames per second.

    Parameters
    ----------
    sc : embed.Scenario
    params : dict, optional
        Parameter values (the scenario's defaults otherwise).
    inputs_csv : path, optional
        Inputs over time (``read_inputs``), interpolated linearly at each frame and held until
        the next (an FMI master's communication steps: the value at the step's start).
    """
    sim = sim or sc.simulator(params or {})
    m = sc.automaton.model
    t = np.arange(int(round(stop_time * fps)) + 1) / fps
    known = {v.name for v in sc.inputs}
    times, series = read_inputs(inputs_csv) if inputs_csv else (None, {})
    bad = sorted(set(series) - known)
    if bad:
        raise InputError(f"--input {inputs_csv}: {bad} are not inputs of {sc.name} "
                         f"({sorted(known)})")
    names = [str(s) for s in m.q + m.u]
    rows = {n: [] for n in names + list(sim.pnames) + list(sc.automaton.discrete)
            + [str(f) for f in m.forces] + ["lambda_" + c for c in sc.automaton.constraints]}
    mode = []
    for tk in t:
        if tk > sim.state.t:
            sim.advance(tk)
        if series:      # held over the next frame's step, as an FMI master sets them
            sim.set_inputs({k: float(np.interp(tk, times, v)) for k, v in series.items()})
        x = dict(zip(names, list(sim.q) + list(sim.u)))
        x.update(zip(sim.pnames, sim.state.pvec.tolist()))
        x.update(sim.state.discrete)
        x.update(sim.forces_now())
        x.update({"lambda_" + k: v for k, v in sim.constraint_forces().items()})
        for k, col in rows.items():
            col.append(x.get(k, 0.0))
        mode.append(sim.mode_number)
    impacts = {(round(i[0], 12), i[1]) for i in sim.impacts}
    events = [Event(e[0], e[1], _report(sc, e[2]), _report(sc, e[3]),
                    (round(e[0], 12), e[1].removeprefix("zeno:")) in impacts)
              for e in sim.state.events if e[0] <= t[-1] + 1e-12 and e[1] != "initial"]
    values = {k: v for k, v in {**sc.defaults(), **(params or {})}.items()
              if isinstance(v, (int, float))}
    values.update({k: np.array(v, dtype=float) for k, v in rows.items()})
    return Record(sc.name, t, values, np.array(mode), events, mode_names(sc))


def _report(sc, mode):
    m = sc.automaton.modes.get(mode)
    return mode if m is None or m.report is None else m.report


def from_table(sc, table: dict, params=None) -> Record:
    """A run from output columns (an FMU's result, a ``simulate`` CSV): ``table`` name -> array,
    with ``time``.  Events are where ``event_count`` steps (at ``last_event_time``), impacts where
    ``impact_count`` does; the guards' names are not in the outputs ("event").  An output that
    carries a coordinate, a speed, a discrete variable or a multiplier under another name
    (kneed_walker's ``hip_x`` is ``qx``) fills that column (``aliases``)."""
    t = np.asarray(table["time"], dtype=float)
    values = {**sc.defaults(), **{v.name: v.start for v in sc.inputs}, **(params or {})}
    values.update({k: v for k, v in sc.automaton.discrete.items()})
    values.update({k: np.asarray(v, dtype=float) for k, v in table.items() if k != "time"})
    for out, col in aliases(sc).items():
        if out in table and col not in table:
            values[col] = np.asarray(table[out], dtype=float)
    values["_forces"] = tuple(str(f) for f in sc.automaton.model.forces)
    mode = np.asarray(table.get("mode", np.ones_like(t)), dtype=int)
    events = []
    count = table.get("event_count")
    if count is not None:
        at = table.get("last_event_time", t)
        imp = table.get("impact_count")
        for i in range(1, len(t)):
            if count[i] != count[i - 1]:
                events.append(Event(float(at[i]), "event", int(mode[i - 1]), int(mode[i]),
                                    bool(imp is not None and imp[i] != imp[i - 1])))
    return Record(sc.name, t, values, mode, events, mode_names(sc))


def aliases(sc) -> dict:
    """Output name -> the run column it carries: a coordinate or speed (an output whose
    expression is that symbol alone), a discrete variable, or a multiplier ``lambda_<c>``."""
    import sympy as sp
    from sympy.core.function import AppliedUndef

    aut = sc.automaton
    coords = {str(s) for s in aut.model.q + aut.model.u}
    out = {}
    for o in getattr(aut, "declared_outputs", ()):
        if o.discrete is not None:
            out[o.name] = o.discrete
        elif o.multiplier is not None:
            out[o.name] = "lambda_" + o.multiplier
        elif o.expr is not None:
            e = sp.sympify(o.expr, strict=True)     # an expression object, never text
            name = str(e.func) if isinstance(e, AppliedUndef) else str(e)
            if name in coords:
                out[o.name] = name
    return out


def read_csv(path: Path) -> dict:
    """A ``simulate`` CSV (fmpy's: a header of names, rows of numbers) as name -> array."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    head = [c.strip().strip('"') for c in rows[0]]
    if not head or head[0] != "time":
        raise InputError(f"{path}: not a simulate CSV (its first column is not 'time')")
    data = np.array([[float(c) for c in r] for r in rows[1:] if r], dtype=float)
    return {n: data[:, i] for i, n in enumerate(head)}
