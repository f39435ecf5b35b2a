"""One case of a study run to its row of results (issue 16), through the engine or the FMU.

``engine``: a Simulator of the model's Scenario (``Scenario.simulator``), stepped to each
communication point with ``advance``; the events and their exact located times come from
its event list.  ``fmu``: the FMU stepped by fmpy's FMU2Slave (``fmu_src.host.master.FmuRunner``),
a fresh instance per case, the FMU extracted once per worker process, its ``embedding`` set
to ``symbolic`` as the engine's (background embedding runs on the wall clock: not
reproducible).  Either way a case is
independent of every other (its own simulator or instance from the start values) and
deterministic: the same values give the same row wherever and whenever it runs.  The
communication points are the running sum t + step, as a master's are.

A case that fails (a parameter the model refuses, an integration that fails) is a row with
the ``status`` code the FMU would report (fmu_src/runtime/status.py), the error text and the time
reached; its summaries are empty.  Nothing of it escapes: the study goes on.
"""

from __future__ import annotations

import atexit
import math
import shutil
import time
from dataclasses import dataclass

import numpy as np

from embed.base.errors import EmbedError
from fmu_src.runtime.status import INPUT_REJECTED, INTERNAL, OK, status_of
from fmu_src.host.study_spec import summary_column

# the engine's bookkeeping outputs a summary reads at every communication point
NEEDS = {"final_mode": ("mode",), "events": ("event_count",), "impacts": ("impact_count",),
         "max_residual": ("constraint_residual",), "first_entry": ("mode",),
         "event_times": ()}
_CACHE = {}        # per worker process: a plan's model (Scenario, or extracted FMU)


@dataclass(frozen=True)
class Plan:
    """What every case of a study shares, checked on the client (``fmu_src.host.study.plan``):
    ``runner`` engine or fmu, ``model`` (a MODEL argument, or the FMU's path), ``build``
    (options of build()), ``kinds`` (varied name -> parameter or input), the run, the kept
    ``outputs``, the ``summaries`` and ``modes`` (first_entry's argument -> mode number)."""

    runner: str
    model: str
    build: tuple = ()
    kinds: tuple = ()           # ((name, "parameter" | "input"), ...)
    stop_time: float = 1.0
    step: float = 0.01
    solver: str = "rk4"
    h_max: float = 1e-3
    outputs: tuple = ()
    summaries: tuple = ()
    modes: tuple = ()           # ((first_entry argument, mode number), ...)

    @property
    def record(self) -> tuple:
        """The outputs read at every communication point: the kept ones and what the
        summaries need (their event bookkeeping for the FMU)."""
        names = list(self.outputs)
        for s in self.summaries:
            kind, _, arg = s.partition(":")
            names += [arg] if kind in ("final", "max", "min") else list(NEEDS[kind])
            if self.runner == "fmu" and kind in ("event_times", "first_entry"):
                names += ["event_count", "last_event_time"]
        return tuple(dict.fromkeys(names))


def run_chunk(plan: Plan, cases: list) -> dict:
    """Run ``cases`` ([(number, values)]) one after another: the Dask task.  Returns
    {"rows": [row dict per case], "series": [(number, {output: array})], "busy": seconds,
    "cpu": the worker process's CPU seconds}."""
    started, cpu = time.perf_counter(), time.process_time()
    rows, series = [], []
    for number, values in cases:
        row, kept = run_case(plan, number, values)
        rows.append(row)
        if kept is not None:
            series.append((number, kept))
    if plan.runner == "engine":     # a Dask worker may be ended without exiting: write now
        from embed.modes import cache
        cache.save_all()
    return {"rows": rows, "series": series, "busy": time.perf_counter() - started,
            "cpu": time.process_time() - cpu}


def run_case(plan: Plan, number: int, values: dict):
    """One case: (its row, its kept time series or None).  Never raises for the case's own
    failures."""
    started = time.perf_counter()
    kinds = dict(plan.kinds)
    params = {k: v for k, v in values.items() if kinds[k] == "parameter"}
    inputs = {k: v for k, v in values.items() if kinds[k] == "input"}
    run = _engine_run if plan.runner == "engine" else _fmu_run
    rec = Record(plan)
    try:
        extra = run(plan, params, inputs, rec)
        status, error = OK, ""
        summaries = summarize(plan, rec, extra)
    except Failure as exc:
        status, error, summaries = exc.status, exc.message, {}
    except Exception as exc:  # noqa: BLE001 - a case's failure is its row, never the study's
        status, error, summaries = status_of(exc), f"{type(exc).__name__}: {exc}", {}
    row = {"case": number, **values,
           **{summary_column(s): summaries.get(summary_column(s)) for s in plan.summaries},
           "status": status, "error": error, "t_reached": rec.t_reached,
           "seconds": time.perf_counter() - started}
    kept = None
    if plan.outputs and rec.k:
        kept = {"time": rec.time[:rec.k].copy(),
                **{n: rec.data[n][:rec.k].copy() for n in plan.outputs}}
    return row, kept


class Failure(EmbedError):
    """A case that failed with a known status code (fmu_src/runtime/status.py) and message: what the
    FMU refused or reported, or a value the engine would refuse."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class Record:
    """The recorded outputs at the communication points 0, step, ... (preallocated)."""

    def __init__(self, plan: Plan):
        n = int(round(plan.stop_time / plan.step)) + 1
        self.time = np.empty(n)
        self.data = {name: np.empty(n) for name in plan.record}
        self.k = 0
        self.t_reached = 0.0

    def add(self, t: float, values) -> None:
        self.time[self.k] = t
        for name, v in zip(self.data, values):
            self.data[name][self.k] = v
        self.k += 1
        self.t_reached = t


# ------------------------------------------------------------------------------ summaries
def summarize(plan: Plan, rec: Record, extra: dict) -> dict:
    """The summaries of a finished run: from the recorded points and, through the engine,
    its exact event list ``extra["events"]`` ([(t, from mode, to mode)], reported numbers)."""
    out, d = {}, rec.data
    modes = dict(plan.modes)
    for s in plan.summaries:
        kind, _, arg = s.partition(":")
        col = summary_column(s)
        if kind == "final_mode":
            out[col] = int(d["mode"][-1])
        elif kind == "events":
            out[col] = int(d["event_count"][-1])
        elif kind == "impacts":
            out[col] = int(d["impact_count"][-1])
        elif kind == "max_residual":
            out[col] = float(np.max(d["constraint_residual"]))
        elif kind in ("final", "max", "min"):
            x = d[arg]
            out[col] = float(x[-1] if kind == "final" else x.max() if kind == "max" else x.min())
        elif kind == "event_times":
            out[col] = (extra["event_times"] if "event_times" in extra
                        else _fmu_event_times(d["event_count"], d["last_event_time"]))
        elif kind == "first_entry":
            out[col] = (_first_entry(extra["events"], int(d["mode"][0]), modes[arg])
                        if "events" in extra else
                        _fmu_first_entry(d["mode"], d["last_event_time"], modes[arg]))
    return out


def _first_entry(events, start_mode: int, mode: int) -> float:
    """First time ``mode`` is entered: 0 if the run starts in it, else the first event into it
    from another mode, else NaN."""
    if start_mode == mode:
        return 0.0
    return next((t for t, frm, to in events if to == mode and frm != mode), math.nan)


def _fmu_first_entry(mode, last_event_time, target: int) -> float:
    """Through an FMU: the first communication point in ``target`` mode; it was entered at
    that step's last event (the mode after a step is the last event's)."""
    hits = np.flatnonzero(mode == target)
    if not len(hits):
        return math.nan
    k = int(hits[0])
    return 0.0 if k == 0 else float(last_event_time[k])


def _fmu_event_times(event_count, last_event_time) -> list:
    """Through an FMU: per step with events, NaN for all but the last (whose time is
    last_event_time); the located times of the others are not visible at the step's end."""
    out = []
    for k in range(1, len(event_count)):
        new = int(event_count[k] - event_count[k - 1])
        out += [math.nan] * (new - 1) + [float(last_event_time[k])] if new > 0 else []
    return out


# ------------------------------------------------------------------------------ engine
def scenario(plan: Plan):
    """The plan's Scenario, built once per process (``fmu_src.builder.source``)."""
    key = ("engine", plan.model, plan.build)
    if key not in _CACHE:
        from fmu_src.builder.source import resolve
        _CACHE[key] = resolve(plan.model).load(dict(plan.build))
    return _CACHE[key]


def engine_problems(sc, params: dict, inputs: dict) -> list:
    """What the FMU would refuse of these values (fmu_src.runtime.slave's rules): a parameter's
    (embed.check.check.check_parameters) or an input's (``Var.problem``)."""
    from embed.check.check import check_parameters

    problems = [f.message for f in check_parameters(sc, params) if f.level == "error"]
    variables = {v.name: v for v in sc.inputs}
    problems += [p for p in (variables[name].problem(x) for name, x in inputs.items()) if p]
    return problems


def _engine_run(plan: Plan, params: dict, inputs: dict, rec: Record) -> dict:
    sc = scenario(plan)
    problems = engine_problems(sc, params, inputs)
    if problems:
        raise Failure(INPUT_REJECTED, "; ".join(problems))
    p = {**sc.defaults(), **params}
    sim = sc.simulator(p, solver=plan.solver, h_max=plan.h_max, inputs=inputs)
    readers = [sc.reader(name) for name in rec.data]
    rec.add(0.0, [f(sim) for f in readers])
    t = 0.0
    for _ in range(rec.time.size - 1):
        t = t + plan.step
        sim.advance(t)
        rec.add(t, [f(sim) for f in readers])
    report = {key: (key if m.report is None else m.report)
              for key, m in sim.automaton.modes.items()}
    events = [(float(te), report.get(frm, frm), report.get(to, to))
              for te, _, frm, to in sim.events]
    return {"events": events, "event_times": [e[0] for e in events]}


# ------------------------------------------------------------------------------ FMU
def extracted(path: str):
    """(model description, extraction folder) of the FMU at ``path``, once per process (the
    folder is removed when the process ends)."""
    key = ("fmu", path)
    if key not in _CACHE:
        from fmpy import extract, read_model_description
        md = read_model_description(path)
        folder = extract(path)
        atexit.register(shutil.rmtree, folder, True)
        _CACHE[key] = (md, folder)
    return _CACHE[key]


def _fmu_messages(runner) -> str:
    """The FMU's warnings and errors (fmpy status >= warning), newest last."""
    return " | ".join(m for s, m in runner.messages if s >= 1 and m)


def _fmu_run(plan: Plan, params: dict, inputs: dict, rec: Record) -> dict:
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import fmi2OK

    from fmu_src.host.master import FmuRunner

    md, folder = extracted(plan.model)
    r = FmuRunner(plan.model, initialize=False, unzip_dir=folder, md=md)
    names = list(rec.data)
    try:
        try:
            r.fmu.setupExperiment(startTime=0.0)
            r.fmu.enterInitializationMode()
            run = {"solver": plan.solver, "h_max": plan.h_max, "embedding": "symbolic"}
            r.set(**{k: v for k, v in run.items() if k in r.vars}, **params, **inputs)
            r.fmu.exitInitializationMode()
        except FMICallException as exc:
            raise Failure(_fmu_status(r), _fmu_messages(r) or str(exc)) from None
        read = _fmu_reader(r, names)
        rec.add(0.0, read())
        for _ in range(rec.time.size - 1):
            try:
                ok = r.step(plan.step) == fmi2OK
            except FMICallException as exc:            # fmi2Error: the model is broken
                raise Failure(_fmu_status(r), _fmu_messages(r) or str(exc)) from None
            if not ok:
                raise Failure(_fmu_status(r), _fmu_messages(r) or "doStep discarded")
            rec.add(r.t, read())
    finally:
        r.close()
    return {}


def _fmu_status(r) -> int:
    """The FMU's ``status`` output, else internal error."""
    try:
        return int(r.get("status")["status"])
    except Exception:  # noqa: BLE001 - the instance may refuse every call now
        return INTERNAL


def _fmu_reader(r, names):
    """A function returning the outputs ``names`` in order (one getReal/getInteger/
    getBoolean call per type)."""
    groups = {}
    for i, name in enumerate(names):
        v = r.vars[name]
        groups.setdefault(v.type, ([], []))
        groups[v.type][0].append(i)
        groups[v.type][1].append(v.valueReference)
    calls = {"Real": r.fmu.getReal, "Integer": r.fmu.getInteger, "Enumeration": r.fmu.getInteger,
             "Boolean": r.fmu.getBoolean}

    def read():
        out = [0.0] * len(names)
        for kind, (where, vrs) in groups.items():
            for i, x in zip(where, calls[kind](vrs)):
                out[i] = x
        return out
    return read


__all__ = ["Plan", "run_chunk", "run_case", "engine_problems", "scenario", "extracted"]
