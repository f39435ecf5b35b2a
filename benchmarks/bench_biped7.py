"""braun_goldfarb2012's seven-link biped (scenarios/biped7.py): cost of its 0-dof step.

    python benchmarks/bench_biped7.py [--runs 3] [--old]

Figures (issue 31): steps per second at RK4 1 ms on the engine (``Simulator.advance`` one
step at a time), for the driven mode (``embed.modes.driven``: the whole RK4 step one compiled
program, B u = -C solved by LDL^T of B B^T at each stage), for the same mode stepped in Python
(``DrivenMode``: one LU of B a stage by LAPACK, the fallback and the figure before the
program; ``driven_program`` made to decline in this process only) and, with ``--old``, for the
general symbolic embedding both replace (B inverted symbolically; ``driven.driven_parts``
turned off in this process only); slider_crank3's step
beside it as the yardstick of a normal mode; and the paper's 100 s at 10 ms communication
steps (1 ms internal) as a real-time factor (simulated s per wall s).  Medians of ``--runs``.
The machine is shared: compare ratios measured in one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def step_us(sc, n=2000, **kw):
    """Median wall time of one 1 ms RK4 step (us) over n steps after 100 warm ones."""
    sim = sc.simulator(**kw)
    for k in range(1, 101):
        sim.advance(k * 1e-3)
    times = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        sim.advance((101 + k) * 1e-3)
        times[k] = time.perf_counter() - t0
    return float(np.median(times)) * 1e6


def real_time_factor(sc, t_end=100.0, dt=0.01):
    sim = sc.simulator()
    t0 = time.perf_counter()
    for k in range(1, int(round(t_end / dt)) + 1):
        sim.advance(k * dt)
    return t_end / (time.perf_counter() - t0), sim.residual()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--old", action="store_true", help="also the general symbolic embedding")
    a = ap.parse_args(argv)
    from scenarios import biped7, slider_crank3
    crank = slider_crank3.build()
    from embed.modes import driven
    from embed import CompilationError
    program = driven.driven_program

    def declined(*args, **kw):
        raise CompilationError("the Python-stepped driven mode asked for")

    rows = {"biped7 driven program": [], "biped7 driven in Python": [], "slider_crank3": []}
    for _ in range(a.runs):
        rows["biped7 driven program"].append(step_us(biped7.build()))
        driven.driven_program = declined
        rows["biped7 driven in Python"].append(step_us(biped7.build()))
        driven.driven_program = program
        rows["slider_crank3"].append(step_us(crank))
    if a.old:
        import embed.modes.forming
        embed.modes.forming.driven_parts = lambda *args: None      # the general embedding
        rows["biped7 general embedding"] = [step_us(biped7.build(), n=500)
                                            for _ in range(a.runs)]
    base = np.median(rows["slider_crank3"])
    print(f"{'1 ms RK4 step':28s} {'median us':>10s} {'steps/s':>10s} {'x slider_crank3':>16s}")
    for name, v in rows.items():
        m = float(np.median(v))
        print(f"{name:28s} {m:10.1f} {1e6 / m:10.0f} {m / base:16.2f}")
    if a.old:
        import importlib
        importlib.reload(embed.modes.forming)
    rtf = [real_time_factor(biped7.build()) for _ in range(a.runs)]
    print(f"100 s at 10 ms communication steps: real-time factor {np.median([r for r, _ in rtf]):.2f}"
          f" (runs {[round(r, 2) for r, _ in rtf]}), final constraint_residual "
          f"{max(res for _, res in rtf):.1e}")


if __name__ == "__main__":
    main()
