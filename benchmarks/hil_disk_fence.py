"""A hardware-in-the-loop style master: disk_fence.fmu stepped at a fixed 1 kHz wall-clock rate.

    python benchmarks/hil_disk_fence.py [--fmu build/disk_fence.fmu] [--seconds 20] [--curve TEXT]

Steps the FMU once per millisecond of wall-clock time for 20 s, announces a fence at
t = 7 s as gillespie2005 Example 2 does (Fig 10-11), and reports the distribution of the
do_step wall times, the deadline misses, the time from the announcement to the fence
mode being ready (embed_latency, measured inside the FMU), the event timeline and the
slowest steps.  It calls the FMU's fmi2DoStep, fmi2GetReal and fmi2GetInteger through
fmpy's ctypes bindings with value-reference and value arrays made once, as a rig's C
master would (fmpy's convenience wrappers build them at every call).

Figures to reach (issue: geometry at run time): no deadline missed; do_step p99 <= 100 us,
max <= 500 us, including the step where contact with the fence begins; fence ready
<= 10 ms after the bump.  A deadline is missed when a cycle (doStep and reading the
outputs) has not finished by the end of its millisecond.  The floor column: the same loop
over the trivial pythonfmu FMU for ``--floor`` seconds after the run (hil_loop.floor): on a
machine whose own floor is over a target, the target cannot be judged there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hil_loop import floor, realtime_policy, report, report_steps, run  # noqa: E402

OUT_REAL = ("q1", "q2", "q4", "u4", "N", "embed_latency")
OUT_INT = ("mode", "event_count", "geometry_version_active", "status")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", default=str(ROOT / "build" / "disk_fence.fmu"))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--announce", type=float, default=7.0)
    ap.add_argument("--curve", default="", help="free-form fence (height profile in s)")
    ap.add_argument("--floor", type=float, default=5.0,
                    help="seconds of the same loop over the trivial pythonfmu FMU after the "
                    "run (0: none): the floor column")
    a = ap.parse_args(argv)
    policy = realtime_policy()
    if not Path(a.fmu).exists():
        import build_fmu
        build_fmu.build("disk_fence", Path(a.fmu).parent)

    from fmu_src.host.master import FmuRunner
    r = FmuRunner(a.fmu, params={"real_time": True},      # a HIL rig keeps wall time
                  strings={"embedding": "background"})
    if a.curve:
        r.fmu.setString([r.vr("fence_curve")], [a.curve])
    res = run(r, a.seconds, OUT_REAL, OUT_INT,
              {int(round(a.announce * 1000)): ("fence_version", 1)})
    r.close()
    base = floor(a.floor) if a.floor > 0 else None
    real, ints = res["real"], res["ints"]
    lat, status = real[5], ints[3]
    print(f"disk_fence.fmu at 1 kHz wall clock for {a.seconds:g} s through fmpy's ctypes "
          f"bindings; fence announced at t = {a.announce:g} s "
          f"({'curve ' + a.curve if a.curve else 'arc'}); master at {policy}")
    report(res, a.seconds, base=base)
    print(f"{'announcement -> fence mode ready (ms)':48s} {1e3 * lat:10.2f} {'<= 10':>10s}")
    print(f"{'final status':48s} {status:10d}")
    print("timeline (time, mode, events, fence version active, embed_latency, do_step us):")
    for row in res["timeline"]:
        print("  %.3f s  mode %d  events %d  fence v%d  latency %.2f ms  do_step %.0f us"
              % (row[0], row[1], row[2], row[3], 1e3 * row[5 + 5], row[-1]))
    report_steps(res, a.seconds)


if __name__ == "__main__":
    main()
