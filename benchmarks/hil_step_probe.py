"""The slow steps of hil_fences' run, one by one (issue 30, "Tails"): each doStep's thread CPU
and wall time, the cyclic collections that ran inside a doStep (``gc.callbacks``), and when
the fast path's reason to stay off changed, in one paced run of one FMU.

    python benchmarks/hil_step_probe.py --fmu build/disk_fence.fmu [--limit 600] [--seconds 4]
        [--profile 3.522,0.002]

The loop allocates nothing the collector tracks per step (numpy arrays filled in place), so
that a collection it reports is the FMU's, not the probe's: a probe that kept a list of
tuples per step set off gen-1 collections of 1 ms inside doSteps by itself.  Printed: the
step figures, the collections (step, generation, microseconds; a negative step: between
doSteps), the fast path's reasons with the step each began, and the steps whose CPU time is
over ``--limit`` us or whose wall time is (wall far over CPU: the core was taken
by another process, or the GIL by another thread of this one: "other threads" is the CPU time
the process's other threads used meanwhile, e.g. the loader thread placing a fence's object
code), and the stepping thread's context switches in the step (blocked: waiting for the GIL,
a lock or I/O; preempted: another thread or process took the core) and major page faults.
``--profile T,...``: the doSteps ending at those times run under
cProfile, whose table (own and cumulative us, wall clock) follows.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from hil_fences import ANNOUNCE, FACTORS, NEAR  # noqa: E402


def slave_of(runner):
    """The FMU's ScenarioSlave (same interpreter: pythonfmu runs in this process); frozen
    objects are not listed by gc, so they are unfrozen for the search and frozen again."""
    mod = next(v for k, v in sys.modules.items()
               if k.startswith("fmu_src_") and k.endswith(".runtime.slave"))
    gc.unfreeze()
    try:
        return next(o for o in gc.get_objects() if isinstance(o, mod.ScenarioSlave))
    finally:
        gc.freeze()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmu", required=True)
    ap.add_argument("--limit", type=float, default=600.0, help="CPU or wall us to list a step")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--profile", default="", help="comma-separated times (s) of doSteps to "
                    "run under cProfile (its cumulative table printed; the CPU figures of "
                    "those steps include cProfile's overhead)")
    a = ap.parse_args()
    from fence_storm import curve
    from fmpy.fmi2 import fmi2True
    from fmu_src.host.master import FmuRunner
    from hil_loop import realtime_policy
    policy = realtime_policy()
    r = FmuRunner(a.fmu, params={"real_time": True, **NEAR}, strings={"embedding": "background"})
    f, comp = r.fmu, r.fmu.component
    slave = slave_of(r)
    acts = {int(round(t * 1000)): [("fence_curve", curve(0.002, n, v)), ("fence_version", v)]
            for v, (t, n) in enumerate(zip(ANNOUNCE, FACTORS), start=1)}
    at, started, collections = [0], [0], []

    def on_gc(phase, info):
        if phase == "start":
            started[0] = time.thread_time_ns()
        else:
            collections.append((at[0], info["generation"],
                                (time.thread_time_ns() - started[0]) / 1e3))
    gc.callbacks.append(on_gc)
    n = int(round(a.seconds * 1000))
    profiled = {int(round(float(t) * 1000)) - 1 for t in a.profile.split(",") if t}
    profiles = {}
    cpu, wall, others = np.zeros(n), np.zeros(n), np.zeros(n)
    switches = np.zeros((n, 3), dtype=int)
    usage, THREAD = resource.getrusage, resource.RUSAGE_THREAD
    reasons, clock = [(0, slave.fast.reason)], time.perf_counter
    t0 = clock() + 0.01
    try:
        for k in range(n):
            while clock() < t0 + k * 1e-3:
                pass
            for name, v in acts.get(k, ()):
                if isinstance(v, str):
                    f.setString([r.vr(name)], [v])
                else:
                    f.setInteger([r.vr(name)], [v])
            at[0] = k + 1
            if k in profiled:
                import cProfile
                profiles[k] = cProfile.Profile()
                profiles[k].enable()
            u0 = usage(THREAD)
            c0, p0, w0 = time.thread_time_ns(), time.process_time_ns(), clock()
            f.fmi2DoStep(comp, k * 1e-3, 1e-3, fmi2True)
            if k in profiled:
                profiles[k].disable()
            c1, p1 = time.thread_time_ns(), time.process_time_ns()
            u1 = usage(THREAD)
            switches[k] = (u1.ru_nvcsw - u0.ru_nvcsw, u1.ru_nivcsw - u0.ru_nivcsw,
                           u1.ru_majflt - u0.ru_majflt)
            cpu[k], wall[k] = (c1 - c0) / 1e3, (clock() - w0) * 1e6
            others[k] = ((p1 - p0) - (c1 - c0)) / 1e3
            at[0] = -(k + 1)
            if slave.fast.reason != reasons[-1][1]:
                reasons.append((k + 1, slave.fast.reason))
    finally:
        gc.callbacks.remove(on_gc)
        r.close()
    print(f"{a.fmu}, {a.seconds:g} s at 1 kHz, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg()[:2])}, master at {policy}")
    print(f"doStep us: CPU p50 {np.median(cpu):.0f} p99 {np.percentile(cpu, 99):.0f} max "
          f"{cpu.max():.0f} (over 1 ms: {int((cpu > 1000).sum())}); wall p50 "
          f"{np.median(wall):.0f} p99 {np.percentile(wall, 99):.0f} max {wall.max():.0f} "
          f"(over 1 ms: {int((wall > 1000).sum())})")
    inside = [c for c in collections if c[0] > 0]
    print(f"collections: {len(collections)}, inside a doStep: {len(inside)}")
    for step, gen, us in collections:
        print(f"  step {step} gen {gen} {us:.0f} us")
    for step, why in reasons:
        print(f"fast path from t = {step / 1000:.3f} s: {why or 'on'}")
    for k in np.nonzero((cpu > a.limit) | (wall > a.limit))[0]:
        vol, inv, major = switches[k]
        print(f"t = {(k + 1) / 1000:.3f} s  CPU {cpu[k]:.0f} us  wall {wall[k]:.0f} us  "
              f"other threads {others[k]:.0f} us  switches {vol} blocked {inv} preempted  "
              f"major faults {major}")
    for k, prof in sorted(profiles.items()):
        import pstats
        print(f"--- cProfile of the doStep to t = {(k + 1) / 1000:.3f} s "
              f"(CPU {cpu[k]:.0f} us with cProfile)")
        rows = sorted(pstats.Stats(prof).stats.items(), key=lambda kv: -kv[1][3 if os.environ.get("PROBE_SORT") != "own" else 2])[:45]
        print(f"{'calls':>6s} {'own us':>8s} {'cum us':>8s}  function")
        for (file, line, name), (_, nc, tt, ct, _) in rows:
            print(f"{nc:6d} {tt * 1e6:8.0f} {ct * 1e6:8.0f}  "
                  f"{'/'.join(Path(file).parts[-2:])}:{line}({name})")


if __name__ == "__main__":
    main()
