"""The swing bar (wang2019 Sec 3.1, scenarios/swing_bar.py): build, first embedding, stepping.

    python benchmarks/bench_swing_bar.py [--runs 3] [--fmu build/swing_bar.fmu]

Each run is a fresh process: the scenario's build (System -> Model.from_system -> Kane's
terms), then the first embedding and compile of its one mode on each embedding path (the
first ``Scenario.simulator``), then RK4 at h = 1 ms for 5 s of Table 2's run: steps per
second in the engine (``Simulator.advance`` per 1 ms) and, with ``--fmu``, through fmpy
(doStep of 1 ms, outputs read each step).  wang2019 quotes 2.4e4 steps per second for its
precompiled (MATLAB code generator) swing bar.  Prints the medians over the runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T_RUN, H = 5.0, 1e-3


def one_run(fmu):
    """One fresh process's figures (s and steps/s)."""
    clock = time.perf_counter
    t0 = clock()
    from scenarios import swing_bar
    sc = swing_bar.build()
    out = {"build (s)": clock() - t0}
    sims = {}
    for path in ("symbolic", "numeric"):
        t0 = clock()
        sims[path] = sc.simulator(embedding=path)
        out[f"first embedding, mode 1 swing, {path} (s)"] = clock() - t0
    for path, sim in sims.items():
        n = int(round(T_RUN / H))
        t0 = clock()
        for k in range(1, n + 1):
            sim.advance(k * H)
        out[f"engine RK4 1 ms, {path} (steps/s)"] = n / (clock() - t0)
    if fmu:
        from fmu_src.host.master import FmuRunner
        r = FmuRunner(fmu)
        vr = [r.vr(k) for k in ("end3_x", "end3_y", "end3_z", "energy")]
        n = int(round(T_RUN / H))
        t0 = clock()
        for k in range(n):
            r.fmu.doStep(currentCommunicationPoint=k * H, communicationStepSize=H)
            r.fmu.getReal(vr)
        out["fmpy doStep 1 ms + getReal (steps/s)"] = n / (clock() - t0)
        r.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fmu", default=None, help="a built swing_bar.fmu to step through fmpy")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one_run(a.fmu)))
        return
    rows = []
    for _ in range(a.runs):
        cmd = [sys.executable, __file__, "--one"] + (["--fmu", a.fmu] if a.fmu else [])
        rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                              text=True).stdout.splitlines()[-1]))
    print(f"swing_bar, median of {a.runs} fresh processes (wang2019: 2.4e4 steps/s, precompiled)")
    for key in rows[0]:
        vals = [r[key] for r in rows]
        med = statistics.median(vals)
        extra = f"   {med / 2.4e4:.2f}x ANDY's rate" if "steps/s" in key else ""
        print(f"  {key:48s} {med:12.4g}   (min {min(vals):.4g}, max {max(vals):.4g}){extra}")


if __name__ == "__main__":
    main()
