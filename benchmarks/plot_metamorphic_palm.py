"""A run of metamorphic_palm with drive 1 locked at 0.5 s and released at 1.2 s, plotted.

    python benchmarks/plot_metamorphic_palm.py [--out docs/img/metamorphic_palm.png]

Joint angles and rates, energy and the loop's closure residual (engine level, RK4 1 ms).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "metamorphic_palm.png"))
    ap.add_argument("--stop", type=float, default=2.0)
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scenarios import metamorphic_palm
    sc = metamorphic_palm.build()
    sim = sc.simulator(embedding="numeric")
    names = [f"theta{i}" for i in range(1, 6)] + [f"omega{i}" for i in range(1, 6)] + [
        "energy", "loop_residual", "mode"]
    rows, ts, h = [], [], 1e-3
    for k in range(int(round(a.stop / h)) + 1):
        t = k * h
        if abs(t - 0.5) < h / 2:
            sim.set_inputs({"lock_drive1": 1})
        if abs(t - 1.2) < h / 2:
            sim.set_inputs({"lock_drive1": 0})
        if k:
            sim.advance(t)
        o = sc.observe(sim)
        rows.append([o[n] for n in names])
        ts.append(t)
    r, ts = np.array(rows), np.array(ts)
    fig, ax = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    for i in range(5):
        ax[0].plot(ts, r[:, i], label=names[i])
        ax[1].plot(ts, r[:, 5 + i], label=names[5 + i])
    ax[0].set_ylabel("joint angle (rad)")
    ax[1].set_ylabel("joint rate (rad/s)")
    ax[2].plot(ts, r[:, 10] * 1e3)
    ax[2].set_ylabel("energy (mJ)")
    ax[3].semilogy(ts, np.maximum(r[:, 11], 1e-18))
    ax[3].set_ylabel("loop residual")
    ax[3].set_xlabel("t (s)")
    for x in ax:
        x.axvspan(0.5, 1.2, color="0.9")
    ax[0].legend(ncol=5, fontsize=8)
    ax[1].legend(ncol=5, fontsize=8)
    ax[0].set_title("metamorphic palm: drive 1 locked 0.5-1.2 s (mueller eq 7 at the lock)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
