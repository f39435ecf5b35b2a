"""The FMI 3.0 co-simulation of fmu_src/host/cosim3.py (pi_controller drives disk_ramp's F_ext),
with and without early return: around each of disk_ramp's located events, the controller's
command (held between communication points) and the located event time.  With early return
the command computed from the event's state starts at the event; without it, at the next grid
point.

    python benchmarks/plot_cosim3.py [--fmus DIR] [--out docs/img/cosim3_early_return.png]

DIR must hold disk_ramp_fmi3.fmu and pi_controller_fmi3.fmu (built here when it does not).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TITLES = ("slip reverses (sliding on)", "sliding -> rolling", "rolling -> sliding (zone's end)")


def main(argv=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fmu_src.builder.build import build
    from fmu_src.host.cosim3 import run

    ap = argparse.ArgumentParser()
    ap.add_argument("--fmus", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "cosim3_early_return.png")
    a = ap.parse_args(argv)
    d = a.fmus or Path(tempfile.mkdtemp(prefix="cosim3_"))
    for name in ("disk_ramp", "pi_controller"):
        if not (d / f"{name}_fmi3.fmu").exists():
            build(name, d, fmi=(2, 3), log=lambda m: None)
    (plain, _), (early_rows, early) = (run(d, er) for er in (False, True))
    h = 0.01
    fig, axes = plt.subplots(1, len(early), figsize=(4.2 * len(early), 3.6))
    for ax, t_e, title in zip(axes, early, TITLES):
        for rows, label, style in ((plain, "FMI 3.0, no early return", "C1"),
                                   (early_rows, "FMI 3.0, early return", "C0")):
            sel = [r for r in rows if t_e - 3 * h <= r["time"] <= t_e + 3 * h]
            ax.step([r["time"] for r in sel], [r["command"] for r in sel], where="post",
                    color=style, label=label, marker="o", ms=3)
        ax.axvline(t_e, color="k", ls="--", lw=0.8, label="located event")
        ax.set_title(f"{title}\nt = {t_e:.6f} s", fontsize=9)
        ax.set_xlabel("time [s]")
    axes[0].set_ylabel("controller command = disk F_ext [N]")
    axes[0].legend(fontsize=7)
    fig.suptitle("PI controller + disk_ramp (fmpy FMU3Slave, h = 10 ms): "
                 "the command from the event's state", fontsize=10)
    fig.tight_layout()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
