"""The FMU state of a slave (FMI 2.0 Sec 2.1.8): taken, checked whole, applied, serialized.

A state is everything that decides an instance's future, as plain values: its FMI state
(``fmu_src.runtime.fmi2.State``), communication time, variables, inputs, the simulator's state
(``embed.hybrid.state``) and the scenario extension's.  It names its FMU (the GUID compiled into
the loader) and its layout (``STATE_FORMAT``); one of another FMU or build is refused.  A
state is checked whole before anything of it is applied, and applied all or nothing (the
slave restores what it had if applying fails).  Serialized, a state carries a SHA-256 checksum of
its text: one changed after it was serialized is refused (issue 33), as is one whose times
do not fit (before its start, the simulator elsewhere than the communication point).
"""

from __future__ import annotations

import json
import math

import numpy as np
from pythonfmu import Fmi2Causality

from embed import EmbedError
from embed.base.sha import sha256
from fmu_src.runtime.fmi2 import CallError, State

STATE_FORMAT = 2                 # version of the FMU state's layout
MAGIC = b"embed-fmu-state sha256 "   # what a serialized state begins with, then its checksum
TIME_TOL = 1e-9                  # relative: the simulator's time at the communication point


def snapshot(slave) -> dict:
    """Everything that decides the slave's future, as plain values."""
    return {"format": STATE_FORMAT, "guid": slave.model_guid,
            "fmi_state": State.NAMES[slave.fmi_state], "t_comm": slave.t_comm,
            "start_time": slave.start_time, "status": slave.status,
            "variables": {v.name: getattr(slave, v.name) for v, causality
                          in slave.variables.specs.values() if causality != Fmi2Causality.output},
            "inputs": dict(slave.variables.good_inputs), "inputs_set": sorted(slave.variables.inputs_set),
            "sim": slave.sim.get_state() if slave.sim is not None else None,
            "ext": slave.ext.state() if slave.ext is not None else None}


def check(slave, state) -> None:
    """CallError naming what is wrong unless ``state`` is a whole state of this FMU and build,
    every variable's value one the slave would accept; nothing changes."""
    if not isinstance(state, dict) or "invalid" in state:
        raise CallError("not a valid FMU state: "
                        f"{state.get('invalid') if isinstance(state, dict) else state!r}")
    if state.get("guid") != slave.model_guid or state.get("format") != STATE_FORMAT:
        raise CallError(f"the FMU state belongs to another FMU or build (guid "
                        f"{state.get('guid')!r}, this FMU {slave.model_guid!r})")
    if state.get("fmi_state") not in State.BY_NAME:
        raise CallError(f"FMU state: unknown fmi_state {state.get('fmi_state')!r}")
    for key in ("t_comm", "start_time"):
        if not isinstance(state.get(key), (int, float)) or not math.isfinite(state[key]):
            raise CallError(f"FMU state: {key} = {state.get(key)!r} is not a finite number")
    if state["t_comm"] < state["start_time"]:
        raise CallError(f"FMU state: its communication point t = {state['t_comm']!r} s lies "
                        f"before its start time {state['start_time']!r} s")
    names = {v.name: vr for vr, (v, c) in slave.variables.specs.items() if c != Fmi2Causality.output}
    variables = state.get("variables")
    if not isinstance(variables, dict) or set(variables) != set(names):
        raise CallError("FMU state: its variables are not this FMU's")
    for name, value in variables.items():
        try:
            slave.variables.check_value(names[name], value, getattr(slave, name))
        except (CallError, TypeError, ValueError) as exc:
            raise CallError(f"FMU state: {exc}") from None
    if (state.get("sim") is None) != (state["fmi_state"] in ("INSTANTIATED",
                                                             "INITIALIZATION_MODE")):
        raise CallError("FMU state: its simulator does not match its FMI state")
    sim = state.get("sim")
    if sim is not None and slave.sim is None:
        raise CallError("a state taken after initialization cannot be restored before "
                        "this instance has initialized")
    if sim is not None and (not isinstance(sim, dict)
                            or not isinstance(sim.get("pvec"), (list, np.ndarray))
                            or len(sim["pvec"]) != len(slave.sim.pvec)):
        raise CallError("FMU state: its parameter vector is not this model's")
    if sim is not None:
        t, tc = sim.get("t"), state["t_comm"]
        if not isinstance(t, (int, float)) or not abs(t - tc) <= TIME_TOL * max(1.0, abs(tc)):
            raise CallError(f"FMU state: its simulator is at t = {t!r} s, not at its "
                            f"communication point {tc!r} s")

def apply(slave, state) -> None:
    """The checked ``state`` applied to the slave (its simulator and extension too)."""
    for name, value in state["variables"].items():
        setattr(slave, name, value)
    slave.fmi_state = State.BY_NAME[state["fmi_state"]]
    slave.t_comm, slave.start_time = float(state["t_comm"]), float(state["start_time"])
    slave.status = int(state["status"])
    slave.broken = None             # a state from before a failure steps again
    slave.variables.good_inputs = {k: float(v) for k, v in state["inputs"].items()}
    slave.variables.inputs_changed = True     # the variables may differ from what the engine took
    slave.variables.inputs_set = set(state["inputs_set"])
    if state.get("ext") is not None and slave.ext is not None:
        slave.ext.set_state(state["ext"])     # first: it may install what the state uses
    if state["sim"] is not None:
        slave.sim.set_state(state["sim"])
        check_simulator(slave, state)

def check_simulator(slave, state):
    """The simulator as restored: its arrays of the lengths its mode needs, finite, and
    its parameters those of the state's variables (checked when they were set)."""
    sim = slave.sim
    if len(sim.x) != sim.compiled_mode.nx:
        raise EmbedError(f"x has {len(sim.x)} entries; mode {sim.mode} needs {sim.compiled_mode.nx}")
    if not (math.isfinite(sim.t) and np.isfinite(sim.x).all() and np.isfinite(sim.mon).all()
            and np.isfinite(sim.pvec).all()):
        raise EmbedError("the state's values are not finite")
    if len(sim.compiled_mode.monitors(sim.t, sim.x, sim.pvec)) != len(sim.mon):
        raise EmbedError(f"mon has {len(sim.mon)} entries, not those of mode {sim.mode}")
    for v in slave.sc.parameters:
        if v.name in sim.pnames and sim.param(v.name) != float(state["variables"][v.name]):
            raise EmbedError(f"its parameter vector says {v.name} = {sim.param(v.name)}, "
                             f"its variables {state['variables'][v.name]}")
    slave.sc.check_feasible(sim)       # what the model allows (issue 33)


def to_bytes(state: dict) -> bytes:
    """The state serialized: ``MAGIC``, the SHA-256 of the text (hex), a newline, the text
    (JSON, arrays as lists)."""
    text = json.dumps(state, default=_jsonable, allow_nan=True).encode("utf-8")
    return MAGIC + sha256(text).hexdigest().encode("ascii") + b"\n" + text


def from_bytes(data) -> dict:
    """A serialized state parsed; ValueError naming what is wrong if it does not begin with
    ``MAGIC``, its checksum does not match its text (changed after it was serialized) or the
    text is not a JSON object."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise ValueError("it does not begin with this FMU's state header (not a state of an "
                         "embed FMU, or its beginning was changed)")
    head, sep, text = data[len(MAGIC):].partition(b"\n")
    if not sep or sha256(text).hexdigest().encode("ascii") != head:
        raise ValueError("its SHA-256 checksum does not match its content: it was changed "
                         "after it was serialized")
    state = json.loads(text.decode("utf-8"))
    if not isinstance(state, dict):
        raise ValueError("not a JSON object")
    return state


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    raise TypeError(f"cannot serialize {type(o).__name__} in the FMU state")


def restore(slave, state):
    """fmi2SetFMUstate: ``state`` checked whole first (its FMU, its layout, every variable's
    value), then applied; on any failure the slave is as it was (CallError)."""
    check(slave, state)
    saved = snapshot(slave)
    try:
        apply(slave, state)
    except Exception as exc:  # noqa: BLE001 - back to where we were, then refuse
        apply(slave, saved)
        raise CallError(f"the FMU state could not be restored ({type(exc).__name__}: "
                        f"{exc}); the instance is unchanged") from exc
