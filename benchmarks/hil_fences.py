"""Two large free-form fences announced 20 ms apart to disk_fence.fmu at a paced 1 kHz (issue 30,
"Tails"): the step times of one or more builds of the FMU, side by side in one run.

    python benchmarks/hil_fences.py --fmu before=/tmp/main/disk_fence.fmu \\
        --fmu after=build/disk_fence.fmu [--reps 5] [--seconds 3]

Each repetition of each FMU is a fresh process (``--one``) stepping the FMU once per
millisecond of wall-clock time (``hil_loop.run``: fmpy's ctypes bindings, arrays made once)
with ``real_time`` on and the ``background`` embedding.  At t = 0.50 s it announces a product
of ten sine factors (tests/fence_storm.py's ``curve``), at t = 0.52 s one of eleven; the disk
reaches the ramp's end at t = 3.52 s and rolls onto the second fence (mode 3) if it is ready
by then (on a loaded machine the workers, at nice 10, may take longer: "on fence" counts
the runs that ended on it).  The
repetitions alternate between the FMUs so that the machine's load falls on both alike.

Printed: per FMU the median over the repetitions of each run's doStep p50 / p99 / max and its
deadline misses (a cycle not done within its millisecond), the worst max, and the slowest
steps of the run with the median max; the steps that waited 100 us or more neither running
nor on the run queue (for the GIL, a lock: what the loader thread's gate removes,
fmu_src/runtime/loader/gil_gate.c) and when the second fence was ready; the CPU time of the
steps doing the fences' work (the announcements, an install, the disk meeting a fence: less
dependent on the machine's load than wall times); then each run's figures and final mode and
fence.  ``--q4-start 7.24`` has the disk meet the fence at 6.5 s, for a loaded machine's
slower workers (with EMBED_CHECK_TIME_LIMIT raised, the workers' checks do not time out there
either).
The row "floor" is the trivial pythonfmu FMU (benchmarks/floor_fmu.py) in the same loop and
alternation, nothing announced: what any pythonfmu FMU's step costs on this machine then.
``--master c`` runs the loop in a C master (benchmarks/hil_c_master.c), as a rig does: no
Python of the master's own shares the GIL with the FMU's threads (the floor's stock pythonfmu
binary there with libpython preloaded);
``--rig`` runs the master at SCHED_FIFO, sleeping until 0.2 ms before each cycle.  Each step
over 1 ms is listed with what the stepping thread did in it (CPU, of it system, run queue,
page faults, context switches: getrusage) and what the same step cost in the other runs:
a step whose CPU is far over that, with no fault and no switch, lost its time below the
guest (the virtual CPU held: steal the guest does not see), not to the FMU's work.
Figure to reach: no step over 1 ms; p99 at most 100 us.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

ANNOUNCE = (0.5, 0.52)          # s: the two announcements
FACTORS = (10, 11)              # sine factors of each fence
NEAR = {"q4_start": 20.0}       # the disk reaches the ramp's end at t = 3.52 s
OUT_REAL = ("q4", "embed_latency")
OUT_INT = ("mode", "geometry_version_active", "geometry_status", "status")


def one(fmu, seconds, q4_start=NEAR["q4_start"], master="fmpy"):
    """One paced run of ``fmu`` in this process (``master`` "c": in a C master it starts,
    ``hil_loop.run_c``); returns its figures (a dict)."""
    from fence_storm import curve
    from fmu_src.host.master import FmuRunner
    from hil_loop import realtime_policy, run, run_c
    policy = realtime_policy()
    floor = Path(fmu).name == "Floor.fmu"     # the floor: the same loop, nothing announced
    actions = {int(round(t * 1000)): [("fence_curve", curve(0.002, n, v)), ("fence_version", v)]
               for v, (t, n) in enumerate(zip(ANNOUNCE, FACTORS), start=1)}
    params = {"real_time": True, "q4_start": q4_start, "embedding": "background"}
    if master == "c":
        with tempfile.TemporaryDirectory() as tmp:
            res = run_c(fmu, seconds, ("x",), (), {}, {}, tmp, preload=True) if floor else \
                run_c(fmu, seconds, OUT_REAL, OUT_INT, params, actions, tmp)
    elif floor:
        r = FmuRunner(fmu)
        res = run(r, seconds, ("x",), (), {}, cpu=True)
        r.close()
    else:
        r = FmuRunner(fmu, params={k: params[k] for k in ("real_time", "q4_start")},
                      strings={"embedding": "background"})
        res = run(r, seconds, OUT_REAL, OUT_INT, actions, cpu=True)
        r.close()
    if floor:
        res["real"], res["ints"] = [0.0, 0.0], [0, 0, 0, 0]
    s, c = res["step_us"], res["cpu_us"]
    # the CPU time of the steps that do the fences' work: the announcements, the installs
    # (the step after which geometry_version_active changed) and the disk's contact with a
    # fence (mode became 3); less dependent on the machine's load than the wall times
    at = {"announce": [] if floor else [int(round(t * 1000)) for t in ANNOUNCE],
          "install": [], "contact": []}
    last = (None, 0)
    for row in res["timeline"]:
        k = int(round(row[0] / res["dt"])) - 1
        if row[2] != last[1]:
            at["install"].append(k)
        if row[1] == 3 and last[0] != 3:
            at["contact"].append(k)
        last = (row[1], row[2])
    slow = np.argsort(s)[::-1][:6]
    return {"p50": float(np.median(s)), "p99": float(np.percentile(s, 99)),
            "max": float(s.max()), "misses": int(res["misses"]),
            "cpu_p99": float(np.percentile(c, 99)), "cpu_max": float(c.max()),
            "cpu_over_1ms": int(np.sum(c > 1000)),
            "cpu_at": {name: max((float(c[k]) for k in ks), default=None)
                       for name, ks in at.items()},
            "cpu_slowest": [(round((k + 1) * 1e-3, 3), round(float(c[k])))
                            for k in np.argsort(c)[::-1][:6]],
            "over_1ms": int(np.sum(s > 1000)),
            "cpu_us": [round(float(x)) for x in c],     # (the same step in the other runs)
            # each step over 1 ms: (t, wall, CPU, of it system, queue, page faults, switches)
            "over_1ms_steps": [(round((k + 1) * 1e-3, 3), round(float(s[k])), round(float(c[k])),
                                round(float(res["sys_us"][k])), round(float(res["queue_us"][k])),
                                int(res["faults"][k]), int(res["switches"][k]))
                               for k in np.nonzero(s > 1000)[0]],
            "queue_sum": float(res["queue_us"].sum()), "queue_max": float(res["queue_us"].max()),
            # the time a step waited neither running nor on the run queue: for the GIL, a
            # lock, a page (issue 30: the loader thread's Python held the GIL)
            "waits": int(np.sum(s - c - res["queue_us"] >= 100)),
            "wait_max": float(np.max(s - c - res["queue_us"])),
            "slowest": [(round((k + 1) * 1e-3, 3), round(float(s[k]))) for k in slow],
            "mode": res["ints"][0], "fence": res["ints"][1], "geometry_status": res["ints"][2],
            "status": res["ints"][3], "latency_ms": 1e3 * res["real"][1], "policy": policy}


def kinds(rs):
    """The runs' steps over 1 ms counted by what took most of their time: (cpu, queued,
    below) (``main``'s table)."""
    n = [0, 0, 0]
    for r in rs:
        for _, w, c, _, q, _, _ in r["over_1ms_steps"]:
            n[0 if 2 * c >= w else 1 if 2 * q >= w - c else 2] += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", action="append", default=[],
                    help="LABEL=PATH of a disk_fence.fmu (repeat to compare builds)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--q4-start", type=float, default=NEAR["q4_start"],
                    help="the disk's start on the ramp (m; 20: it meets the fence at 3.52 s, "
                    "7.24: at 6.5 s, for a loaded machine's slower workers)")
    ap.add_argument("--env", action="append", default=[],
                    help="LABEL:VAR=VALUE, in that FMU's runs' environment (repeat; e.g. "
                    "--fmu a=X --fmu b=X --env b:EMBED_KEEP_WARM=30: one build, two settings)")
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="leave out the floor: the trivial pythonfmu FMU in the same loop "
                    "(no fences), a row of its own")
    ap.add_argument("--master", choices=("fmpy", "c"), default="fmpy",
                    help="fmpy: the loop in Python (hil_loop.run); c: in a C master "
                    "(hil_c_master.c), a rig's, pinned to one CPU (the floor's stock "
                    "pythonfmu binary with libpython preloaded)")
    ap.add_argument("--rig", action="store_true",
                    help="the master as a rig runs it: SCHED_FIFO 50 (HIL_POLICY=fifo), sleeping "
                    "until 0.2 ms before each cycle (HIL_PACE=sleep); default: nice -10, spinning")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.seconds, a.q4_start, a.master)))
        return
    fmus = [f.split("=", 1) for f in a.fmu] or [["build", str(ROOT / "build" / "disk_fence.fmu")]]
    tmp = tempfile.TemporaryDirectory()
    if a.floor:
        from bench_masters import floor_fmu
        fmus.append(["floor", str(floor_fmu(tmp.name))])
    runs = {label: [] for label, _ in fmus}
    envs = {label: {} for label, _ in fmus}
    for e in a.env:
        label, setting = e.split(":", 1)
        var, value = setting.split("=", 1)
        envs[label][var] = value
    rig = {"HIL_POLICY": "fifo", "HIL_PACE": "sleep"} if a.rig else {}
    for rep in range(a.reps):
        for label, path in fmus:
            out = subprocess.run([sys.executable, __file__, "--one", path, "--seconds",
                                  str(a.seconds), "--q4-start", str(a.q4_start),
                                  "--master", a.master],
                                 capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT), **rig,
                                      **envs[label]})
            if out.returncode:
                sys.exit(f"{label} run {rep} failed:\n{out.stderr[-2000:]}")
            runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    load = os.getloadavg()
    print(f"two free-form fences ({FACTORS[0]} and {FACTORS[1]} sine factors) announced at "
          f"t = {ANNOUNCE[0]:g} and {ANNOUNCE[1]:g} s, disk_fence.fmu at 1 kHz wall clock for "
          f"{a.seconds:g} s in a {'C' if a.master == 'c' else 'Python (fmpy)'} master, "
          f"{a.reps} runs each (fresh processes, alternating); load average "
          f"{load[0]:.2f} {load[1]:.2f}; master at {runs[fmus[0][0]][0]['policy']}"
          + (", sleeping between cycles" if a.rig else ""))
    print("doStep wall time (us; medians over the runs, the worst max, misses and steps over "
          "1 ms summed, those by what took most of the time: 'cpu' the stepping thread ran for "
          "half the wall time or more, 'queued' it waited on the run queue for half the rest "
          "or more, 'below' the rest were lost below the guest's scheduler or waited, for the "
          "GIL, a lock) and the stepping thread's CPU time in doStep (the same without the time "
          "other processes took its core)")
    print(f"{'FMU':10s} {'p50':>7s} {'p99':>7s} {'max':>7s} {'worst':>7s} {'misses':>7s} "
          f"{'>1 ms':>6s} {'cpu/queued/below':>16s} | {'cpu p99':>8s} {'cpu max':>8s} "
          f"{'worst':>7s} {'>1 ms':>6s} {'on fence':>9s}")
    for label, rs in runs.items():
        med = {k: float(np.median([r[k] for r in rs]))
               for k in ("p50", "p99", "max", "cpu_p99", "cpu_max")}
        print(f"{label:10s} {med['p50']:7.1f} {med['p99']:7.1f} {med['max']:7.0f} "
              f"{max(r['max'] for r in rs):7.0f} {sum(r['misses'] for r in rs):7d} "
              f"{sum(r['over_1ms'] for r in rs):6d} {'/'.join(map(str, kinds(rs))):>16s} | "
              f"{med['cpu_p99']:8.1f} "
              f"{med['cpu_max']:8.0f} {max(r['cpu_max'] for r in rs):7.0f} "
              f"{sum(r['cpu_over_1ms'] for r in rs):6d} "
              + (f"{'-':>9s}" if label == "floor" else
                 f"{sum(r['mode'] == 3 and r['fence'] == 2 for r in rs):5d}/{len(rs)}"))
    print("the stepping thread's time on the run queue in doSteps (us; median over the runs "
          "of each run's sum, the largest sum, the largest in one doStep)")
    for label, rs in runs.items():
        q = [r["queue_sum"] for r in rs]
        print(f"{label:10s} sum {np.median(q):8.0f}  worst {max(q):8.0f}  in one doStep "
              f"{max(r['queue_max'] for r in rs):7.0f}")
    print("the doSteps that waited off their CPU and off the run queue for 100 us or more "
          "(the GIL, a lock), summed over the runs; the longest such wait (us); when the "
          "second fence was ready (embed_latency, ms after its announcement; median, worst)")
    for label, rs in runs.items():
        lat = [r["latency_ms"] for r in rs]
        print(f"{label:10s} waits {sum(r['waits'] for r in rs):6d}  longest "
              f"{max(r['wait_max'] for r in rs):7.0f}  fence ready {np.median(lat):7.1f} / "
              f"{max(lat):7.1f}")
    print("CPU time (us) of the steps doing the fences' work, median over the runs that had "
          "one (the announcements' larger; an install; the disk meeting a fence) and the worst")
    for label, rs in runs.items():
        cells = []
        for name in ("announce", "install", "contact"):
            v = [r["cpu_at"][name] for r in rs if r["cpu_at"][name] is not None]
            cells.append(f"{name} {np.median(v):6.0f} / {max(v):6.0f} ({len(v)} runs)" if v
                         else f"{name} none")
        print(f"{label:10s} " + "   ".join(cells))
    print("the steps over 1 ms (run, t s: wall, CPU of it system, queue us; minor and major "
          "page faults, context switches in the doStep, system time tick-sampled; the CPU time "
          "of the same step in the other runs, median and largest: what that step's work "
          "costs)")
    for label, rs in runs.items():
        for i, r in enumerate(rs):
            for t, w, c, sy, q, f, sw in r["over_1ms_steps"]:
                k = int(round(t * 1e3)) - 1
                same = [o["cpu_us"][k] for j, o in enumerate(rs) if j != i]
                print(f"{label:10s} run {i:3d}  t {t:.3f}: {w:6d} us, cpu {c:6d} (system {sy}), "
                      f"queue {q:6d}; faults {f}, switches {sw}; the same step elsewhere "
                      + (f"{np.median(same):.0f} / {max(same)} us" if same else "-"))
    for label, rs in runs.items():
        print(f"{label}: each run's p99 / max (us), misses, final mode / fence / status, "
              "slowest steps by wall and by CPU time (t s, us)")
        for r in rs:
            state = ("" if label == "floor" else f"mode {r['mode']} fence v{r['fence']} "
                     f"geometry {r['geometry_status']} status {r['status']}  ")
            print(f"  {r['p99']:6.1f} / {r['max']:6.0f}  {r['misses']:4d}  {state}"
                  + ", ".join(f"{t:.3f} {us}" for t, us in r["slowest"][:4]) + "  | cpu "
                  + ", ".join(f"{t:.3f} {us}" for t, us in r["cpu_slowest"][:4]))


if __name__ == "__main__":
    main()
