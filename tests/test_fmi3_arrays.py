"""FMI 3.0 arrays and variable dependencies (issue 27): disk_fence's fence given as the Float64
array fence_points[32][2] (with fence_point_count), set by fmpy's FMU3Slave and by the
reference fmusim, runs as the FMI 2.0 FMU given the same fence its way (fence_curve = the
spline's text, fence_length = the last point's s) bit for bit; the disk meets the fence at the
time of the ramp's own solution, written here (frictionless contact: the disk slides down the
ramp from rest, q4'' = -g sin phi), and rides on the cubic spline through the points computed
here by scipy; bad arrays are refused naming the variable, nothing set; fmi3GetVariableDependencies
answers what the FMI 2.0 modelDescription declares.  (fmuCheck, FMI Library 2.0.3, reads no FMI
3.0: "This version of FMI standard is not supported (fmiVersion=3.0)".)"""

import csv
import math
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from ctypes import byref, c_double, c_int, c_size_t

import masters
import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Slave, fmi3Clock, fmi3DependencyKind, fmi3ValueReference
from scipy.interpolate import CubicSpline

from fmu_src.builder.build import build
from scenarios.disk_fence import points
from scenarios.disk_fence.modes import FENCE_BASE
from scenarios.disk_fence.profile import GEOMETRY_BAD_PARAMETER, FenceProfile, GeometryError

POINTS = [(1.5, 0.05), (3.0, 0.3), (4.5, 0.7), (6.0, 1.1)]
FLAT = [x for p in POINTS for x in p] + [0.0] * (2 * points.N_MAX - 2 * len(POINTS))
H, T_ANNOUNCE, T_END = 0.01, 7.0, 9.5
WALL_CLOCK = ("embed_latency",)      # wall seconds: never equal between two runs
ERROR = 3


def spline():
    """The interpolant of the points, with P = (0, 0) clamped (h'(0) = 0) and a natural end."""
    return CubicSpline([0.0] + [s for s, _ in POINTS], [0.0] + [h for _, h in POINTS],
                       bc_type=((1, 0.0), (2, 0.0)))


def test_the_fence_is_the_cubic_spline_through_the_points_and_its_text_is_the_same_profile():
    text = points.spline_text(POINTS)
    assert len(text) <= 400                                  # fits fence_curve (the FMI 2.0 way)
    assert FenceProfile.from_text(text).h == points.profile(POINTS).h
    ref = spline()
    s = np.concatenate([np.linspace(0.0, 6.0, 601), [p[0] for p in POINTS]])
    h, dh, ddh = points.profile(POINTS).evaluator()(s)
    for mine, k in ((h, 0), (dh, 1), (ddh, 2)):
        assert np.max(np.abs(mine - ref(s, k))) <= 1e-12, k
    assert points.from_description(points.description(POINTS)) == POINTS
    for bad, why in (([(1.0, 0.1), (1.0, 0.2)], "must be larger"),
                     ([(-1.0, 0.0)], "must be larger"),
                     ([(1.0, math.inf)], "not finite"),
                     ([], "needs 1 to 32"),
                     ([(k + 1.0, 0.0) for k in range(33)], "needs 1 to 32")):
        with pytest.raises(GeometryError, match=why) as e:
            points.profile(bad)
        assert e.value.code == GEOMETRY_BAD_PARAMETER


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    out = tmp_path_factory.mktemp("fmi3_arrays")
    return {name: tuple(str(p) for p in build(name, out / name, fmi=(2, 3), log=lambda m: None))
            for name in ("disk_fence", "disk_ramp")}


def _open(fmu, tmp_path, cls, tag, messages):
    md = read_model_description(fmu)
    d = extract(fmu, unzipdir=str(tmp_path / tag))
    s = cls(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
            instanceName=tag)
    if cls is FMU3Slave:
        s.instantiate(logMessage=lambda env, st, cat, msg: messages.append((st, msg.decode())))
    else:
        s.instantiate()
    return s, md, {v.name: v.valueReference for v in md.modelVariables}


def messages_append(messages, status, message):
    messages.append((status, message.decode()))


def _refused(messages, call, *args, text):
    n = len(messages)
    with pytest.raises(FMICallException) as e:
        call(*args)
    assert e.value.status == ERROR
    assert any(st == ERROR and text in m for st, m in messages[n:]), (text, messages[n:])


def _run(s, vr, outs, get, announce):
    """Step to T_END at H, announcing fence version 1 at T_ANNOUNCE: rows of outputs."""
    s.enterInitializationMode(startTime=0.0) if isinstance(s, FMU3Slave) else \
        (s.setupExperiment(startTime=0.0), s.enterInitializationMode())
    s.exitInitializationMode()
    rows, t = [], 0.0
    for k in range(round(T_END / H)):
        if k == round(T_ANNOUNCE / H):
            announce()
        s.doStep(currentCommunicationPoint=t, communicationStepSize=H)
        t = (k + 1) * H
        rows.append(get(outs))
    return rows


def _dependencies(s, vr):
    """fmi3GetNumberOfVariableDependencies / fmi3GetVariableDependencies called directly (fmpy
    0.3's getNumberOfVariableDependencies passes the type c_size_t, not an instance)."""
    n = c_size_t()
    s.fmi3GetNumberOfVariableDependencies(s.component, vr, byref(n))
    m = n.value
    ed, ind, ei = (c_size_t * m)(), (fmi3ValueReference * m)(), (c_size_t * m)()
    kinds = (fmi3DependencyKind * m)()
    s.fmi3GetVariableDependencies(s.component, vr, ed, ind, ei, kinds, m)
    assert list(ed) == list(ei) == [0] * m and list(kinds) == [5] * m     # whole, fmi3Dependent
    return sorted(ind)


def _declared(fmu2):
    """Output value reference -> the value references of its dependencies (FMI 2.0 XML)."""
    with zipfile.ZipFile(fmu2) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    sv = list(root.find("ModelVariables"))
    vr_of = {i: int(v.get("valueReference")) for i, v in enumerate(sv, start=1)}
    return {vr_of[int(u.get("index"))]: sorted(vr_of[int(i)] for i in
                                                (u.get("dependencies") or "").split())
            for u in root.iterfind("ModelStructure/Outputs/Unknown")}


def test_fence_array_runs_as_the_fmi2_text_bit_for_bit_and_meets_the_fence_on_time(pairs,
                                                                                   tmp_path):
    fmu2, fmu3 = pairs["disk_fence"]
    msgs = []
    s3, md3, vr3 = _open(fmu3, tmp_path, FMU3Slave, "f3", msgs)
    s2, md2, vr2 = _open(fmu2, tmp_path, FMU2Slave, "f2", [])
    for s, vr in ((s3, vr3), (s2, vr2)):
        s.setString([vr["embedding"]], ["symbolic"])
    # bad arrays: refused naming the variable, nothing set, the instance usable
    pts, count = vr3["fence_points"], vr3["fence_point_count"]
    _refused(msgs, s3.setFloat64, [pts], FLAT[:-1], text="fence_points (32x2) has 64 values "
             "but 63 were given")
    _refused(msgs, s3.setFloat64, [pts, vr3["fence_length"]], FLAT, text="has 64 values but 63")
    _refused(msgs, s3.setFloat64, [pts], FLAT[:5] + [math.nan] + FLAT[6:],
             text="element 6 of 64: fence_points = nan is not finite")
    _refused(msgs, s3.setFloat64, [pts], [math.inf] + FLAT[1:], text="fence_points = inf")
    _refused(msgs, s3.setInt32, [count], [points.N_MAX + 1],
             text="fence_point_count = 33 lies outside [0, 32]")
    assert s3.getFloat64([pts], 64) == [0.0] * 64 and s3.getInt32([count]) == [0]
    s3.setFloat64([pts, vr3["fence_length"]], FLAT + [6.7])         # an array and a scalar
    s3.setInt32([count], [len(POINTS)])
    assert s3.getFloat64([pts], 64) == FLAT and s3.getInt32([count]) == [len(POINTS)]
    # dependencies: the FMI 2.0 modelDescription's; a value reference that is no unknown refused
    declared = _declared(fmu2)
    outputs = [v.valueReference for v in md3.modelVariables if v.causality == "output"]
    assert sorted(outputs) == sorted(declared)
    for vr in outputs:
        assert _dependencies(s3, vr) == declared[vr]
    _refused(msgs, lambda: s3.fmi3GetNumberOfVariableDependencies(s3.component, pts,
                                                                 byref(c_size_t())),
             text=f"value reference {pts} is not an unknown")

    names = [v.name for v in md3.modelVariables if v.causality == "output"
             and v.type == "Float64" and v.name not in WALL_CLOCK]
    ints = [v.name for v in md3.modelVariables if v.causality == "output" and v.type == "Int32"]
    rows3 = _run(s3, vr3, None, lambda _: (s3.getFloat64([vr3[n] for n in names]),
                                           s3.getInt32([vr3[n] for n in ints])),
                 lambda: s3.setInt32([vr3["fence_version"]], [1]))
    s2.setString([vr2["fence_curve"]], [points.spline_text(POINTS)])
    s2.setReal([vr2["fence_length"]], [POINTS[-1][0]])
    rows2 = _run(s2, vr2, None, lambda _: (s2.getReal([vr2[n] for n in names]),
                                           s2.getInteger([vr2[n] for n in ints])),
                 lambda: s2.setInteger([vr2["fence_version"]], [1]))
    assert rows3 == rows2                                                     # bit for bit
    # the ramp's own solution: from rest, q4 = -g sin(phi) t^2 / 2 reaches L at t_hit
    start = {v.name: float(v.start) for v in md3.modelVariables if v.causality == "parameter"
             and v.type == "Float64"}
    L, phi, g, r = start["L"], start["phi"], start["g"], start["r"]
    t_hit = math.sqrt(2 * L / (-g * math.sin(phi)))
    at = {n: i for i, n in enumerate(names)}
    modes = [(k + 1) * H for k, (f, i) in enumerate(rows3) if i[ints.index("mode")] == 3]
    assert modes[0] == pytest.approx(math.ceil(t_hit / H) * H, abs=1e-9)
    first = next(f for f, i in rows3 if i[ints.index("mode")] == 3)
    assert abs(first[at["last_event_time"]] - t_hit) <= 1e-12
    # on the fence: the centre at P + s t + h(s) n + r N(s) of the scipy spline, s = q4 - L
    ref, worst = spline(), []
    tx, ty, nx, ny = math.cos(phi), math.sin(phi), -math.sin(phi), math.cos(phi)
    for f, i in rows3:
        if i[ints.index("mode")] != 3:
            continue
        s = f[at["q4"]] - L
        h, dh = float(ref(s)), float(ref(s, 1))
        w = math.hypot(1.0, dh)
        cx = L * tx + s * tx + h * nx + r * (nx - dh * tx) / w
        cy = L * ty + s * ty + h * ny + r * (ny - dh * ty) / w
        worst.append(math.hypot(f[at["q1"]] - cx, f[at["q2"]] - cy))
        assert 0.0 <= s <= POINTS[-1][0] + 1e-9
    assert len(worst) > 50 and max(worst) <= 1e-9
    seq = [i[ints.index("mode")] for _, i in rows3]
    assert [m for k, m in enumerate(seq) if k == 0 or seq[k - 1] != m] == [2, 3, 1]
    assert all(i[ints.index("status")] == 0 for _, i in rows3)
    # a bad points fence announced afterwards: rejected like a bad text (geometry_status 7),
    # logged, the fence in use kept
    s3.setFloat64([pts], [2.0, 0.1, 1.0, 0.2] + FLAT[4:])
    s3.setInt32([count, vr3["fence_version"]], [2, 2])
    n = len(msgs)
    s3.doStep(currentCommunicationPoint=T_END, communicationStepSize=H)
    assert s3.getInt32([vr3["geometry_status"], vr3["geometry_version_active"],
                        vr3["status"]]) == [GEOMETRY_BAD_PARAMETER, 1, 0]
    assert any("fence version 2 rejected" in m and "point 2" in m for _, m in msgs[n:])
    for s in (s3, s2):
        s.terminate()
        s.freeInstance()


def test_variable_dependencies_of_disk_ramp_are_its_fmi2_declarations(pairs, tmp_path):
    """disk_ramp's friction force and accelerations follow its inputs F_ext and T_ext: the
    dependencies are not all empty here.  Also what an FMU without clocks and without
    intermediate update answers: every clock function refuses a value reference as no Clock,
    and the master's intermediateUpdate callback is never called, early returns included."""
    fmu2, fmu3 = pairs["disk_ramp"]
    msgs, updates = [], []
    md = read_model_description(fmu3)
    s = FMU3Slave(guid=md.guid, unzipDirectory=extract(fmu3, unzipdir=str(tmp_path / "r3")),
                  modelIdentifier="disk_ramp", instanceName="r3")
    s.instantiate(earlyReturnAllowed=True,
                  logMessage=lambda env, st, cat, msg: messages_append(msgs, st, msg),
                  intermediateUpdate=lambda *a: updates.append(a) or 0)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    one = (fmi3ValueReference * 1)(vr["q1"])
    _refused(msgs, lambda: s.fmi3GetClock(s.component, one, 1, (fmi3Clock * 1)()),
             text=f"value reference {vr['q1']} is not a Clock variable")
    _refused(msgs, lambda: s.fmi3GetIntervalDecimal(s.component, one, 1, (c_double * 1)(),
                                                    (c_int * 1)()), text="is not a Clock")
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    t, early = 0.0, 0
    while t < 2.0 - 1e-12:
        _, _, returned, t = s.doStep(currentCommunicationPoint=t, communicationStepSize=0.05)
        early += bool(returned)
    assert early >= 1 and updates == []
    declared = _declared(fmu2)
    assert any(declared.values())
    for v in md.modelVariables:
        if v.causality == "output":
            assert _dependencies(s, v.valueReference) == declared[v.valueReference], v.name
    dep = next(k for k, d in declared.items() if d)
    m = len(declared[dep])
    buf = [(c_size_t * (m + 1))(), (fmi3ValueReference * (m + 1))(), (c_size_t * (m + 1))(),
           (fmi3DependencyKind * (m + 1))()]
    _refused(msgs, lambda: s.fmi3GetVariableDependencies(s.component, dep, *buf, m + 1),
             text=f"nDependencies = {m + 1} but value reference {dep} has {m}")
    s.freeInstance()


def _fmusim(fmu, out, *starts):
    argv, _ = masters.command("fmusim", fmu, out, T_END, H)
    flags = [x for name, value in starts for x in ("--start-value", name, value)]
    proc = subprocess.run(argv[:-1] + flags + [argv[-1]], env=masters.env(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0 and "[Error]" not in proc.stdout + proc.stderr, \
        proc.stderr + proc.stdout
    with open(out) as f:
        return [{k.strip('"'): v for k, v in r.items()
                 if k.strip('"') not in ("mode_number",) + WALL_CLOCK} for r in csv.DictReader(f)]


@pytest.mark.skipif(not (masters.MASTERS / "run").exists(), reason="no fmusim (tools/masters)")
def test_fmusim_sets_the_fence_array(pairs, tmp_path):
    """fmusim (FMI 3.0) sets fence_points as a start value (its elements space-separated) and
    the fence announced from the start: the FMI 2.0 FMU's run with the text, printed alike."""
    fmu2, fmu3 = pairs["disk_fence"]
    common = [("embedding", "symbolic"), ("fence_version", "1")]
    rows3 = _fmusim(fmu3, tmp_path / "f3.csv", *common, ("fence_point_count", str(len(POINTS))),
                    ("fence_points", " ".join(repr(x) for x in FLAT)))
    rows2 = _fmusim(fmu2, tmp_path / "f2.csv", *common,
                    ("fence_curve", points.spline_text(POINTS)), ("fence_length", "6.0"))
    assert rows3 == rows2 and len(rows3) == round(T_END / H) + 1
    assert {r["mode"] for r in rows3} == {"1", "2", "3"}


def test_a_state_on_a_points_fence_restores_where_the_fence_was_never_announced():
    """The FMU state names a points fence by its description (``points.description``): a
    simulator that never saw the announcement installs it again from there, and steps on as
    the original does, bit for bit (a serialized state restored in another process)."""
    from scenarios import disk_fence
    from scenarios.disk_fence.extension import FenceGeometry
    sc = disk_fence.build()
    inputs = {"fence_version": 1, "fence_curve": "", "fence_radius": 10.0, "fence_length": 6.7,
              "fence_points": FLAT, "fence_point_count": len(POINTS)}
    a = sc.simulator()
    geo = FenceGeometry(a, None, lambda msg: None)
    a.advance(7.0)
    geo.before_step(inputs)
    a.advance(8.0)
    assert a.mode_number == 3 and geo.get("geometry_version_active") == 1
    saved, fence_state = a.get_state(), geo.state()
    assert fence_state["fences"][0][1] == points.description(POINTS)
    b = disk_fence.build().simulator()             # a scenario of its own: no fence installed
    uid = fence_state["fences"][0][0]
    assert FENCE_BASE + uid not in b.automaton.modes
    other = FenceGeometry(b, None, lambda msg: None)
    other.set_state(fence_state)
    assert FENCE_BASE + uid in b.automaton.modes
    b.set_state(saved)
    for sim in (a, b):
        sim.advance(9.0)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.u, b.u)
    assert [e[1] for e in a.events] == ["ramp_end", "fence_end"]
