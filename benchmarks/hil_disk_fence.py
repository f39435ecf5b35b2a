"""A hardware-in-the-loop style master: disk_fence.fmu stepped at a fixed 1 kHz wall-clock rate.

    python benchmarks/hil_disk_fence.py [--fmu build/disk_fence.fmu] [--seconds 20] [--curve TEXT]

Steps the FMU through fmpy (setReal/setInteger + doStep + getReal + getInteger) once per
millisecond of wall-clock time for 20 s, announces a fence at t = 7 s as gillespie2005
Example 2 does (Fig 10-11), and reports the distribution of the step times, the deadline
misses (a step not finished by the end of its millisecond), the time from the announcement
to the fence mode being ready (embed_latency, measured inside the FMU) and the event
timeline.  Figures to reach (issue: geometry at run time): no deadline missed; do_step p99
<= 100 us, max <= 500 us, including the step where contact with the fence begins; fence
ready <= 10 ms after the bump.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", default=str(ROOT / "build" / "disk_fence.fmu"))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--announce", type=float, default=7.0)
    ap.add_argument("--curve", default="", help="free-form fence (height profile in s)")
    a = ap.parse_args(argv)
    if not Path(a.fmu).exists():
        import build_fmu
        build_fmu.build("disk_fence", Path(a.fmu).parent)
    from fmu_src.master import FmuRunner
    r = FmuRunner(a.fmu, strings={"embedding": "background"})
    f = r.fmu
    vr_ver = [r.vr("fence_version")]
    vout = [r.vr(k) for k in ("q1", "q2", "q4", "u4", "N", "embed_latency")]
    vint = [r.vr("mode"), r.vr("event_count"), r.vr("geometry_version_active"), r.vr("status")]
    if a.curve:
        f.setString([r.vr("fence_curve")], [a.curve])
    n = int(round(a.seconds * 1000))
    k_announce = int(round(a.announce * 1000))
    dt = 1e-3
    step_us = np.zeros(n)
    misses = late = 0
    timeline = []
    last = f.getInteger(vint)
    clock = time.perf_counter
    t0 = clock() + 0.01
    for k in range(n):
        slot = t0 + k * dt
        while clock() < slot:               # wait for this millisecond (busy: sleep is coarse)
            pass
        s = clock()
        if k == k_announce:
            f.setInteger(vr_ver, [1])
        f.doStep(currentCommunicationPoint=k * dt, communicationStepSize=dt)
        out = f.getReal(vout)
        ints = f.getInteger(vint)
        e = clock()
        step_us[k] = (e - s) * 1e6
        if e - s > dt:
            misses += 1      # the step itself took longer than its millisecond
        elif e > slot + dt:
            late += 1        # finished late because an earlier step overran
        if ints[:3] != last[:3]:
            timeline.append(((k + 1) * dt, ints[0], ints[1], ints[2], out[5], step_us[k]))
        last = ints
    lat = f.getReal([r.vr("embed_latency")])[0]
    status = f.getInteger([r.vr("status")])[0]
    r.close()
    print(f"disk_fence.fmu at 1 kHz wall clock for {a.seconds:g} s through fmpy; fence "
          f"announced at t = {a.announce:g} s ({'curve ' + a.curve if a.curve else 'arc'})")
    print(f"{'figure':44s} {'value':>12s} {'target':>10s}")
    print(f"{'step time median (us)':44s} {np.median(step_us):12.1f}")
    print(f"{'step time p99 (us)':44s} {np.percentile(step_us, 99):12.1f} {'<= 100':>10s}")
    print(f"{'step time max (us)':44s} {step_us.max():12.1f} {'<= 500':>10s}")
    print(f"{'deadline misses (step longer than 1 ms)':44s} {misses:12d} {'0':>10s}")
    print(f"{'steps finished late after an earlier miss':44s} {late:12d}")
    print(f"{'announcement -> fence mode ready (ms)':44s} {1e3 * lat:12.2f} {'<= 10':>10s}")
    print(f"{'final status':44s} {status:12d}")
    print("timeline (time, mode, events, fence version active, embed_latency, step us):")
    for row in timeline:
        print("  %.3f s  mode %d  events %d  fence v%d  latency %.2f ms  step %.0f us"
              % (row[0], row[1], row[2], row[3], 1e3 * row[4], row[5]))
    k_max = int(np.argmax(step_us))
    print(f"slowest step at t = {(k_max + 1) * dt:.3f} s")
    print("per second: median / p99 / max step (us), misses")
    for sec in range(int(a.seconds)):
        w = step_us[sec * 1000:(sec + 1) * 1000]
        print(f"  {sec:2d}-{sec + 1:2d} s  {np.median(w):7.1f} {np.percentile(w, 99):8.1f} "
              f"{w.max():9.1f}  {int(np.sum(w > 1000))}")


if __name__ == "__main__":
    main()
    from fmu_src.master import exit_now
    exit_now(0)
