"""pendulum_belt through fmpy at 1 ms communication steps: cost of a step by what it contains.

    python benchmarks/bench_pendulum_belt.py [--fmu build/pendulum_belt.fmu] [--runs 5]

Figures (issue: contact and impact): a step holding an impact (locate, resolve, re-embed,
continue) at most 1 ms; steps in the free and sliding modes at most 40 us median (setReal +
doStep + getReal + getInteger, as a master does).  The paper reports 8-9 ms per RK4 step.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def step_times(fmu, t_end=1.2, dt=1e-3):
    from fmu_src.host.master import FmuRunner
    r = FmuRunner(fmu)
    f = r.fmu
    vin = [r.vr("F_tip_x"), r.vr("F_tip_y")]
    vout = [r.vr(k) for k in ("q1", "q2", "u1", "u2", "tip_x", "tip_y", "normal_force",
                              "tangential_force", "last_impulse_n")]
    vint = [r.vr("mode"), r.vr("impact_count"), r.vr("event_count")]
    rows = []
    last = f.getInteger(vint)
    t = 0.0
    clock = time.perf_counter
    for _ in range(int(round(t_end / dt))):
        t0 = clock()
        f.setReal(vin, [0.0, 0.0])
        f.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
        f.getReal(vout)
        ints = f.getInteger(vint)
        rows.append((clock() - t0, last[0], ints[0], ints[1] != last[1], ints[2] != last[2]))
        last = ints
        t += dt
    r.close()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", default=str(ROOT / "build" / "pendulum_belt.fmu"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    if not Path(a.fmu).exists():
        import build_fmu
        build_fmu.build("pendulum_belt", Path(a.fmu).parent)
    rows = []
    for _ in range(a.runs):
        rows += step_times(a.fmu)
    t = np.array([r[0] for r in rows]) * 1e6
    impact = np.array([r[3] for r in rows])
    event = np.array([r[4] for r in rows])
    quiet = ~event
    mode_before = np.array([r[1] for r in rows])
    print(f"pendulum_belt, {a.runs} runs of 1.2 s at 1 ms communication steps, RK4, fmpy "
          "(setReal + doStep + getReal + getInteger)")
    print(f"{'steps':44s} {'n':>6s} {'median us':>10s} {'p99 us':>9s} {'max us':>9s} {'target':>10s}")
    for label, mask, target in (
            ("free mode, no event", quiet & (mode_before == 1), "<= 40"),
            ("sliding mode, no event", quiet & (mode_before == 2), "<= 40"),
            ("stuck mode, no event", quiet & (mode_before == 3), ""),
            ("holding an impact", impact, "<= 1000"),
            ("holding another event", event & ~impact, "")):
        if mask.any():
            v = t[mask]
            print(f"{label:44s} {mask.sum():6d} {np.median(v):10.1f} {np.percentile(v, 99):9.1f} "
                  f"{v.max():9.1f} {target:>10s}")


if __name__ == "__main__":
    main()
