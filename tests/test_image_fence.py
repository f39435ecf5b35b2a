"""A free-form fence announced to disk_fence's FMU (its scenario image, the background path):
the fence is parsed, checked and differentiated by the background workers, processes of their
own, and installed in the stepping process without sympy or symengine there (issue 30)."""

import json
import subprocess
import sys

RUN = r"""
import json, sys, time
from fmu_src.host.master import FmuRunner

r = FmuRunner(sys.argv[1], instance="image_fence")
modes, worst, at_start = [], 0.0, None
try:
    for k in range(9500):
        if k == 7000:
            r.fmu.setString([r.vr("fence_curve")], ["0.5*(1 - cos(0.3*s))"])
            r.set(fence_version=1)
        r.step(1e-3)
        if k == 0:
            at_start = [m for m in ("cloudpickle", "sympy", "symengine") if m in sys.modules]
        if 7000 <= k < 7600:
            time.sleep(1e-3)            # wall time for the workers, as at a 1 kHz master
        o = r.get("mode", "status", "geometry_status", "geometry_version_active",
                  "constraint_residual")
        assert o["status"] == 0 and o["geometry_status"] == 0, (k, o, r.messages)
        if not modes or modes[-1] != o["mode"]:
            modes.append(o["mode"])
        if o["mode"] == 3:
            assert o["geometry_version_active"] == 1
            worst = max(worst, o["constraint_residual"])
finally:
    r.close()
print(json.dumps({"modes": modes, "worst": worst, "at_start": at_start,
                  "loaded": [m for m in ("sympy", "symengine") if m in sys.modules]}))
"""


def test_a_free_form_fence_installs_in_the_image_process_without_symbols(fmu_dir, tmp_path):
    """Modes ramp (2), the announced fence (3), free flight (1); the fence holds to 1e-9
    (the constraint residual while on it), and the FMU's process never imported sympy or
    symengine: the workers did the symbolic work.  Nor cloudpickle by its first step: the
    image names the package's classes by reference (``image.by_value_modules``)."""
    res = subprocess.run([sys.executable, "-c", RUN, str(fmu_dir / "disk_fence.fmu")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["modes"] == [2, 3, 1]
    assert 0.0 < got["worst"] <= 1e-9
    assert got["loaded"] == []
    assert got["at_start"] == []
