"""Demo: step disk_ramp.fmu with fmpy, print the event table, plot gillespie2005 Fig 7.

    python -m fmu_src.host.demo build/disk_ramp.fmu --png build/disk_ramp_fig7.png

Like the paper's Fig 7: the mode k (1 sliding, 2 rolling), the slip u1 + u2 and
q1 against time, for Example 1 with the Table I values, stepped at 1 ms.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FIRST_EVENT = 0.365    # s: sliding -> rolling with the defaults (gillespie2005 Fig 7)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fmu", help="path of disk_ramp.fmu")
    ap.add_argument("--png", default="disk_ramp_fig7.png", help="where to write the plot")
    ap.add_argument("--t-end", type=float, default=8.0)
    ap.add_argument("--dt", type=float, default=1e-3, help="communication step (s)")
    ap.add_argument("--solver", default="rk4", choices=["rk4", "adaptive"])
    a = ap.parse_args(argv)

    from fmu_src.host.master import run
    rows = run(a.fmu, a.t_end, a.dt, strings={"solver": a.solver})
    print(f"disk_ramp.fmu stepped by fmpy to t = {a.t_end} s, communication step {a.dt} s, "
          f"solver {a.solver}")
    print("events (located time; state at the next communication point)")
    print(f"{'event':>5s} {'time (s)':>12s} {'transition':>20s} {'q1 (m)':>10s} {'u1 (m/s)':>10s} "
          f"{'u2 (m/s)':>10s}")
    names = {1: "sliding", 2: "rolling"}
    events = 0
    for prev, row in zip(rows, rows[1:]):
        if row["event_count"] != prev["event_count"]:
            events += 1
            tr = f"{names[prev['mode']]} -> {names[row['mode']]}"
            print(f"{row['event_count']:5d} {row['last_event_time']:12.6f} {tr:>20s} "
                  f"{row['q1']:10.4f} {row['u1']:10.4f} {row['u2']:10.4f}")
    bad = [r for r in rows if r["status"] != 0]
    print(f"status: {'ok' if not bad else f'{len(bad)} steps with a nonzero status'}")
    if bad or (not events and a.t_end >= FIRST_EVENT):
        # Example 1 with Table I starts rolling at 0.365 s and has four events by 8 s
        # (gillespie2005 Fig 7): a table without them is a wrong run, never "ok" (issue 33:
        # the table was printed empty once, behind status ok)
        last = rows[-1]
        print(f"demo failed: {events} events and {len(bad)} steps with a nonzero status in "
              f"{len(rows) - 1} steps to t = {last['time']:g} s (last row: q1 = "
              f"{last['q1']:.4f} m, mode {last['mode']}, event_count {last['event_count']}, "
              f"status {last['status']}); the disk starts rolling at {FIRST_EVENT} s",
              file=sys.stderr)
        return 1

    try:
        import matplotlib
    except ImportError:
        print("plot not written: it needs matplotlib (pip install 'embed-fmu[demo]')",
              file=sys.stderr)
        return 2
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = [r["time"] for r in rows]
    events = [r["last_event_time"] for prev, r in zip(rows, rows[1:])
              if r["event_count"] != prev["event_count"]]
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(6, 6))
    ax[0].step(t, [r["mode"] for r in rows], where="post")
    ax[0].set_ylabel("mode k")
    ax[0].set_yticks(list(names), [f"{k} {n}" for k, n in names.items()])
    ax[1].plot(t, [r["slip"] for r in rows])
    ax[1].set_ylabel("slip u1 + u2 (m/s)")
    ax[2].plot(t, [r["q1"] for r in rows], label="q1, the disk's travel")
    ax[2].axhline(22.0, color="gray", lw=0.8, ls=":", label="end of the ramp (22 m)")
    ax[2].set_ylabel("q1 (m)")
    ax[2].set_xlabel("time (s)")
    ax[2].legend(loc="lower left", fontsize=8)
    for axis in ax:
        for te in events:
            axis.axvline(te, color="C3", lw=0.6, ls="--")
    fig.suptitle(f"Disk on a ramp (gillespie2005 Example 1, Fig 7): "
                 f"{len(events)} event{'s' * (len(events) != 1)} (dashed)", fontsize=10)
    fig.tight_layout()
    Path(a.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.png, dpi=120)
    print(f"plot written to {a.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
