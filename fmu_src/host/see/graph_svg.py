"""The automaton graph (``graph.automaton_graph``) drawn as SVG with matplotlib (no graphviz binary).

Layout: the modes on a circle in the order the initial reset map reaches them (breadth first),
the first on the left, the initial reset map a dotted arrow from a dot outside the circle.  Each
switching condition is a curved arrow (impacts red and thick, the Zeno handover dashed),
arrows between the same two modes bent apart, a condition back into its own mode a loop on the
node's outer side.  Each arrow's label goes to the free spot nearest its arrow's midpoint (no
node, no label placed before it there), and a label carried away from its arrow is tied to it
by a thin leader.  A guard that
leads to several modes prints its condition once, on its first arrow.

The axes are one inch per data unit, so text measured once keeps its size while the labels
move and the figure is resized to what was drawn."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from fmu_src.host.see.graph import _edge_label, _node_label, automaton_graph

GAP = 0.08            # inches between two labels, or a label and a node


def _order(nodes, edges):
    ids = [n.id for n in nodes]
    seen, todo = [], [e.target for e in edges if e.source == "start"]
    while todo:
        k = todo.pop(0)
        if k in ids and k not in seen:
            seen.append(k)
            todo += [e.target for e in edges if e.source == k]
    return seen + [k for k in ids if k not in seen]


def _positions(order):
    """Node centres (inches) on a circle, the first mode on the left, clockwise."""
    n = len(order)
    if n == 1:
        return {order[0]: np.zeros(2)}
    R = max(2.4, 4.6 / (2 * math.sin(math.pi / n)))
    return {k: R * np.array([-math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)])
            for i, k in enumerate(order)}


def _label_text(e, shown):
    """An edge's label; the condition of a guard already shown from that mode is left out."""
    if e.kind == "zeno":
        return "Zeno handover"
    key = (e.source, e.guard)
    if key in shown:
        return e.guard + ("\nIMPACT" if e.impact else "")
    shown.add(key)
    return _edge_label(e).replace("<br/>", "\n")


def _free(a, placed):
    return all(np.any(np.abs(a["c"] - b["c"]) >= a["h"] + b["h"] + GAP) for b in placed)


def _place(labels, fixed):
    """Place the label boxes (dicts with centre ``c`` at their arrow's midpoint, half sizes
    ``h``) one after the other, each at the free spot nearest its midpoint (on rings of
    growing radius about it) that overlaps no node and no label placed before it."""
    placed = list(fixed)
    for a in labels:
        home = a["c"].copy()
        for r in np.arange(0.0, 30.0, 0.12):
            n = 1 if r == 0 else 24
            spots = [home + r * np.array([math.cos(2 * math.pi * i / n),
                                          math.sin(2 * math.pi * i / n)]) for i in range(n)]
            free = [c for c in spots if _free({"c": c, "h": a["h"]}, placed)]
            if free:
                a["c"] = free[0]
                break
        placed.append(a)


def draw(sc):
    """The figure of scenario ``sc``'s automaton and the boxes of its texts: (fig, [(key,
    Bbox in inches)]), key ("node", mode id) or ("edge", (source, target, guard))."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.transforms import Bbox

    nodes, edges = automaton_graph(sc)
    order = _order(nodes, edges)
    pos = _positions(order)
    R = max(float(np.linalg.norm(p)) for p in pos.values())
    span = R + 4.0
    fig = Figure(figsize=(2 * span, 2 * span), dpi=72)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-span, span)
    ax.set_ylim(-span, span)
    ax.set_axis_off()
    texts = {}
    for n in nodes:
        texts[n.id] = ax.text(*pos[n.id], _node_label(n).replace("<br/>", "\n"), ha="center",
                              va="center", fontsize=9, zorder=4, bbox=dict(
                                  boxstyle="round,pad=0.5", fc="#eaf2f8", ec="#1f4e79", lw=1.5))
    renderer = canvas.get_renderer()
    inch = ax.transData.inverted()

    def box(t):
        """The text's box (its bbox patch laid out, nothing drawn) in inches."""
        t.update_bbox_position_size(renderer)
        b = t.get_bbox_patch().get_window_extent(renderer)
        (x0, y0), (x1, y1) = inch.transform([[b.x0, b.y0], [b.x1, b.y1]])
        return {"c": np.array([(x0 + x1) / 2, (y0 + y1) / 2]),
                "h": np.array([(x1 - x0) / 2, (y1 - y0) / 2])}

    node_box = {k: box(t) for k, t in texts.items()}
    first = pos[order[0]] if order else np.zeros(2)
    start = first + np.array([-(node_box[order[0]]["h"][0] + 1.0), 0.0]) if order else first
    ax.plot(*start, "o", color="k", ms=8)
    # the arrows, and each label at its arrow's midpoint
    labels, shown, pairs, seen, apexes = [], set(), {}, set(), []
    for e in edges:
        key = (e.source, e.target, e.guard)
        if key in seen or e.target not in pos:
            continue
        seen.add(key)
        style = dict(color="#c0392b" if e.impact else "#2c3e50", lw=2.0 if e.impact else 1.2,
                     linestyle="--" if e.kind in ("zeno", "initial") else "-",
                     arrowstyle="-|>", mutation_scale=14, zorder=2)
        if e.source == "start":       # to a mode past the first: bent around the first
            j = pairs["start"] = pairs.get("start", -1) + (e.target != order[0])
            rad = 0 if e.target == order[0] else (-1) ** j * (0.35 + 0.15 * (j // 2))
            ax.add_patch(FancyArrowPatch(start, pos[e.target], patchB=texts[e.target]
                                         .get_bbox_patch(), shrinkA=5, shrinkB=2,
                                         connectionstyle=f"arc3,rad={rad}", **style))
            d = pos[e.target] - start
            apexes.append((start + pos[e.target]) / 2 + 0.5 * rad * np.array([d[1], -d[0]]))
            continue
        a, b = pos[e.source], pos[e.target]
        pair = frozenset((e.source, e.target))
        i = pairs[pair] = pairs.get(pair, -1) + 1
        if e.source == e.target:              # a loop on the node's outer side
            nb = node_box[e.source]
            up = 1.0 if a[1] >= 0 or len(pos) == 1 else -1.0
            edge_y = nb["c"][1] + up * nb["h"][1]
            w = min(0.45, nb["h"][0] * 0.6)
            p0 = np.array([a[0] - w, edge_y])
            p1 = np.array([a[0] + w, edge_y])
            rad = -up * (1.4 + 0.5 * i)
            ax.add_patch(FancyArrowPatch(p0, p1, connectionstyle=f"arc3,rad={rad}",
                                         shrinkA=0, shrinkB=0, **style))
            anchor = np.array([a[0], edge_y + up * (w * abs(rad) + 0.08)])
            push = np.array([0.0, up])            # the label beyond the loop's apex
        else:
            rad = 0.18 + 0.22 * i
            ax.add_patch(FancyArrowPatch(a, b, connectionstyle=f"arc3,rad={rad}",
                                         patchA=texts[e.source].get_bbox_patch(),
                                         patchB=texts[e.target].get_bbox_patch(),
                                         shrinkA=2, shrinkB=2, **style))
            d = b - a
            anchor = (a + b) / 2 + 0.5 * rad * np.array([d[1], -d[0]])
            push = np.zeros(2)
        apexes.append(anchor)
        t = ax.text(*anchor, _label_text(e, shown), ha="center", va="center", fontsize=6.5,
                    color=style["color"], zorder=5, bbox=dict(boxstyle="round,pad=0.25",
                                                              fc="white", ec=style["color"],
                                                              lw=0.4, alpha=0.92))
        labels.append((key, t, anchor, style["color"], push))
    moving = [box(t) for _, t, _, _, _ in labels]
    for m, (_, _, anchor, _, push) in zip(moving, labels):
        m["c"] = anchor + push * m["h"]
    _place(moving, list(node_box.values()))
    for m, (key, t, anchor, color, _) in zip(moving, labels):
        t.set_position(m["c"])
        if np.linalg.norm(m["c"] - anchor) > 0.3 + np.linalg.norm(m["h"]):   # carried away:
            # a leader from the label's edge to its arrow
            edge = np.clip(anchor, m["c"] - m["h"], m["c"] + m["h"])
            ax.plot([edge[0], anchor[0]], [edge[1], anchor[1]], ":", color=color, lw=0.8,
                    zorder=1)
    # resize the figure to what was drawn, one inch per unit still
    allb = moving + list(node_box.values()) + [{"c": c, "h": np.array([0.2, 0.2])}
                                               for c in [start] + apexes]
    lo = np.min([b["c"] - b["h"] for b in allb], axis=0) - 0.3
    hi = np.max([b["c"] + b["h"] for b in allb], axis=0) + 0.3
    hi[1] += 0.45
    ax.text((lo[0] + hi[0]) / 2, hi[1] - 0.25, f"hybrid automaton of {sc.name}", ha="center",
            va="center", fontsize=11)
    fig.set_size_inches(*(hi - lo))
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    renderer = canvas.get_renderer()      # the arrows end at the nodes' boxes as laid out last:
    for t in texts.values():              # lay them out at this size (arrows are drawn first)
        t.update_bbox_position_size(renderer)
    boxes = [(("node", k), Bbox.from_extents(*(b["c"] - b["h"]), *(b["c"] + b["h"])))
             for k, b in node_box.items()]
    boxes += [(("edge", key), Bbox.from_extents(*(m["c"] - m["h"]), *(m["c"] + m["h"])))
              for m, (key, _, _, _, _) in zip(moving, labels)]
    return fig, boxes


def save(fig, path: Path, format="svg") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=format)
    return path


def write(path: Path, sc) -> Path:
    """Write the SVG of scenario ``sc``'s automaton to ``path``."""
    return save(draw(sc)[0], path)
