"""A hardware-in-the-loop style master: the 10-link chain's FMU at a fixed 1 kHz wall-clock rate,
its tip latched and released at run time.

    python benchmarks/hil_chain.py [--fmu build/pendulum_chain.fmu] [--seconds 10]

pendulum_chain (scenarios/pendulum_chain.py, N = 10: ``embed-fmu build pendulum_chain --set
N=10``) swings with its tip on the line; the latch is armed (input ``pin`` = 2) at t = 1 s, so
the tip is caught the moment it passes x_p (a located event, the momentum-consistent jump of
mueller eq 7, the point pin entered), opened at t = 4 s (the tip slides on) and armed again at
t = 6 s.  The pinned chain re-selects its independent speeds as it swings (gillespie2005
Sec 5.4): on the compiled-terms program the partition is data, so no step compiles.

Figures to reach (issue: one compiled call per step): do_step p99 <= 100 us and no step over
1 ms, deadline misses 0 (``benchmarks/hil_loop.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hil_loop import floor, realtime_policy, report, report_steps, run  # noqa: E402

OUT_REAL = ("tip_x", "tip_y", "pin_force_x", "constraint_residual")
OUT_INT = ("mode", "event_count", "status")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", default=str(ROOT / "build" / "pendulum_chain.fmu"))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--embedding", default="background")
    ap.add_argument("--floor", type=float, default=5.0,
                    help="seconds of the same loop over the trivial pythonfmu FMU after the "
                    "run (0: none): the floor column")
    a = ap.parse_args(argv)
    policy = realtime_policy()
    if not Path(a.fmu).exists():
        import build_fmu
        build_fmu.build("pendulum_chain", Path(a.fmu).parent)
    from fmu_src.host.master import FmuRunner
    r = FmuRunner(a.fmu, params={"real_time": True},      # a HIL rig keeps wall time
                  strings={"embedding": a.embedding})
    schedule = {1000: ("pin", 2), 4000: ("pin", 1), 6000: ("pin", 2)}
    res = run(r, a.seconds, OUT_REAL, OUT_INT, schedule)
    r.close()
    base = floor(a.floor) if a.floor > 0 else None
    n_links = sum(1 for v in r.md.modelVariables if v.name.startswith("q")
                  and v.name[1:].isdigit())
    print(f"pendulum_chain.fmu ({n_links} links, embedding {a.embedding!r}) at 1 kHz wall "
          f"clock for {a.seconds:g} s through fmpy's ctypes bindings; latch armed at 1 s, "
          f"opened at 4 s, armed at 6 s; master at {policy}")
    report(res, a.seconds, "<= 1000", base)
    print(f"{'final status':48s} {res['ints'][2]:10d}")
    print("timeline (time, mode, events, |Phi|, do_step us):")
    for row in res["timeline"]:
        print("  %.3f s  mode %d  events %d  residual %.1e  do_step %.0f us"
              % (row[0], row[1], row[2], row[7], row[-1]))
    report_steps(res, a.seconds)


if __name__ == "__main__":
    main()
