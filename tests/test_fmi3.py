"""The FMI 3.0 co-simulation FMU (``embed-fmu build --fmi 2,3``) of disk_ramp, stepped by fmpy
(FMU3Slave, simulate_fmu) and the reference fmusim: without early return the FMI 2.0 FMU's
results bit for bit; with it each located event time equals the piecewise analytic solution's
(tests/disk_analytic.py, Newton-Euler, independent of the engine) to 1e-12 s; bad calls answered
as FMI 3.0 says (illegal call sequences, bad value references, bad arguments)."""

import csv
import subprocess
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi3 import FMU3Slave
from fmpy.validation import validate_fmu

import masters
from disk_analytic import DiskAnalytic
from fmu_src.builder.build import build
from scenarios import disk_ramp

P = disk_ramp.build().defaults()
EVENTS = [e[0] for e in DiskAnalytic(P, 8.0).events]   # slide, roll, slide, roll
ERROR = 3


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("fmi3")
    fmu2, fmu3 = build("disk_ramp", out, fmi=(2, 3), log=lambda m: None)
    return str(fmu2), str(fmu3)


def test_model_description(fmus):
    fmu2, fmu3 = fmus
    assert validate_fmu(fmu3) == []
    with zipfile.ZipFile(fmu3) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        names = z.namelist()
    with zipfile.ZipFile(fmu2) as z:
        root2 = ET.fromstring(z.read("modelDescription.xml"))
    assert root.get("fmiVersion") == "3.0" and root.get("instantiationToken") == root2.get("guid")
    cs = root.find("CoSimulation").attrib
    for k in ("hasEventMode", "mightReturnEarlyFromDoStep", "canGetAndSetFMUState",
              "canSerializeFMUState"):
        assert cs[k] == "true", k
    assert "binaries/x86_64-linux/disk_ramp.so" in names
    assert not any(n.startswith("binaries/linux64/") for n in names)
    # the same variables: name, value reference, causality, unit, start
    v2 = {sv.get("name"): (sv.get("valueReference"), sv.get("causality"), sv[0].get("unit"),
                           sv[0].get("start")) for sv in root2.iter("ScalarVariable")}
    v3 = {}
    for v in root.find("ModelVariables"):
        start = v.find("Start").get("value") if v.tag == "String" else v.get("start")
        v3[v.get("name")] = (v.get("valueReference"), v.get("causality"), v.get("unit"), start)
    assert v3.pop("time")[1] == "independent"
    assert v2.pop("mode_number") == v2["mode"]      # FMI 2.0's Integer alias of the Enumeration
    assert v3 == v2
    md = read_model_description(fmu3)
    assert {u.name for u in md.unitDefinitions} >= {"kg", "m", "N", "s"}


def _events(rows):
    """(time, event_count) of each sample where event_count changed."""
    return [(float(b["time"]), int(b["event_count"])) for a, b in zip(rows, rows[1:])
            if b["event_count"] != a["event_count"]]


def test_fmpy_without_early_return_equals_fmi2_bit_for_bit(fmus):
    fmu2, fmu3 = fmus
    r2 = simulate_fmu(fmu2, stop_time=8.0, output_interval=0.01)
    r3 = simulate_fmu(fmu3, stop_time=8.0, output_interval=0.01)
    assert np.array_equal(r2["mode_number"], r2["mode"])   # FMI 2.0's alias of the Enumeration
    names2 = tuple(n for n in r2.dtype.names if n != "mode_number")
    assert names2 == r3.dtype.names and len(r2) == len(r3) == 801
    for n in names2:
        assert np.array_equal(r2[n], r3[n]), n
    assert r3["event_count"][-1] == len(EVENTS)


@pytest.mark.parametrize("event_mode", [False, True])
def test_fmpy_early_return_at_the_analytic_event_times(fmus, event_mode):
    _, fmu3 = fmus
    rows = simulate_fmu(fmu3, stop_time=8.0, output_interval=0.01, early_return_allowed=True,
                        use_event_mode=event_mode)
    seen = _events(rows)
    assert [c for _, c in seen] == [1, 2, 3, 4]
    for (t, _), exact in zip(seen, EVENTS):
        assert abs(t - exact) <= 1e-12, (t, exact)
        assert abs(t / 0.01 - round(t / 0.01)) > 1e-6       # between the output points
    # the grid goes on after each early return, and at most one extra sample (event mode's)
    times = rows["time"]
    grid = np.round(times[np.abs(times / 0.01 - np.round(times / 0.01)) < 1e-9] / 0.01)
    assert list(grid) == list(range(801))
    assert len(rows) == 801 + 4 * (2 if event_mode else 1)
    if event_mode:      # the event was handled before the return: event mode changes nothing
        at = [i for i, t in enumerate(times) if any(abs(t - e) < 1e-9 for e in EVENTS)]
        for i, j in zip(at[::2], at[1::2]):
            assert all(rows[n][i] == rows[n][j] for n in rows.dtype.names)


def _instance(fmu3, tmp_path, event_mode=False, early=False, messages=None):
    md = read_model_description(fmu3)
    d = extract(fmu3, unzipdir=str(tmp_path / "x"))
    s = FMU3Slave(guid=md.guid, unzipDirectory=d, modelIdentifier="disk_ramp",
                  instanceName="disk")

    def log(env, status, category, message):
        if messages is not None:
            messages.append((status, message.decode()))
    s.instantiate(eventModeUsed=event_mode, earlyReturnAllowed=early, logMessage=log)
    return s, {v.name: v.valueReference for v in md.modelVariables}


def test_fmu3slave_steps_events_and_event_mode(fmus, tmp_path):
    _, fmu3 = fmus
    s, vr = _instance(fmu3, tmp_path, event_mode=True, early=True)
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    assert s.updateDiscreteStates() == (False, False, False, False, False, 0.0)
    s.enterStepMode()
    t, found = 0.0, []
    while t < 8.0 - 1e-12:
        event, terminate, early, t_ok = s.doStep(t, min(1.0, 8.0 - t))
        assert not terminate and event == early
        if early:
            assert s.getFloat64([vr["time"]]) == [t_ok]
            assert s.getFloat64([vr["last_event_time"]]) == [t_ok]
            found.append(t_ok)
            s.enterEventMode()
            assert s.updateDiscreteStates()[0] is False      # nothing pending
            s.enterStepMode()
        else:
            assert t_ok == pytest.approx(t + min(1.0, 8.0 - t), abs=1e-15)
        t = t_ok
    assert len(found) == 4 and max(abs(a - b) for a, b in zip(found, EVENTS)) <= 1e-12
    s.terminate()
    s.freeInstance()


def test_fmu_state_and_serialization(fmus, tmp_path):
    _, fmu3 = fmus
    s, vr = _instance(fmu3, tmp_path, early=True)
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    outs = [vr[n] for n in ("q1", "u1", "u2", "last_event_time")]
    s.doStep(0.0, 0.2)
    state = s.getFMUState()
    data = s.serializeFMUState(state)
    first = s.doStep(0.2, 1.0)
    after = s.getFloat64(outs)
    assert first[2] and abs(first[3] - EVENTS[0]) <= 1e-12      # returned early at the event
    s.setFMUState(state)
    assert s.doStep(0.2, 1.0) == first and s.getFloat64(outs) == after
    s.freeFMUState(state)
    s.freeFMUState(state)                     # a NULL handle: ignored (FMI 3.0 2.3.7.3)
    again = s.deserializeFMUState(data)
    s.setFMUState(again)
    assert s.doStep(0.2, 1.0) == first and s.getFloat64(outs) == after
    s.freeFMUState(again)
    s.terminate()
    s.freeInstance()


def test_bad_calls_answered_as_the_standard_says(fmus, tmp_path):
    _, fmu3 = fmus
    messages = []
    s, vr = _instance(fmu3, tmp_path, messages=messages)

    def refused(call, *args, text=""):
        n = len(messages)
        with pytest.raises(FMICallException) as e:
            call(*args)
        assert e.value.status == ERROR
        assert any(text in m for _, m in messages[n:]), (text, messages[n:])

    # illegal call sequences (FMI 3.0 section 4.2.5)
    refused(s.doStep, 0.0, 0.1, text="not allowed in Instantiated")
    refused(s.exitInitializationMode, text="not allowed in Instantiated")
    refused(s.enterEventMode, text="eventModeUsed = false")
    s.enterInitializationMode(startTime=0.0)
    refused(s.enterInitializationMode, text="not allowed in Initialization Mode")
    s.exitInitializationMode()
    refused(s.updateDiscreteStates, text="not allowed in Step Mode")
    refused(s.enterStepMode, text="not allowed in Step Mode")
    # bad value references and arguments
    refused(s.getFloat64, [9999], text="unknown value reference 9999")
    refused(s.getFloat64, [vr["mode"]], text="is a Integer, not a Real")
    refused(s.getFloat32, [vr["q1"]], text="not a Float32 variable")
    refused(s.getInt64, [vr["mode"]], text="not a Int64 variable")
    refused(s.getFloat64, [vr["q1"]], 2, text="nValues = 2 but nValueReferences = 1")
    refused(s.setFloat64, [vr["q1"]], [1.0], text="q1 is an output")
    refused(s.setFloat64, [vr["time"]], [1.0], text="independent variable")
    refused(s.setFloat64, [vr["m"]], [2.0], text="fixed parameter")
    refused(s.doStep, 0.5, 0.1, text="is not the end of the previous step")
    refused(s.doStep, 0.0, -0.1, text="must be positive")
    assert s.getFloat32([]) == []              # no value references: nothing to refuse
    assert s.getInt32([vr["status"]]) == [10]  # the refused calls' code
    assert s.doStep(0.0, 0.1)[3] == pytest.approx(0.1, abs=1e-15)   # the instance is intact
    s.terminate()
    refused(s.doStep, 0.1, 0.1, text="not allowed in Terminated")
    s.freeInstance()


def test_wrong_instantiation_token_refused(fmus, tmp_path):
    _, fmu3 = fmus
    d = extract(fmu3, unzipdir=str(tmp_path / "x"))
    s = FMU3Slave(guid="{not-this-fmu}", unzipDirectory=d, modelIdentifier="disk_ramp")
    messages = []
    with pytest.raises(Exception, match="Failed to instantiate"):
        s.instantiate(logMessage=lambda env, st, cat, msg: messages.append(msg.decode()))
    assert any("GUID '{not-this-fmu}' does not match" in m for m in messages)


def _fmusim(fmu, out, *flags):
    argv, _ = masters.command("fmusim", fmu, out, 8.0, 0.01)
    proc = subprocess.run(argv[:-1] + list(flags) + [argv[-1]], env=masters.env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    with open(out) as f:
        # FMI 2.0's mode_number is its Integer alias of the Enumeration mode: not in FMI 3.0
        return [{k.strip('"'): v for k, v in r.items() if k.strip('"') != "mode_number"}
                for r in csv.DictReader(f)]


@pytest.mark.skipif(not (masters.MASTERS / "run").exists(), reason="no fmusim (tools/masters)")
def test_fmusim_fmi3(fmus, tmp_path):
    fmu2, fmu3 = fmus
    plain2 = _fmusim(fmu2, tmp_path / "fmi2.csv")
    plain3 = _fmusim(fmu3, tmp_path / "fmi3.csv")
    assert plain3 == plain2                   # the same numbers, printed alike
    early = _fmusim(fmu3, tmp_path / "early.csv", "--early-return-allowed")
    events = _fmusim(fmu3, tmp_path / "event.csv", "--early-return-allowed", "--event-mode-used")
    for rows in (early, events):
        seen = _events(rows)
        assert [c for _, c in seen] == [1, 2, 3, 4]
        for (t, _), exact in zip(seen, EVENTS):
            assert abs(t - exact) <= 1e-12, (t, exact)
    assert len(early) == len(plain3) + 4 and len(events) == len(plain3) + 8


@pytest.mark.skipif(not (masters.MASTERS / "run").exists(), reason="no fmusim (tools/masters)")
def test_fmusim_saves_a_state_fmpy_restores(fmus, tmp_path):
    """fmusim serializes the final state (pythonfmu3 crashed it there); fmpy deserializes it
    into a fresh instance, which then stands where fmusim stopped."""
    _, fmu3 = fmus
    state = tmp_path / "final.state"
    rows = _fmusim(fmu3, tmp_path / "s.csv", "--final-fmu-state-file", str(state))
    s, vr = _instance(fmu3, tmp_path)
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    restored = s.deserializeFMUState(state.read_bytes())
    s.setFMUState(restored)
    names = ("q1", "u1", "u2", "last_event_time")
    got = s.getFloat64([vr[n] for n in names]) + s.getFloat64([vr["time"]])
    assert got == pytest.approx([float(rows[-1][n]) for n in names] + [8.0], rel=1e-15, abs=1e-15)
    assert s.getInt32([vr["event_count"]]) == [4]
    s.freeFMUState(restored)
    s.freeInstance()
