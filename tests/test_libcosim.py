"""The same FMU stepped by libcosim (C++ co-simulation engine) gives the fmpy trajectory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fmu_src.host.master import run

HERE = Path(__file__).parent


@pytest.mark.parametrize("settings", [{}, {"solver": "adaptive", "r": 0.5, "J": 0.125, "u2_start": -2.0}])
def test_libcosim_matches_fmpy(disk_fmu, settings):
    dt, t_end = 1e-3, 8.0
    args = [f"{k}={v}" for k, v in settings.items()]
    proc = subprocess.run([sys.executable, str(HERE / "libcosim_run.py"), disk_fmu, str(t_end), str(dt),
                           *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cosim = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    params = {k: v for k, v in settings.items() if k != "solver"}
    strings = {"solver": settings["solver"]} if "solver" in settings else None
    ref = run(disk_fmu, t_end, dt, params=params, strings=strings)[1:]
    assert len(cosim) == len(ref) == 8000
    assert cosim[-1]["event_count"] == 4
    for a, b in zip(cosim, ref):
        assert a["mode_number"] == b["mode"] and a["event_count"] == b["event_count"]
        for k in ("q1", "q2", "u1", "u2", "N", "F_f", "last_event_time"):
            assert a[k] == pytest.approx(b[k], abs=1e-9), (k, a["time"])
