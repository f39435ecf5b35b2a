"""The automaton graph (``graph.automaton_graph``) drawn as SVG with matplotlib (no graphviz binary):
the modes in one row in the order the initial reset map reaches them (breadth first), each
switching condition a curved arrow (impacts red and thick, the Zeno handover dashed), parallel
arrows bent apart, a condition back into its own mode a loop above it."""

from __future__ import annotations

from pathlib import Path

from fmu_src.host.see.graph import _edge_label, _node_label, automaton_graph


def _order(nodes, edges):
    ids = [n.id for n in nodes]
    seen, todo = [], [e.target for e in edges if e.source == "start"]
    while todo:
        k = todo.pop(0)
        if k in ids and k not in seen:
            seen.append(k)
            todo += [e.target for e in edges if e.source == k]
    return seen + [k for k in ids if k not in seen]


def write(path: Path, sc) -> Path:
    """Write the SVG of scenario ``sc``'s automaton to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    nodes, edges = automaton_graph(sc)
    order = _order(nodes, edges)
    pos = {k: (4.2 * i, 0.0) for i, k in enumerate(order)}
    pos["start"] = (-2.2, 0.0)
    fig, ax = plt.subplots(figsize=(max(6.0, 3.4 * len(order) + 2), 5.2))
    for n in nodes:
        x, y = pos[n.id]
        ax.text(x, y, _node_label(n).replace("<br/>", "\n"), ha="center", va="center",
                fontsize=9, bbox=dict(boxstyle="round,pad=0.6", fc="#eaf2f8", ec="#1f4e79", lw=1.5))
    ax.plot(*pos["start"], "o", color="k", ms=8)
    pairs = {}
    for e in edges:
        key = tuple(sorted(map(str, (e.source, e.target))))
        i = pairs[key] = pairs.get(key, -1) + 1
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        style = dict(color="#c0392b" if e.impact else "#2c3e50", lw=2.0 if e.impact else 1.2,
                     linestyle="--" if e.kind in ("zeno", "initial") else "-")
        label = "Zeno handover" if e.kind == "zeno" else _edge_label(e).replace("<br/>", "\n")
        if e.source == e.target:            # a loop above (below) the node
            h = 1.3 + 0.9 * i
            a = FancyArrowPatch((x0 - 0.5, y0 + 0.6), (x0 + 0.5, y0 + 0.6),
                                connectionstyle=f"arc3,rad=-{1.2 + 0.3 * i}",
                                arrowstyle="-|>", mutation_scale=14, **style)
            lx, ly = x0, y0 + h
        else:
            sign = 1 if str(e.source) < str(e.target) else -1
            rad = sign * (0.25 + 0.22 * i)
            a = FancyArrowPatch((x0, y0), (x1, y1), connectionstyle=f"arc3,rad={rad}",
                                arrowstyle="-|>", mutation_scale=14, shrinkA=38, shrinkB=38,
                                **style)
            lx = (x0 + x1) / 2
            ly = (y0 + y1) / 2 - rad * abs(x1 - x0) / 2
        ax.add_patch(a)
        if e.kind != "initial":
            ax.text(lx, ly, label, ha="center", va="center", fontsize=6.5, color=style["color"],
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    xs = [p[0] for p in pos.values()]
    ax.set_xlim(min(xs) - 1.5, max(xs) + 2.0)
    ax.set_ylim(-3.6, 3.6)
    ax.set_axis_off()
    ax.set_title(f"hybrid automaton of {sc.name}", fontsize=11)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", bbox_inches="tight")
    plt.close(fig)
    return path
