"""Directional derivatives (issue 27): fmi2GetDirectionalDerivative through fmpy's FMU2Slave and
fmi3GetDirectionalDerivative through FMU3Slave equal central finite differences taken here
through fmi2SetReal/fmi2GetReal at the communication point (the FMU state restored after each,
so no step is taken), for every Real output against every Real input, in each mode reached;
outputs that ModelStructure declares independent of the inputs have derivative 0 and the
differences agree; disk_ramp's rolling mode against the rolling disk's own equations (Newton-
Euler, written here); bad arguments answered with fmi2Error, the instance intact."""

import ctypes
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy import calloc, free
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy.logging import addLoggerProxy
from ctypes import byref
from fmpy.fmi3 import FMU3Slave

from fmu_src.builder.build import build
from scenarios import disk_ramp

ERROR = 3
H_FD = 1e-4        # relative step of the test's central differences
TOL = 1e-6         # |dd - fd| <= TOL (1 + |fd|): the differences' rounding (1e-15 |y| / h)
                   # and truncation (h^2 y''' / 6) are far below it for the outputs here


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("dirder")
    fmu2, fmu3 = build("disk_ramp", out, fmi=(2, 3), log=lambda m: None)
    belt = build("pendulum_belt", out, log=lambda m: None)
    return str(fmu2), str(fmu3), str(belt)


def _description(fmu):
    """Real outputs, Real inputs and the outputs ModelStructure declares dependent (names)."""
    md = read_model_description(fmu)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [v.name for v in md.modelVariables if v.causality == "output" and v.type == "Real"]
    ins = [v.name for v in md.modelVariables if v.causality == "input" and v.type == "Real"]
    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    names = [v.get("name") for v in root.iter("ScalarVariable")]
    dependent = {}
    for u in root.iterfind("ModelStructure/Outputs/Unknown"):
        deps = u.get("dependencies")
        assert deps is not None                       # declared for every output
        dependent[names[int(u.get("index")) - 1]] = {names[int(i) - 1] for i in deps.split()}
    return md, vr, outs, ins, dependent


def _slave2(fmu, tmp_path, name, messages=None):
    md, vr, outs, ins, dependent = _description(fmu)
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu, unzipdir=str(tmp_path / name)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)

    @fmi2CallbackLoggerTYPE
    def log(env, instance, status, category, message):
        if messages is not None:
            messages.append((status, message.decode(errors="replace")))
    cb = fmi2CallbackFunctions()
    cb.logger = log
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    addLoggerProxy(byref(cb))           # formats the message (the logger is variadic)
    s._keep = (log, cb)
    s.instantiate(callbacks=cb, loggingOn=True)
    return s, vr, outs, ins, dependent


def _fd(get, set_, get_state, set_state, vr, outs, name):
    """d outs / d name by central differences through set/get, the state restored after."""
    state = get_state()
    x0 = get([vr[name]])[0]
    h = H_FD * max(1.0, abs(x0))
    set_([vr[name]], [x0 + h])
    yp = np.array(get([vr[o] for o in outs]))
    set_([vr[name]], [x0 - h])
    ym = np.array(get([vr[o] for o in outs]))
    set_state(state)
    assert get([vr[name]])[0] == x0
    return (yp - ym) / (2 * h)


def _check_jacobian(dd, get, set_, get_state, set_state, vr, outs, ins, dependent):
    """Every column of the derivative against the differences; a combined seed is the same
    combination of columns; independent outputs are exactly 0.  Returns the matrix."""
    J = np.zeros((len(outs), len(ins)))
    before = get([vr[o] for o in outs])
    for k, name in enumerate(ins):
        J[:, k] = dd([vr[o] for o in outs], [vr[name]], [1.0])
        fd = _fd(get, set_, get_state, set_state, vr, outs, name)
        assert np.all(np.abs(J[:, k] - fd) <= TOL * (1 + np.abs(fd))), (name, J[:, k], fd)
        for i, o in enumerate(outs):
            if name not in dependent[o]:
                # exactly 0 from the FMU; the differences only see rounding (the constraint
                # residual's 1e-13 over the step 2h: 1e-9)
                assert J[i, k] == 0.0 and abs(fd[i]) <= TOL, (o, name, fd[i])
    seed = np.linspace(0.5, -1.5, len(ins))
    combined = dd([vr[o] for o in outs], [vr[n] for n in ins], seed.tolist())
    assert np.allclose(combined, J @ seed, rtol=1e-12, atol=1e-12)
    assert get([vr[o] for o in outs]) == before        # asking changes nothing
    return J


def _rolling_disk(p):
    """d F_f / d (F_ext, T_ext) of the rolling disk: m u1' = F_ext - m g sin(phi) - F_f,
    J u2' / r = T_ext - r F_f, u1' + u2' = 0 (F_f along -a1 at the contact point)."""
    m, J, r = p["m"], p["J"], p["r"]
    return J / (m * r * r + J), m * r / (m * r * r + J)


@pytest.mark.parametrize("embedding, formulation, method", [
    ("symbolic", "embedding", "symbolic"),       # eq 16 solved symbolically: differentiated
    ("numeric", "embedding", "numeric"),         # compiled terms (Sec 5.5): Richardson
    ("symbolic", "multipliers", "numeric")])     # the augmented full-state system
def test_disk_ramp_fmi2_against_differences_and_the_rolling_disk(fmus, tmp_path, embedding,
                                                                  formulation, method):
    fmu2, _, _ = fmus
    messages = []
    s, vr, outs, ins, dependent = _slave2(fmu2, tmp_path, "disk", messages)
    s.setString([vr["embedding"], vr["formulation"]], [embedding, formulation])
    assert ins == ["F_ext", "T_ext"] and {"N", "F_f", "slip", "q1", "u1"} <= set(outs)
    assert dependent["q1"] == dependent["u1"] == dependent["slip"] == set()    # states
    assert dependent["F_f"] == {"F_ext", "T_ext"}
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    t, seen = 0.0, {}
    for stop in (0.5, 3.0, 5.0):         # rolling, sliding, rolling again (tests/disk_analytic.py)
        while t < stop - 1e-9:
            s.doStep(t, 0.05)
            t += 0.05
        s.setReal([vr["F_ext"], vr["T_ext"]], [0.3 * stop, -0.2])     # off zero inputs
        mode = s.getInteger([vr["mode"]])[0]
        J = _check_jacobian(s.getDirectionalDerivative, s.getReal, s.setReal, s.getFMUstate,
                            s.setFMUstate, vr, outs, ins, dependent)
        seen[mode] = J
    rolling, sliding = seen[disk_ramp.ROLLING], seen[disk_ramp.SLIDING]
    f = outs.index("F_f")
    p = disk_ramp.build().defaults()
    exact = method == "symbolic"         # else rounding of the differences of affine outputs
    assert rolling[f] == pytest.approx(_rolling_disk(p), rel=1e-12 if exact else 1e-9)
    for J in (sliding[f], rolling[outs.index("N")]):   # F_f = mu N s; N = m g cos(phi)
        assert np.all(J == 0.0) if exact else np.all(np.abs(J) <= 1e-9)
    used = {m.split(", ")[-1].split()[0] for _, m in messages if "Jacobian of" in m}
    assert used == {method}
    s.terminate()
    s.freeInstance()


def test_disk_ramp_fmi3(fmus, tmp_path):
    _, fmu3, _ = fmus
    md = read_model_description(fmu3)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [v.name for v in md.modelVariables if v.causality == "output" and v.type == "Float64"]
    with zipfile.ZipFile(fmu3) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    assert root.find("CoSimulation").get("providesDirectionalDerivative") == "true"
    name_of = {str(r): n for n, r in vr.items()}
    dependent = {name_of[o.get("valueReference")]: {name_of[i] for i in
                                                     o.get("dependencies").split()}
                 for o in root.iterfind("ModelStructure/Output")}
    s = FMU3Slave(guid=md.guid, unzipDirectory=extract(fmu3, unzipdir=str(tmp_path / "x3")),
                  modelIdentifier="disk_ramp", instanceName="disk3")
    s.instantiate()
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    t = 0.0
    while t < 0.5 - 1e-9:
        s.doStep(t, 0.05)
        t += 0.05
    J = _check_jacobian(s.getDirectionalDerivative, s.getFloat64, s.setFloat64, s.getFMUState,
                        s.setFMUState, vr, outs, ["F_ext", "T_ext"], dependent)
    assert J[outs.index("F_f")] == pytest.approx(_rolling_disk(disk_ramp.build().defaults()),
                                                 rel=1e-12)
    with pytest.raises(FMICallException) as e:       # nSeed must be nKnowns
        s.getDirectionalDerivative([vr["F_f"]], [vr["F_ext"], vr["T_ext"]], [1.0])
    assert e.value.status == ERROR
    with pytest.raises(FMICallException):
        s.getDirectionalDerivative([vr["F_f"]], [vr["time"]], [1.0])
    assert s.getDirectionalDerivative([vr["F_f"]], [vr["T_ext"]], [1.0]) == \
        pytest.approx([J[outs.index("F_f"), 1]], rel=1e-15)
    s.terminate()
    s.freeInstance()


def test_pendulum_belt_every_mode(fmus, tmp_path):
    """The belt speed enters the contact's velocity constraint: with the tip on the belt the
    speeds follow it at the same instant (u_dep), so u1, u2 and the kinetic energy do."""
    _, _, belt = fmus
    s, vr, outs, ins, dependent = _slave2(belt, tmp_path, "belt")
    assert set(ins) == {"v_b_in", "F_tip_x", "F_tip_y"}
    assert "v_b_in" in dependent["u1"] and dependent["q1"] == set()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    t, modes = 0.0, set()
    for stop in np.arange(0.25, 3.01, 0.25):
        while t < stop - 1e-9:
            s.doStep(t, 0.05)
            t += 0.05
        s.setReal([vr["F_tip_x"], vr["F_tip_y"]], [0.2, -0.1])
        modes.add(s.getInteger([vr["mode"]])[0])
        _check_jacobian(s.getDirectionalDerivative, s.getReal, s.setReal, s.getFMUstate,
                        s.setFMUstate, vr, outs, ins, dependent)
    assert len(modes) >= 2, modes
    s.terminate()
    s.freeInstance()


def test_bad_arguments_are_errors_not_fatal(fmus, tmp_path):
    fmu2, _, _ = fmus
    messages = []
    s, vr, outs, ins, dependent = _slave2(fmu2, tmp_path, "bad", messages)

    def refused(unknowns, knowns, seed, text):
        n = len(messages)
        with pytest.raises(FMICallException) as e:
            s.getDirectionalDerivative(unknowns, knowns, seed)
        assert e.value.status == ERROR
        assert any(text in m for _, m in messages[n:]), (text, messages[n:])

    refused([vr["F_f"]], [vr["F_ext"]], [1.0], "not allowed in state INSTANTIATED")
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    refused([9999], [vr["F_ext"]], [1.0], "unknown value reference 9999")
    refused([vr["F_f"]], [9999], [1.0], "unknown value reference 9999")
    refused([vr["F_f"]], [vr["m"]], [1.0], "is not a known")            # a parameter
    refused([vr["F_f"]], [vr["N"]], [1.0], "is not a known")            # an output
    refused([vr["F_ext"]], [vr["F_ext"]], [1.0], "is not an unknown")   # an input
    refused([vr["mode"]], [vr["F_ext"]], [1.0], "is not an unknown")    # an Integer
    refused([vr["F_f"]], [vr["F_ext"]], [float("nan")], "not finite")
    # NULL arrays, through the C function itself
    fn = s.dll.fmi2GetDirectionalDerivative
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                   ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    one = (ctypes.c_uint * 1)(vr["F_f"])
    known = (ctypes.c_uint * 1)(vr["F_ext"])
    seed = (ctypes.c_double * 1)(1.0)
    res = (ctypes.c_double * 1)()
    for args, text in (((None, 1, known, 1, seed, res), "vUnknown_ref[] is NULL"),
                       ((one, 1, None, 1, seed, res), "vKnown_ref[] is NULL"),
                       ((one, 1, known, 1, None, res), "dvKnown[] is NULL"),
                       ((one, 1, known, 1, seed, None), "dvUnknown[] is NULL")):
        n = len(messages)
        assert fn(s.component, *args) == ERROR
        assert any(text in m for _, m in messages[n:]), (text, messages[n:])
    assert fn(s.component, one, 1, known, 1, seed, res) == 0           # the instance is intact
    assert s.getDirectionalDerivative([], [vr["F_ext"]], [1.0]) == []
    s.doStep(0.0, 0.1)
    s.terminate()
    s.freeInstance()
