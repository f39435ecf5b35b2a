"""The run's animation as a GIF: the same shapes and timeline as the page, drawn with matplotlib
(Agg) and written with Pillow.  The figure is drawn once; every frame then restores that
background and redraws only what moves (the moving shapes, the timeline's cursor, the time and
mode label: matplotlib's blitting), and Pillow quantizes each frame to the first frame's
palette.  Frames are taken every k-th recorded frame so that the GIF runs in real time at about
``fps`` frames per second (25 by default: a 10 s run at 100 recorded frames/s gives 250)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def frame_indices(rec, fps=25.0, max_frames=None) -> list:
    """The recorded frames drawn: every k-th, k the smallest that gives at most ``fps`` frames
    per second of run time (and at most ``max_frames`` frames)."""
    dt = float(rec.t[1] - rec.t[0]) if rec.frames > 1 else 1.0
    every = max(1, int(np.ceil(1.0 / (fps * dt) - 1e-9)))
    if max_frames:
        every = max(every, int(np.ceil(rec.frames / max_frames)))
    return list(range(0, rec.frames, every))


def _palette(first, colors):
    """A 64-colour palette for the first frame ``first`` and the shapes' ``colors`` (a shape
    that appears later, a force arrow, keeps its colour)."""
    from PIL import Image, ImageColor

    w, h = first.size
    band = max(8, h // 8)
    sample = Image.new("RGB", (w, h + band * len(colors)), "white")
    sample.paste(first, (0, 0))
    for i, c in enumerate(colors):
        sample.paste(ImageColor.getrgb(c), (0, h + i * band, w, h + (i + 1) * band))
    return sample.quantize(colors=64, method=Image.Quantize.MEDIANCUT)


def write(path: Path, rec, kin, title="", fps=25.0, max_frames=None, dpi=60,
          width_in=6.4) -> Path:
    """Write the GIF of run ``rec`` drawn by ``kin`` (``kinematics.Kinematics``) to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from PIL import Image

    from fmu_src.host.see.page import _bounds, _group

    dim = kin.dim
    strokes = kin.strokes(rec)
    points = kin.points(rec)
    frames = frame_indices(rec, fps, max_frames)
    lo, hi = _bounds(strokes, points, dim)
    # the mechanism's axes as tall as its bounds need (2D, equal scales), the timeline below
    W, left, right = width_in, 0.1, 0.02
    axh = 0.8 * W if dim == 3 else float(np.clip((1 - left - right) * W * (hi[1] - lo[1])
                                                  / (hi[0] - lo[0]), 1.4, 0.8 * W))
    bottom, tlh, gap, top = 0.3, 0.9, 0.45, 0.35
    H = bottom + tlh + gap + axh + top
    fig = Figure(figsize=(W, H), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([left, (bottom + tlh + gap) / H, 1 - left - right, axh / H],
                      projection="3d" if dim == 3 else None)
    tl = fig.add_axes([0.18, bottom / H, 0.8, tlh / H])
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if dim == 3:
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect(hi - lo)
    else:
        ax.set_aspect("equal")
    ax.set_title(title, fontsize=10)
    for s in strokes:
        if s.static:
            ax.plot(*[s.xyz[0][:, i] for i in range(dim)], color=s.color,
                    lw=max(1.0, s.width * 0.6))
    moving = []         # the moving shapes of one colour and width: one line, as on the page
    for _, color, lw, xyz in _group([s for s in strokes if not s.static]):
        (ln,) = ax.plot(*[xyz[0][:, i] for i in range(dim)], color=color,
                        lw=max(1.0, lw * 0.6), animated=True)
        moving.append((xyz, ln))
    # the timeline: the mode as a step line, events (impacts red x), a moving cursor
    modes = sorted(set(rec.mode_names) | {int(m) for m in rec.mode})
    tl.step(rec.t, rec.mode, where="post", color="#2c3e50", lw=2)
    for e in rec.events:
        tl.plot([e.t], [e.after], "x" if e.impact else "D", color="#c0392b" if e.impact
                else "#7f8c8d", ms=5)
    tl.set_yticks(modes, [str(rec.mode_names.get(m, m)) for m in modes], fontsize=7)
    tl.set_xlim(rec.t[0], rec.t[-1])
    tl.set_ylim(min(modes) - 0.5, max(modes) + 0.5)
    tl.tick_params(labelsize=7)
    cursor = tl.axvline(rec.t[0], color="k", lw=1.5, animated=True)
    # the time and mode label is drawn by Pillow on each frame: matplotlib's text layout and
    # rendering cost more than the rest of a frame together
    from PIL import ImageDraw, ImageFont
    font = ImageFont.load_default(size=int(round(9 * dpi / 72 * 1.4)))
    canvas.draw()
    x0, y1 = ax.get_position().x0, ax.get_position().y1
    width, height = canvas.get_width_height()
    at = (int(x0 * width) + 6, int((1 - y1) * height) + 4)
    background = canvas.copy_from_bbox(fig.bbox)
    images = []
    palette = None
    for k in frames:
        canvas.restore_region(background)
        for frames_xyz, ln in moving:
            xyz = frames_xyz[k]
            ln.set_data(xyz[:, 0], xyz[:, 1])
            if dim == 3:
                ln.set_3d_properties(xyz[:, 2])
            ax.draw_artist(ln)
        cursor.set_xdata([rec.t[k]] * 2)
        tl.draw_artist(cursor)
        m = int(rec.mode[k])
        rgb = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0,
                              1).convert("RGB")
        ImageDraw.Draw(rgb).text(at, f"t = {rec.t[k]:.2f} s   {rec.mode_names.get(m, m)}",
                                 fill=(17, 17, 17), font=font)
        if palette is None:     # one palette: the first frame's colours and every shape's
            palette = _palette(rgb, [s.color for s in strokes])
        images.append(rgb.quantize(palette=palette, dither=Image.Dither.NONE))
    dt = float(rec.t[frames[1]] - rec.t[frames[0]]) if len(frames) > 1 else 0.1
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(path, save_all=True, append_images=images[1:], loop=0,
                   duration=max(20, int(round(1000 * dt))), disposal=1)
    return path
