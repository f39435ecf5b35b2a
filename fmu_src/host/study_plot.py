"""``embed-fmu sweep --plot`` (issues 16, 29): each numeric summary against the first varied
name, one row of panels per summary; a second varied name colours the points, a third splits
the panels into columns (one per value, or per quarter of its range when it takes more than
MAX_COLUMNS values), any further one is named in the title.  Nothing is dropped silently: a
case that ran but whose summary is NaN (a mode never reached) is a grey triangle at the bottom
edge ("never reached"), a failed case its status code in red there; a summary whose values are
all whole numbers (counts, modes) gets integer ticks."""

from __future__ import annotations

import math
from pathlib import Path

from embed.base.errors import InputError

MAX_COLUMNS = 4          # a third varied name with more values is split into quarters


def plot(path: Path, df, axes: list, summaries: list, title: str) -> None:
    """Draw ``summaries`` (results columns) of ``df`` against ``axes[0]`` (a varied name),
    coloured by ``axes[1]``, in columns by ``axes[2]`` (module docstring), into ``path``
    (PNG); ``title``: the model's name (a path is shortened to its file's stem)."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'embed-fmu[demo]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(df, axes, summaries, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure(df, axes: list, summaries: list, title: str):
    """The figure ``plot`` saves (matplotlib imported already)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    varied = [a for a in axes if df[a].nunique() > 1] or list(axes)
    if not varied:
        raise InputError("--plot: nothing is varied to plot against")
    x = varied[0]
    columns = [c for c in summaries if c in df and c != "event_times"]
    if not columns:
        raise InputError("--plot: no numeric summary to plot (see --summaries)")
    colour = varied[1] if len(varied) > 1 else None
    groups = split(df, varied[2]) if len(varied) > 2 else [("", df)]
    fig, panels = plt.subplots(len(columns), len(groups), sharex=True, sharey="row",
                               squeeze=False, figsize=(3 + 4 * len(groups),
                                                       1.6 + 1.8 * len(columns)))
    cmin, cmax = (float(df[colour].min()), float(df[colour].max())) if colour else (0, 1)
    handles = {}
    for j, (label, part) in enumerate(groups):
        ok, bad = part[part["status"] == 0], part[part["status"] != 0]
        for i, col in enumerate(columns):
            ax = panels[i, j]
            y = ok[col].astype(float)
            good, nan = ok[y.notna()], ok[y.isna()]
            if colour:
                pts = ax.scatter(good[x], y[y.notna()], c=good[colour], s=14, cmap="viridis",
                                 vmin=cmin, vmax=cmax)
            else:
                order = good[x].argsort()
                ax.plot(good[x].iloc[order], y[y.notna()].iloc[order], ".-", ms=5)
            if len(nan):
                handles["never reached (NaN)"] = ax.scatter(
                    nan[x], [0.0] * len(nan), marker="v", s=30, color="0.45", clip_on=False,
                    transform=ax.get_xaxis_transform(), zorder=3)
            for xv, code in zip(bad[x], bad["status"]):
                handles["failed (status code)"] = ax.annotate(
                    f"{int(code)}", (xv, 0.03), xycoords=("data", "axes fraction"),
                    color="C3", ha="center", va="bottom", fontsize=7)
            finite = df[col].astype(float)
            finite = finite[finite.map(math.isfinite)]
            if len(finite) and all(float(v).is_integer() for v in finite):
                ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            if j == 0:
                ax.set_ylabel(col)
            if i == 0 and label:
                ax.set_title(label, fontsize=9)
        panels[-1, j].set_xlabel(x)
    lo, hi = float(df[x].min()), float(df[x].max())       # the failed cases' places too
    pad = 0.04 * (hi - lo) or 0.5
    panels[-1, 0].set_xlim(lo - pad, hi + pad)
    if colour:
        fig.colorbar(pts, ax=panels.ravel().tolist(), label=colour)
    if handles:
        legend(fig, panels[0, -1], handles)
    n_bad = int((df["status"] != 0).sum())
    head = f"{Path(str(title)).stem}: {len(df)} cases" + (f", {n_bad} failed" if n_bad else "")
    rest = varied[3:]
    fig.suptitle(head + (f" (also varied, not drawn: {', '.join(rest)})" if rest else ""))
    return fig


def split(df, name):
    """[(title, rows)] of ``df`` by the values of ``name``: one group per value, or per
    quarter of its range (quantiles) when it takes more than MAX_COLUMNS values."""
    values = sorted(df[name].unique())
    if len(values) <= MAX_COLUMNS:
        return [(f"{name} = {v:g}", df[df[name] == v]) for v in values]
    edges = [float(df[name].quantile(k / MAX_COLUMNS)) for k in range(MAX_COLUMNS + 1)]
    out = []
    for k, (a, b) in enumerate(zip(edges, edges[1:])):
        part = df[(df[name] >= a) & ((df[name] < b) if k < MAX_COLUMNS - 1 else (df[name] <= b))]
        if len(part):
            out.append((f"{a:.3g} <= {name} {'<' if k < MAX_COLUMNS - 1 else '<='} {b:.3g}",
                        part))
    return out


def legend(fig, ax, handles):
    """The markers of the cases that have no value, explained once for the figure."""
    from matplotlib.lines import Line2D
    proxies = {"never reached (NaN)": Line2D([], [], marker="v", ls="", color="0.45"),
               "failed (status code)": Line2D([], [], marker="$9$", ls="", color="C3")}
    ax.legend([proxies[k] for k in handles], list(handles), fontsize=7, loc="best")
