"""kneed_walker over strides, like wang2019 Fig 9-10: the walk in the world frame, the segment
angles and the phase (flow number) with its jumps.

    PYTHONPATH=. python benchmarks/plot_walker.py [--t-end 4] [--out docs/img/kneed_walker.png]

Runs the scenario from its shipped start (the period-one gait, ``benchmarks/walker_gait.py``)
in the engine at RK4 1 ms and records every 5 ms.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def record(t_end, dt=5e-3):
    import scenarios
    sc = scenarios.load("kneed_walker").build()
    sim = sc.simulator()
    rows = []
    for k in range(int(round(t_end / dt)) + 1):
        if k:
            sim.advance(k * dt)
        o = sc.observe(sim)
        rows.append([sim.t, *sim.q, o["mode"], o["stance_foot_x"]])
    return np.array(rows), sc.defaults()["slope"], sim.events


def main():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scenarios.kneed_walker import NAMES, leg_points
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=4.0)
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "kneed_walker.png"))
    a = ap.parse_args()
    R, slope, events = record(a.t_end)
    t, q, mode = R[:, 0], R[:, 1:7], R[:, 7]
    fig = plt.figure(figsize=(10, 8.5))
    ax = fig.add_subplot(3, 1, 1)
    xs = np.array([q[0, 0] - 0.5, q[-1, 0] + 0.8])
    ax.plot(xs, -xs * math.tan(slope), "g", lw=3, label="slope")
    for k in range(0, len(t), 40):
        for leg, style in (("i", "-r"), ("o", "-b")):
            knee, foot = leg_points(q[k], leg)
            ax.plot([q[k, 0], knee[0], foot[0]], [q[k, 1], knee[1], foot[1]], style, lw=1,
                    alpha=0.6)
    ax.plot(q[:, 0], q[:, 1], "-.c", lw=2, label="hip")
    ax.plot([], [], "-r", label="inner leg")
    ax.plot([], [], "-b", label="outer leg")
    ax.set_aspect("equal")
    ax.set_xlabel("x (m, downhill)")
    ax.set_ylabel("y (m)")
    ax.set_title("kneed walker in the world frame (cf. wang2019 Fig 9)")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax = fig.add_subplot(3, 1, 2)
    for j, (name, style) in enumerate(zip(("qi1", "qi2", "qo1", "qo2"),
                                          ("k", "--r", "b", ":g"))):
        ax.plot(t, q[:, 2 + j], style, lw=1.5, label=name)
    for ev in events:
        if ev[1] == "heel_strike":
            ax.axvline(ev[0], color="0.8", lw=0.8, zorder=0)
    ax.set_ylabel("angle (rad)")
    ax.set_title("segment angles from the downward vertical (cf. wang2019 Fig 10); grey: heel "
                 "strikes")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax = fig.add_subplot(3, 1, 3)
    ax.step(t, mode, where="post", lw=2)
    ax.set_yticks(sorted(NAMES), [f"{k} {NAMES[k]}" for k in sorted(NAMES)], fontsize=8)
    ax.set_xlabel("time (s)")
    ax.set_title("phase (Fig 8) and jumps")
    fig.tight_layout()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
