"""kneed_walker at RK4 1 ms: steps per second, in the engine and through fmpy.

    PYTHONPATH=. python benchmarks/bench_walker.py [--fmu build/kneed_walker.fmu] [--runs 3]

wang2019 Sec 3.2 quotes about 1.7e4 Hz for its precompiled walker (flow and jump function,
rk4Hybrid, one i7-7700 core).  Here: (1) the engine alone, ``Simulator.advance`` over 20 s of
walking (about 35 steps of the gait, 70 impacts) at h = 1 ms, steps of 1 ms per wall second;
(2) the FMU stepped by fmpy's FMU2Slave at 1 ms communication steps for 5 s (doStep plus
reading every output, as a master does).  Medians of ``--runs`` runs, each in this process
after a warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def engine_rate(t_end=20.0):
    import scenarios
    sc = scenarios.load("kneed_walker").build()
    sc.simulator().advance(1.0)                      # warm-up: compiles, first calls
    sim = sc.simulator()
    t0, c0 = time.perf_counter(), time.process_time()
    sim.advance(t_end)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return t_end / 1e-3 / wall, sim.discrete["step_count"], t_end / 1e-3 / cpu


def fmu_rate(fmu, t_end=5.0, dt=1e-3):
    from fmu_src.host.master import FmuRunner
    r = FmuRunner(fmu, instance="bench")
    try:
        f = r.fmu
        reals = [v.valueReference for v in r.md.modelVariables
                 if v.causality == "output" and v.type == "Real"]
        ints = [v.valueReference for v in r.md.modelVariables
                if v.causality == "output" and v.type in ("Integer", "Enumeration")]
        n = int(round(t_end / dt))
        t = 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            f.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
            f.getReal(reals)
            f.getInteger(ints)
            t += dt
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return n / wall, r.outputs()["step_count"], n / cpu
    finally:
        r.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmu", default=None, help="a built kneed_walker.fmu (default: build one)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    fmu = a.fmu
    if fmu is None:
        import build_fmu
        out = tempfile.mkdtemp()
        build_fmu.main(["kneed_walker", "--out", out])
        fmu = str(Path(out) / "kneed_walker.fmu")
    engine = [engine_rate() for _ in range(a.runs)]
    fmpy = [fmu_rate(fmu) for _ in range(a.runs)]
    med = lambda rs, i=0: statistics.median(r[i] for r in rs)   # noqa: E731
    print(f"kneed_walker, RK4 h = 1 ms, median of {a.runs} runs (per wall second and per "
          "CPU second of this process: on a loaded machine the second is the fairer)")
    print(f"{'path':<37}{'steps/s wall':>13}{'steps/s CPU':>13}{'CPU / 1.7e4':>13}"
          f"{'heel strikes':>14}")
    for label, rs in (("engine (Simulator.advance, 20 s)", engine),
                      ("FMU in fmpy (doStep + outputs, 5 s)", fmpy)):
        print(f"{label:<37}{med(rs):>13.0f}{med(rs, 2):>13.0f}{med(rs, 2) / 1.7e4:>13.2f}"
              f"{int(rs[0][1]):>14d}")


if __name__ == "__main__":
    main()
