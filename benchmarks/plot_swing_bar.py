"""A plot like wang2019 Fig 6 of the swing bar's run (Table 2, RK4 at 1 ms, 30 s as the
paper's script): the bar ends' 3D trajectories, the ball joint's quaternion S_j, and the x and
z of the bar ends against time.

    python benchmarks/plot_swing_bar.py [--out docs/img/swing_bar.png] [--t-end 30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def record(t_end, dt=0.01):
    from scenarios import swing_bar
    sc = swing_bar.build()
    sim = sc.simulator()
    rows = [sc.observe(sim)]
    for k in range(1, int(round(t_end / dt)) + 1):
        sim.advance(k * dt)
        rows.append(sc.observe(sim))
    t = np.arange(len(rows)) * dt
    return t, {k: np.array([r[k] for r in rows]) for k in rows[0]}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "swing_bar.png"))
    ap.add_argument("--t-end", type=float, default=30.0)
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t, o = record(a.t_end)
    fig = plt.figure(figsize=(7, 11))
    ax = fig.add_subplot(4, 1, 1, projection="3d")
    names = ("bar 1 end (B)", "bar 2 end (E2)", "bar 3 end (E3)")
    styles = ("-.k", "r", ":b")
    for k, (name, st) in enumerate(zip(names, styles), start=1):
        ax.plot(o[f"end{k}_x"], o[f"end{k}_y"], o[f"end{k}_z"], st, lw=1, label=name)
    last = [(0.0, 0.0, 0.0)] + [(o[f"end{k}_x"][-1], o[f"end{k}_y"][-1], o[f"end{k}_z"][-1])
                                for k in (1, 2, 3)]
    ax.plot(*np.array(last).T, "g", lw=4, label=f"bars at t = {a.t_end:g} s")
    ax.set(xlabel="x (m)", ylabel="y (m)", zlabel="z (m)", title="3D trajectory in world frame")
    ax.legend(fontsize=7, loc="upper left")
    ax = fig.add_subplot(4, 1, 2)
    for c, st in zip("wxyz", ("-r", "-g", "-b", "--k")):
        ax.plot(t, o[f"sigma_{c}"], st, lw=1, label=f"S_j {c}")
    ax.set(xlabel="time (s)", ylabel="value", title="quaternion S_j of the ball joint")
    ax.legend(ncol=4, fontsize=7)
    for i, c in enumerate("xz"):
        ax = fig.add_subplot(4, 1, 3 + i)
        for k, (name, st) in enumerate(zip(names, ("-g", "-b", ":r")), start=1):
            ax.plot(t, o[f"end{k}_{c}"], st, lw=1, label=name)
        ax.set(xlabel="time (s)", ylabel=f"{c} (m)", title=f"{c} of the bar end points")
        ax.legend(ncol=3, fontsize=7)
    fig.tight_layout()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=80)
    print(f"wrote {a.out}: dq_H({a.t_end:g} s) = {o['dq_H'][-1]:.4f} rad/s, "
          f"energy {o['energy'][0]:.3f} -> {o['energy'][-1]:.3f} J")


if __name__ == "__main__":
    main()
