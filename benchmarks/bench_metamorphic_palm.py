"""metamorphic_palm at RK4 1 ms (engine level): steps per second and first embedding times.

    python benchmarks/bench_metamorphic_palm.py [--runs 3] [--seconds 2]

Per embedding path (numeric: the scenario's default; symbolic: gives up at the size budget,
``SymbolicBudgetError``, and runs the numeric path): the wall time of each mode's first
embedding + compile (``ModeCompiler.embed_times``: free at the start, drive 1 locked at the
lock), then steps per second of a run with a lock at 0.5 s and a release at 1.2 s (medians of
``--runs`` fresh simulators in one process; the first simulator of a path pays the compiles
that the others find in the shared library, so the first-embedding figures are the first
run's; the numeric path compiles every mode's compiled-terms program at set-up, so it reports
no embedding: its set-up time holds them).  wang2019 quotes 2.4e4 steps/s for its precompiled swing bar.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCHEDULE = {0.5: 1, 1.2: 0}     # time -> lock_drive1


def run(sc, embedding, seconds, h=1e-3):
    t0 = time.perf_counter()
    sim = sc.simulator(embedding=embedding, h_max=h)
    setup = time.perf_counter() - t0
    n = int(round(seconds / h))
    lock_step = None
    t0 = time.perf_counter()
    for k in range(1, n + 1):
        t = k * h
        for when, v in SCHEDULE.items():
            if abs(t - h - when) < h / 2:
                sim.set_inputs({"lock_drive1": v})
        ts = time.perf_counter()
        sim.advance(t)
        if lock_step is None and sim.mode == 2:
            lock_step = time.perf_counter() - ts
    wall = time.perf_counter() - t0
    return setup, list(sim.mode_compiler.embed_times), n / wall, lock_step


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args(argv)
    from scenarios import metamorphic_palm
    t0 = time.perf_counter()
    sc = metamorphic_palm.build()
    print(f"build() (Kane's terms of the joints' model): {time.perf_counter() - t0:.2f} s")
    print(f"{'path':<10} {'set-up s':>9} {'1st embed free s':>17} {'1st embed locked s':>19} "
          f"{'1st lock step ms':>17} {'steps/s (median)':>17}")
    for path in ("numeric", "symbolic"):
        rows = [run(sc, path, a.seconds) for _ in range(a.runs)]
        emb = rows[0][1] + [float("nan")] * 2
        rate = statistics.median(r[2] for r in rows)
        print(f"{path:<10} {rows[0][0]:>9.2f} {emb[0]:>17.3f} {emb[1]:>19.3f} "
              f"{rows[0][3] * 1e3:>17.2f} {rate:>17.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
