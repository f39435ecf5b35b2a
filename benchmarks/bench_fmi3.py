"""doStep cost of the FMI 3.0 FMU against the FMI 2.0 FMU of the same build, in one run.

    python benchmarks/bench_fmi3.py [--steps 8000] [--reps 5] [--dt 1e-3]

disk_ramp is built once with ``fmi=(2, 3)``; each FMU is stepped through fmpy (FMU2Slave,
FMU3Slave with and without early return) from 0 to steps*dt s, one communication step being
set inputs + doStep + get outputs, the runs interleaved.  Printed: the median and 99th
percentile of the per-step wall time over all steps of all repetitions (us), the steps that
held an event counted apart (they cost the event location), and the events the master saw.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUTS = ("q1", "q2", "u1", "u2", "slip", "N", "F_f", "constraint_residual", "last_event_time")


def run(fmu, version, steps, dt, early, workdir):
    """Per-step wall times (s), whether each step held an event, and the event count."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    from fmpy.fmi3 import FMU3Slave

    md = read_model_description(fmu)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    d = extract(fmu, unzipdir=tempfile.mkdtemp(dir=workdir))
    cls = FMU2Slave if version == 2 else FMU3Slave
    s = cls(guid=md.guid, unzipDirectory=d, modelIdentifier="disk_ramp", instanceName="bench")
    if version == 2:
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        get, set_, get_int = s.getReal, s.setReal, s.getInteger
    else:
        s.instantiate(earlyReturnAllowed=early)
        s.enterInitializationMode(startTime=0.0)
        s.exitInitializationMode()
        get, set_, get_int = s.getFloat64, s.setFloat64, s.getInt32
    vin, vout, vcount = [vr["F_ext"], vr["T_ext"]], [vr[k] for k in OUTS], [vr["event_count"]]
    times, event = [], []
    clock = time.perf_counter
    t, k, count = 0.0, 0, 0
    while k < steps:
        target = (k + 1) * dt
        t0 = clock()
        set_(vin, [0.0, 0.0])
        if version == 2:
            s.doStep(t, target - t)
            t_new = target
        else:
            _, _, returned, t_new = s.doStep(t, target - t)
            t_new = t_new if returned else target
        get(vout)
        times.append(clock() - t0)
        n = get_int(vcount)[0]
        event.append(n != count)
        count = n
        t = t_new
        if t == target or abs(t - target) < 1e-12:
            k += 1
    s.terminate()
    s.freeInstance()
    return np.array(times), np.array(event), count


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dt", type=float, default=1e-3)
    a = ap.parse_args(argv)
    from fmu_src.builder.build import build

    with tempfile.TemporaryDirectory(prefix="bench_fmi3_") as tmp:
        fmu2, fmu3 = build("disk_ramp", Path(tmp), fmi=(2, 3), log=lambda m: None)
        cases = [("FMI 2.0", str(fmu2), 2, False), ("FMI 3.0", str(fmu3), 3, False),
                 ("FMI 3.0 early return", str(fmu3), 3, True)]
        res = {name: [] for name, *_ in cases}
        for name, fmu, version, early in cases:         # warm-up: first embeddings
            run(fmu, version, 200, a.dt, early, tmp)
        for _ in range(a.reps):
            for name, fmu, version, early in cases:
                res[name].append(run(fmu, version, a.steps, a.dt, early, tmp))
    print(f"disk_ramp, {a.steps} steps of {a.dt:g} s x {a.reps} repetitions, RK4, through fmpy")
    print(f"{'FMU':<22} {'median us':>10} {'p99 us':>8} {'event steps median us':>22} "
          f"{'doStep calls':>13} {'events':>7}")
    for name, runs in res.items():
        t = np.concatenate([r[0] for r in runs]) * 1e6
        e = np.concatenate([r[1] for r in runs])
        print(f"{name:<22} {np.median(t[~e]):>10.1f} {np.percentile(t[~e], 99):>8.1f} "
              f"{np.median(t[e]) if e.any() else float('nan'):>22.1f} "
              f"{len(runs[0][0]):>13} {runs[0][2]:>7}")


if __name__ == "__main__":
    main()
