"""``embed-fmu sweep --plot`` (issue 16): each numeric summary against the swept parameter,
one panel per summary; a second varied name colours the points; failed cases are marked
along the bottom of each panel with their status code."""

from __future__ import annotations

from pathlib import Path

from embed.base.errors import InputError


def plot(path: Path, df, axes: list, summaries: list, title: str) -> None:
    """Draw ``summaries`` (results columns) of ``df`` against ``axes[0]`` (a varied name),
    coloured by ``axes[1]`` if there is one, into ``path`` (PNG)."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'embed-fmu[demo]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    varied = [a for a in axes if df[a].nunique() > 1] or list(axes)
    if not varied:
        raise InputError("--plot: nothing is varied to plot against")
    x = varied[0]
    columns = [c for c in summaries if c in df and c != "event_times"]
    if not columns:
        raise InputError("--plot: no numeric summary to plot (see --summaries)")
    ok, bad = df[df["status"] == 0], df[df["status"] != 0]
    fig, panels = plt.subplots(len(columns), 1, sharex=True, squeeze=False,
                               figsize=(7, 1.4 + 1.8 * len(columns)))
    colour = varied[1] if len(varied) > 1 else None
    for ax, col in zip(panels[:, 0], columns):
        y = ok[col].astype(float)
        if colour:
            pts = ax.scatter(ok[x], y, c=ok[colour], s=14, cmap="viridis")
        else:
            order = ok[x].argsort()
            ax.plot(ok[x].iloc[order], y.iloc[order], ".-", ms=5)
        for xv, code in zip(bad[x], bad["status"]):
            ax.annotate(f"{int(code)}", (xv, 0), xycoords=("data", "axes fraction"),
                        color="C3", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel(col)
    lo, hi = float(df[x].min()), float(df[x].max())       # the failed cases' places too
    pad = 0.04 * (hi - lo) or 0.5
    panels[-1, 0].set_xlim(lo - pad, hi + pad)
    if colour:
        fig.colorbar(pts, ax=panels[:, 0].tolist(), label=colour)
    panels[-1, 0].set_xlabel(x)
    n_bad = len(bad)
    fig.suptitle(f"{title}: {len(df)} cases" + (f", {n_bad} failed (status codes in red)"
                                                if n_bad else ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
