"""The run's animation as a GIF (matplotlib.animation with Pillow's writer): the same shapes and
timeline as the page, every k-th frame so that at most ``max_frames`` are drawn (a 10 s run at
100 frames/s becomes 100 frames at 10 frames/s by default, real time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write(path: Path, rec, kin, title="", max_frames=100, dpi=60, size=(6.4, 5.6)) -> Path:
    """Write the GIF of run ``rec`` drawn by ``kin`` (``kinematics.Kinematics``) to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter

    from fmu_src.host.see.page import _bounds

    dim = kin.dim
    strokes = kin.strokes(rec)
    points = kin.points(rec)
    every = max(1, int(np.ceil(rec.frames / max_frames)))
    frames = list(range(0, rec.frames, every))
    fig = plt.figure(figsize=size, dpi=dpi)
    ax = fig.add_axes([0.08, 0.3, 0.9, 0.65], projection="3d" if dim == 3 else None)
    tl = fig.add_axes([0.16, 0.07, 0.8, 0.16])
    lo, hi = _bounds(strokes, points, dim)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if dim == 3:
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect(hi - lo)
    else:
        ax.set_aspect("equal")
    ax.set_title(title, fontsize=10)
    lines = []
    for s in strokes:
        xyz = s.xyz[0]
        (ln,) = ax.plot(*[xyz[:, i] for i in range(dim)], color=s.color,
                        lw=max(1.0, s.width * 0.6))
        lines.append((s, ln))
    # the timeline: the mode as a step line, events (impacts red x), a moving cursor
    modes = sorted(rec.mode_names)
    tl.step(rec.t, rec.mode, where="post", color="#2c3e50", lw=2)
    for e in rec.events:
        tl.plot([e.t], [e.after], "x" if e.impact else "D", color="#c0392b" if e.impact
                else "#7f8c8d", ms=5)
    tl.set_yticks(modes, [rec.mode_names[m] for m in modes], fontsize=7)
    tl.set_xlim(rec.t[0], rec.t[-1])
    tl.set_ylim(min(modes) - 0.5, max(modes) + 0.5)
    tl.tick_params(labelsize=7)
    cursor = tl.axvline(rec.t[0], color="k", lw=1.5)
    label = ax.text2D(0.02, 0.95, "", transform=ax.transAxes) if dim == 3 else \
        ax.text(0.02, 0.95, "", transform=ax.transAxes, fontsize=9)

    def draw(k):
        for s, ln in lines:
            if s.static:
                continue
            xyz = s.xyz[k]
            ln.set_data(xyz[:, 0], xyz[:, 1])
            if dim == 3:
                ln.set_3d_properties(xyz[:, 2])
        cursor.set_xdata([rec.t[k]] * 2)
        m = int(rec.mode[k])
        label.set_text(f"t = {rec.t[k]:.2f} s   {rec.mode_names.get(m, m)}")
        return [ln for _, ln in lines] + [cursor, label]

    dt = float(rec.t[every] - rec.t[0]) if rec.frames > every else 0.1
    anim = FuncAnimation(fig, draw, frames=frames, blit=False)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    anim.save(str(path), writer=PillowWriter(fps=max(1, round(1 / dt))), dpi=dpi)
    plt.close(fig)
    return path
