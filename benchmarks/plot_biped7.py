"""Stroboscopic view of braun_goldfarb2012's seven-link biped (Fig 3(a)): docs/img/biped7.png.

    python benchmarks/plot_biped7.py [--out docs/img/biped7.png]

The engine's run from the paper's q(0) (made consistent, ``start_correction``) drawn every
0.1 s over one period (2 s), and the 50th period's configurations (t in [98, 100] s) over
them: the motion repeats (Fig 3(b)).  Also the phase plot of theta1 (Fig 3(b)).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def skeleton(q, P):
    """Points (x, y) of the stick figure: head end of the trunk, hip, knees, ankles, feet."""
    x, y, th, t1, t2, t3, t4, t5, t6 = q
    c = np.array([x, y])
    d = lambda a: np.array([math.cos(a), math.sin(a)])         # noqa: E731
    hip = c - P["l_c"] * d(th)
    top = hip + 0.288 * 1.8 * d(th)
    lines = [np.array([hip, top])]
    for ta, tb, tf in ((t1, t2, t3), (t4, t5, t6)):
        knee = hip - P["l1"] * d(ta)
        ankle = knee - P["l2"] * d(tb)
        R = np.array([[math.cos(tf), -math.sin(tf)], [math.sin(tf), math.cos(tf)]])
        heel, toe = ankle + R @ [-P["b"], -P["h"]], ankle + R @ [P["a"], -P["h"]]
        lines.append(np.array([hip, knee, ankle, heel, toe, ankle]))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "biped7.png"))
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scenarios import biped7
    sc = biped7.build()
    P = sc.defaults()
    sim = sc.simulator()
    Q, T = [], []
    for k in range(0, 10001):
        if k:
            sim.advance(k * 0.01)
        Q.append(sim.q.copy())
        T.append(sim.t)
    Q, T = np.array(Q), np.array(T)
    fig, (ax, ph) = plt.subplots(1, 2, figsize=(10, 4.8), gridspec_kw={"width_ratios": [1.2, 1]})
    for k in range(0, 200, 10):
        for i, line in enumerate(skeleton(Q[k], P)):
            ax.plot(line[:, 0], line[:, 1], color=("k", "tab:blue", "tab:red")[i], lw=0.8,
                    alpha=0.6)
    for k in range(9800, 10001, 10):
        for line in skeleton(Q[k], P):
            ax.plot(line[:, 0], line[:, 1], ":", color="tab:orange", lw=0.6)
    ax.axhline(0, color="gray", lw=0.5)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"every 0.1 s of t in [0, 2] s; dotted: [98, 100] s\n"
                 f"start_correction = {sim.start_correction:.3g}", fontsize=9)
    rate = np.gradient(Q[:, 3], T)
    ph.plot(Q[:, 3], rate, lw=0.5)
    ph.set_xlabel("theta1 (rad)")
    ph.set_ylabel("d theta1/dt (rad/s)")
    ph.set_title("phase plot over 100 s (50 periods)", fontsize=9)
    fig.suptitle("biped7: braun_goldfarb2012 Sec 3.2, Fig 3", fontsize=10)
    fig.tight_layout()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
