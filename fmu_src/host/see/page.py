"""The run as one self-contained HTML page (plotly, its JavaScript inlined: it opens from disk with
no server and no network): the mechanism in 2D (zoom, pan) or 3D (orbit, zoom) above a timeline
of the modes with each event marked (impacts as red crosses), a play/pause button and a time
slider.  Every frame carries the moving shapes and the declared points (the trace ``points``);
shapes that never move are drawn once.  ``seeGoto(k)`` (in the page) shows frame k and
``seeBench(n)`` draws n frames as fast as the browser can and returns the frames per second.

The frames are most of the page's data, so they hold no more than is drawn: coordinates rounded
to the pixel resolution the page needs (``resolution``), a frame's trace only the coordinates
that change from frame to frame (plotly merges a frame into the traces drawn, so the others stay;
a belt's marks keep their x and change their gaps), segments that meet (a chain's links) joined
into one polyline instead of repeating each joint, and no trace type (the trace's own).  The
page inlines plotly.js and the figure gzip-compressed (``write``), which the browser unpacks as
it opens the page."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

PIXELS = 2000         # the view's largest extent over the rounding step: at most 10^-0.3 of it
SLIDER_STEPS = 100    # the time slider's steps (every frame is played)

SCRIPT = """
var gd = document.getElementById('{plot_id}');
var seeOpts = {{frame: {{duration: 0, redraw: {redraw}}}, transition: {{duration: 0}},
               mode: 'immediate'}};
window.seeGoto = function (k) {{ return Plotly.animate(gd, [String(k)], seeOpts); }};
window.seeBench = async function (n) {{
  var t0 = performance.now();
  for (var k = 0; k < n; k++) {{ await Plotly.animate(gd, [String(k % {frames})], seeOpts); }}
  return 1000 * n / (performance.now() - t0);
}};
window.seeReady = false;
var m = /frame=(\\d+)/.exec(window.location.hash);
(m ? window.seeGoto(parseInt(m[1])) : Promise.resolve()).then(function () {{
  window.seeReady = true; }});
"""


def resolution(lo, hi, pixels=PIXELS) -> float:
    """The rounding step of the drawn coordinates (m): the largest power of ten not above the
    view's largest extent over ``pixels``.  On a plot 1000 pixels across a step is at most half
    a pixel, a rounding error a quarter; zoomed in 4 times, a pixel."""
    span = float(np.max(np.asarray(hi) - np.asarray(lo)))
    return float(10.0 ** np.floor(np.log10(max(span, 1e-9) / pixels)))


def _clean(a, step):
    """Numbers rounded to ``step`` (a power of ten), NaN as None (a gap in a line)."""
    digits = max(0, int(round(-np.log10(step))))
    a = np.round(np.asarray(a, dtype=float), digits)
    return [None if not np.isfinite(v) else float(v) for v in a]


def _xyz(poly, dim, step, keep=(0, 1, 2)):
    """A (points, dim) polyline as plotly's x, y[, z] (the axes in ``keep`` only)."""
    return {k: _clean(poly[:, i], step) for i, k in enumerate("xyz"[:dim]) if i in keep}


def _group(strokes, join=True):
    """Moving strokes of one colour and width joined into one trace (NaN rows between them);
    with ``join``, a stroke that starts where the one before it ends (at every frame) continues
    its polyline instead (a chain's links: each joint once)."""
    groups = {}
    for s in strokes:
        groups.setdefault((s.color, s.width, s.kind), []).append(s)
    out = []
    for (color, width, kind), ss in groups.items():
        F, dim = ss[0].xyz.shape[0], ss[0].xyz.shape[2]
        gap = np.full((F, 1, dim), np.nan)
        parts = [ss[0].xyz]
        for s in ss[1:]:
            end, start = parts[-1][:, -1], s.xyz[:, 0]
            if join and kind == "line" and np.isfinite(end).all() and np.array_equal(end, start):
                parts.append(s.xyz[:, 1:])
            else:
                parts += [gap, s.xyz]
        out.append((", ".join(s.name for s in ss), color, width, np.concatenate(parts, 1)))
    return out


def _changing(xyz, step) -> tuple:
    """The axes along which polyline ``xyz`` (frames, points, dim), rounded to ``step``, differs
    between frames (NaN gaps included)."""
    r = np.round(xyz / step)
    return tuple(i for i in range(xyz.shape[2])
                 if not np.array_equal(r[:, :, i], np.broadcast_to(r[:1, :, i], r.shape[:2]),
                                       equal_nan=True))


def figure(rec, kin, title="", step=None, share=True) -> dict:
    """The plotly figure (a dict, frames included) of run ``rec`` drawn by ``kin``
    (``kinematics.Kinematics``).  ``step``: the rounding of the coordinates (default
    ``resolution`` of the view); ``share=False`` repeats every moving trace whole in every frame
    and draws each segment apart (the page before it was made smaller:
    benchmarks/bench_see.py compares the two)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    dim, F = kin.dim, rec.frames
    strokes = kin.strokes(rec)
    points = kin.points(rec)
    step = step or resolution(*_bounds(strokes, points, dim))
    Trace = go.Scatter if dim == 2 else go.Scatter3d
    fig = make_subplots(rows=2, cols=1, row_heights=[0.8, 0.2], vertical_spacing=0.07,
                        specs=[[{"type": "xy" if dim == 2 else "scene"}], [{"type": "xy"}]])
    for s in (s for s in strokes if s.static):
        fig.add_trace(Trace(**_xyz(s.xyz[0], dim, step), mode="lines", name=s.name,
                            hoverinfo="name", line=dict(color=s.color, width=s.width)),
                      row=1, col=1)
    moving = _group([s for s in strokes if not s.static], join=share)
    changing = []           # (trace index, polyline, the axes its frames carry)
    for name, color, width, xyz in moving:
        changing.append((len(fig.data), xyz, _changing(xyz, step) if share else range(dim)))
        fig.add_trace(Trace(**_xyz(xyz[0], dim, step), mode="lines", name=name,
                            hoverinfo="name", line=dict(color=color, width=width)), row=1, col=1)
    changing.append((len(fig.data), points, _changing(points, step) if share else range(dim)))
    fig.add_trace(Trace(**_xyz(points[0], dim, step), mode="markers+text", name="points",
                        text=kin.point_names, textposition="top right",
                        marker=dict(size=5, color="#111111")), row=1, col=1)
    changing = [c for c in changing if c[2]]
    _timeline(fig, rec)
    cursor = len(fig.data)
    span = _mode_span(rec)
    fig.add_trace(go.Scatter(x=[rec.t[0]] * 2, y=span, mode="lines+text", name="now",
                             text=["", _now(rec, 0)], textposition="top right",
                             line=dict(color="#111111", width=2), showlegend=False), row=2, col=1)
    kind = "scatter" if dim == 2 else "scatter3d"
    frames = []
    for k in range(F):          # plain dicts: plotly's validation of 1000 frames takes seconds
        data = [dict(**_xyz(xyz[k], dim, step, keep)) for _, xyz, keep in changing]
        data.append(dict(x=[float(rec.t[k])] * 2, text=["", _now(rec, k)]))
        if not share:       # every trace typed and whole, as before
            for d in data[:-1]:
                d["type"] = kind
            data[-1].update(type="scatter", y=span)
        frames.append(dict(name=str(k), data=data, traces=[i for i, _, _ in changing]
                           + [cursor]))
    _layout(fig, rec, strokes, points, dim, title)
    out = fig.to_dict()
    out["layout"]["meta"] = dict(resolution=step)
    out["frames"] = frames
    return out


def _now(rec, k):
    m = int(rec.mode[k])
    return f"{rec.t[k]:.2f} s, {rec.mode_names.get(m, m)}"


def _mode_span(rec):
    modes = sorted(set(rec.mode_names) | set(int(m) for m in rec.mode))
    return [min(modes) - 0.5, max(modes) + 0.5]


def _timeline(fig, rec):
    """The mode over time (a step line) and the events: impacts red crosses, others diamonds,
    each with its time, guard and modes on hover."""
    import plotly.graph_objects as go

    fig.add_trace(go.Scatter(x=rec.t, y=rec.mode, mode="lines", line_shape="hv", name="mode",
                             line=dict(color="#2c3e50", width=3), showlegend=False), row=2, col=1)
    for impact, symbol, color, name in ((True, "x", "#c0392b", "impact"),
                                        (False, "diamond", "#7f8c8d", "event")):
        ev = [e for e in rec.events if e.impact == impact]
        if not ev:
            continue
        fig.add_trace(go.Scatter(
            x=[e.t for e in ev], y=[e.after for e in ev], mode="markers", name=name,
            marker=dict(symbol=symbol, size=10, color=color),
            text=[f"{e.label}: {rec.mode_names.get(e.before, e.before)} -> "
                  f"{rec.mode_names.get(e.after, e.after)}" for e in ev],
            hovertemplate="t = %{x:.4f} s<br>%{text}<extra></extra>"), row=2, col=1)


def _bounds(strokes, points, dim):
    # a curve carried away (a part on the belt) does not widen the view
    parts = [s.xyz.reshape(-1, dim) for s in strokes if s.kind != "curve" or s.static]
    parts.append(points.reshape(-1, dim))
    allp = np.concatenate(parts) if parts else np.zeros((1, dim))
    lo, hi = np.nanmin(allp, axis=0), np.nanmax(allp, axis=0)
    pad = 0.06 * max(float(np.max(hi - lo)), 1e-3)
    return lo - pad, hi + pad


def _layout(fig, rec, strokes, points, dim, title):
    lo, hi = _bounds(strokes, points, dim)
    redraw = dim == 3
    play = dict(frame=dict(duration=1000 * float(rec.t[1] - rec.t[0]) if rec.frames > 1 else 40,
                           redraw=redraw), fromcurrent=True, transition=dict(duration=0),
                mode="immediate")
    still = dict(frame=dict(duration=0, redraw=redraw), transition=dict(duration=0),
                 mode="immediate")
    modes = sorted(rec.mode_names)
    fig.update_layout(
        title=dict(text=title, x=0.02), margin=dict(l=60, r=20, t=50, b=20),
        height=760, template="plotly_white",
        legend=dict(x=1.01, y=1.0, xanchor="left", yanchor="top", font=dict(size=10)),
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-0.02, xanchor="left",
                          yanchor="top", showactive=False, buttons=[
                              dict(label="play", method="animate", args=[None, play]),
                              dict(label="pause", method="animate",
                                   args=[[None], still])])],
        sliders=[dict(active=0, x=0.15, len=0.85, y=-0.02, yanchor="top", ticklen=0,
                      minorticklen=0, currentvalue=dict(prefix="t = ", suffix=" s"),
                      steps=[dict(method="animate", label=f"{rec.t[k]:.2f}",
                                  args=[[str(k)], still]) for k in _slider_frames(rec)])])
    fig.update_yaxes(row=2, col=1, tickvals=modes, ticktext=[rec.mode_names[m] for m in modes],
                     range=_mode_span(rec), fixedrange=True)
    fig.update_xaxes(row=2, col=1, range=[float(rec.t[0]), float(rec.t[-1])], title_text="t (s)")
    if dim == 2:
        fig.update_xaxes(row=1, col=1, range=[lo[0], hi[0]], constrain="domain")
        fig.update_yaxes(row=1, col=1, range=[lo[1], hi[1]], scaleanchor="x", scaleratio=1)
    else:
        size = hi - lo
        ratio = size / size.max()
        fig.update_scenes(xaxis=dict(range=[lo[0], hi[0]]), yaxis=dict(range=[lo[1], hi[1]]),
                          zaxis=dict(range=[lo[2], hi[2]]), aspectmode="manual",
                          aspectratio=dict(x=ratio[0], y=ratio[1], z=ratio[2]))


def _slider_frames(rec, steps=SLIDER_STEPS) -> list:
    """Every k-th frame and the last, at most about ``steps``: plotly redraws the slider's
    steps on every frame played, and 1001 steps took two thirds of a frame's time (the 20-link
    chain played at 5 frames/s; ``benchmarks/bench_see.py``)."""
    every = max(1, -(-rec.frames // steps))
    return sorted(set(range(0, rec.frames, every)) | {rec.frames - 1})


def write(path: Path, fig, compress=True) -> Path:
    """The page, plotly.js inlined (it opens offline, from disk).  With ``compress``, plotly.js
    and the figure's script are inlined gzip-compressed (base64), and ``LOADER`` runs them
    through the browser's ``DecompressionStream``: 4.8 MB of plotly.js become 2.0 MB and the
    frames a seventh (Chromium 80, Firefox 113, Safari 16.4 and later)."""
    import plotly.io as pio

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    redraw = "true" if any(t["type"] == "scatter3d" for t in fig["data"]) else "false"
    html = pio.to_html(fig, include_plotlyjs=not compress, full_html=True, div_id="see",
                       validate=False, auto_play=False, post_script=SCRIPT.format(
                           plot_id="see", redraw=redraw, frames=len(fig["frames"])),
                       config=dict(displaylogo=False, responsive=True))
    if compress:
        head, script, tail = _split_script(html)
        html = (head + f'<script type="application/gzip" id="see-plotly">{_plotly_gz()}</script>'
                f'<script type="application/gzip" id="see-figure">{_gz(script)}</script>'
                + LOADER + tail)
    path.write_text(html)
    return path


LOADER = """<script>
(function () {
  function code(id) {
    var b = atob(document.getElementById(id).textContent), u = new Uint8Array(b.length);
    for (var i = 0; i < b.length; i++) { u[i] = b.charCodeAt(i); }
    return new Response(new Blob([u]).stream().pipeThrough(new DecompressionStream('gzip')))
      .text();
  }
  Promise.all([code('see-plotly'), code('see-figure')]).then(function (parts) {
    var s = document.createElement('script');
    s.text = parts.join(';\\n');
    document.body.appendChild(s);
  });
})();
</script>"""


def _split_script(html) -> tuple:
    """(before, the figure's script's code, after) of plotly's page: its last <script>."""
    start = html.rindex("<script>")
    end = html.index("</script>", start)
    return html[:start], html[start + len("<script>"):end], html[end + len("</script>"):]


def _gz(text) -> str:
    import base64
    import gzip
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=6, mtime=0)).decode()


@functools.lru_cache(maxsize=1)
def _plotly_gz() -> str:
    from plotly.offline import get_plotlyjs
    return _gz(get_plotlyjs())


def code(html) -> str:
    """The JavaScript a compressed page runs (plotly.js and the figure's script), decoded."""
    import base64
    import gzip
    import re
    return ";\n".join(gzip.decompress(base64.b64decode(b)).decode() for b in re.findall(
        r'<script type="application/gzip" id="see-\w+">([^<]*)</script>', html))
