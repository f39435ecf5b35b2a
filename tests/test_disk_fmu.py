"""The built disk_ramp.fmu stepped by fmpy, against the piecewise analytic solution."""

import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

import pytest
from fmpy.validation import validate_fmu

from disk_analytic import DiskAnalytic
from fmu_src.host.master import FmuRunner, run
from scenarios import disk_ramp

DEFAULTS = disk_ramp.build().defaults()


def test_validates_and_declares_state(disk_fmu):
    assert validate_fmu(disk_fmu) == []
    with zipfile.ZipFile(disk_fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        cs = root.find("CoSimulation")
        assert cs.get("canGetAndSetFMUstate") == "true"
        assert cs.get("canSerializeFMUstate") == "true"
        reqs = z.read("resources/requirements.txt").decode()
        assert "symengine" in reqs and "numpy" in reqs and "llvmlite" in reqs
        names = {v.get("name"): v for v in root.iter("ScalarVariable")}
    for n in ("m", "J", "r", "phi", "mu", "L", "g", "q1_start", "q2_start", "u1_start", "u2_start",
              "h_max", "solver", "rtol", "F_ext", "T_ext", "q1", "q2", "u1", "u2", "slip", "N", "F_f",
              "constraint_residual", "mode", "event_count", "last_event_time", "status"):
        assert n in names, n
    assert names["mode"].get("variability") == "discrete"
    assert names["F_ext"].get("causality") == "input"


CASES = [
    # (solver, communication step, params, inputs)
    ("rk4", 1e-3, {}, {}),
    ("adaptive", 1e-3, {}, {}),
    ("rk4", 0.5, {}, {}),
    ("adaptive", 8.0, {}, {}),
    ("rk4", 8.0, dict(r=0.5, J=0.125, u2_start=-2.0), dict(F_ext=0.4, T_ext=0.05)),
    ("adaptive", 0.5, dict(r=0.5, J=0.125, u2_start=-2.0), dict(F_ext=0.4, T_ext=0.05)),
    ("rk4", 1e-2, dict(r=1.5, J=1.2, u2_start=-6.0, h_max=2e-3), dict(F_ext=-0.3, T_ext=0.2)),
]


@pytest.mark.parametrize("solver,dt,params,inputs", CASES)
def test_fmpy_run_matches_analytic(disk_fmu, solver, dt, params, inputs):
    P = {**DEFAULTS, **params}
    ref = DiskAnalytic(P, 8.0, [(0.0, inputs.get("F_ext", 0.0), inputs.get("T_ext", 0.0))])
    assert len(ref.events) >= 4          # the paper's story: slide, roll, slide, roll
    rows = run(disk_fmu, 8.0, dt, params=params, strings={"solver": solver},
               schedule={0: inputs} if inputs else None)
    for row in rows:
        st = ref.state(row["time"])
        for k in ("q1", "q2", "u1", "u2"):
            assert row[k] == pytest.approx(st[k], abs=1e-6), (k, row["time"])
        assert row["mode"] == st["mode"]
        assert row["status"] == 0
        assert row["slip"] == pytest.approx(row["u1"] + row["u2"], abs=1e-12)
    # every event, with its located time, as the master sees it
    seen = []
    for a, b in zip(rows, rows[1:]):
        if b["event_count"] != a["event_count"]:
            seen.append((b["event_count"], b["last_event_time"]))
    assert rows[-1]["event_count"] == len(ref.events)
    for count, t in seen:
        assert t == pytest.approx(ref.events[count - 1][0], abs=1e-6)
    if dt <= 1e-2:
        assert [c for c, _ in seen] == list(range(1, len(ref.events) + 1))


def test_several_events_in_one_long_step(disk_fmu):
    rows = run(disk_fmu, 8.0, 8.0)
    assert rows[-1]["event_count"] == 4 and rows[-1]["mode"] == 2


def test_fmpy_command_line_validate(disk_fmu):
    out = subprocess.run([sys.executable, "-m", "fmpy", "validate", disk_fmu],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout


def test_outputs_before_first_step_are_the_start_state(disk_fmu):
    r = FmuRunner(disk_fmu, {"q1_start": 3.0, "u1_start": 1.0, "u2_start": -1.0})
    try:
        o = r.outputs()
        assert (o["q1"], o["u1"], o["u2"], o["mode"]) == (3.0, 1.0, -1.0, 2)   # slip 0: rolling
    finally:
        r.close()
