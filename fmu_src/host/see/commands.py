"""``embed-fmu animate`` and ``embed-fmu graph`` (issue 26), and the scenario behind a MODEL or an
FMU: an FMU carries its model's code (``fmu_src.build``: packages renamed embed<tag>, ...), which is
imported from the extracted FMU and built with the options it was built with."""

from __future__ import annotations

import ast
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from embed.base.errors import InputError

PROG = "embed-fmu"


def scenario_of(model: str, raw: dict):
    """(Scenario, its parameters from ``--set``) of a bundled name, a model file or an .fmu."""
    from fmu_src.builder.source import convert

    if model.endswith(".fmu"):
        sc = _from_fmu(Path(model))
        rest = raw
    else:
        from fmu_src.builder.source import load_with_sets, resolve
        sc, _, rest = load_with_sets(resolve(model), raw, others_allowed=True)
    starts = {v.name: v.start for v in list(sc.parameters) + list(sc.inputs)}
    for name in rest:
        if name not in starts:
            raise InputError(f"--set {name}: neither a build option nor a parameter or input of "
                             f"{sc.name} ({', '.join(starts)})")
    return sc, {k: convert(k, v, starts[k]) for k, v in rest.items()}


def _from_fmu(fmu: Path):
    if not fmu.is_file():
        raise InputError(f"{fmu}: no such FMU")
    tmp = Path(tempfile.mkdtemp(prefix="embed_see_"))
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp)
    res = tmp / "resources"
    entry = next(res.glob("*_fmu_*.py"), None)
    if entry is None:
        raise InputError(f"{fmu}: not an FMU of this project (no entry module in resources/)")
    tree = ast.parse(entry.read_text())
    found = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    name = ast.literal_eval(found["scenario_name"])
    options = ast.literal_eval(found["scenario_options"])
    tag = entry.stem.rsplit("_fmu", 1)[1]
    sys.path.insert(0, str(res))
    import importlib
    return importlib.import_module(f"scenarios{tag}.{name}").build(**options)


def cmd_animate(a) -> int:
    from fmu_src.host.see import kinematics, page
    from fmu_src.builder.source import parse_set

    sc, params = scenario_of(a.model, parse_set(a.set))
    kin = kinematics.Kinematics(sc)
    started = time.perf_counter()
    rec = recorded(a, sc, params)
    print(f"{PROG}: recorded {rec.frames} frames ({time.perf_counter() - started:.1f} s)",
          file=sys.stderr)
    if a.out:
        page.write(Path(a.out), page.figure(rec, kin, sc.name))
        print(f"{PROG}: wrote {a.out}", file=sys.stderr)
    if a.gif:
        from fmu_src.host.see import gif
        gif.write(Path(a.gif), rec, kin, sc.name, fps=a.gif_fps, max_frames=a.gif_frames)
        print(f"{PROG}: wrote {a.gif}", file=sys.stderr)
    return 0


def recorded(a, sc, params):
    """The run ``animate`` draws (``record.Record``): read from ``a.csv``, stepped in the FMU
    ``a.model`` with fmpy, or run in the engine; with the inputs of ``a.input``."""
    from fmu_src.host.see import record

    if a.csv:
        return record.from_table(sc, record.read_csv(Path(a.csv)), params)
    if a.model.endswith(".fmu"):
        return _fmu_run(a, params, sc)
    inputs = {k: v for k, v in params.items() if k in {x.name for x in sc.inputs}}
    sim = sc.simulator({k: v for k, v in params.items() if k not in inputs}, inputs=inputs)
    return record.from_engine(sc, params, a.input, a.stop_time, a.fps, sim=sim)


def _fmu_run(a, params, sc):
    """The FMU stepped by fmpy at the frames (``simulate.run``), its outputs and inputs
    recorded."""
    import numpy as np
    from fmpy import read_model_description

    from fmu_src.host import simulate
    from fmu_src.host.see import record

    md = read_model_description(a.model)
    inputs = simulate.read_inputs(Path(a.input), md) if a.input else None
    outs = [v.name for v in md.modelVariables if v.causality in ("output", "input")]
    result = simulate.run(Path(a.model), a.stop_time, 1.0 / a.fps, params, inputs, outs)
    table = {n: result[n] for n in result.dtype.names}
    if a.input:         # fmpy records the value held over the step just made: the CSV's at t
        times, series = record.read_inputs(a.input)
        table.update({k: np.interp(table["time"], times, v) for k, v in series.items()})
    return record.from_table(sc, table, params)


def cmd_graph(a) -> int:
    from fmu_src.host.see import graph, graph_svg
    from fmu_src.builder.source import parse_set

    sc, _ = scenario_of(a.model, parse_set(a.set))
    text = graph.mermaid(sc)
    if a.mermaid:
        Path(a.mermaid).write_text(text)
        print(f"{PROG}: wrote {a.mermaid}", file=sys.stderr)
    else:
        print(text)
    if a.svg:
        graph_svg.write(Path(a.svg), sc)
        print(f"{PROG}: wrote {a.svg}", file=sys.stderr)
    return 0


def add_commands(sub, model_help: str, sets: dict) -> None:
    """Register ``animate`` and ``graph`` on the ``embed-fmu`` sub-parsers."""
    p = sub.add_parser("animate", help="the run as a self-contained HTML page (and a GIF)",
                       description="Run MODEL (in the engine) or FMU (with fmpy), or read a CSV "
                                   "of `simulate`, and draw it: the mechanism from the model's "
                                   "visuals, the modes and events on a timeline, play/pause "
                                   "and a time slider, in one HTML file that opens offline.")
    p.add_argument("model", metavar="MODEL|FMU", help=model_help + ", or an .fmu")
    p.add_argument("--stop-time", type=float, default=5.0, metavar="T", help="(s, default 5)")
    p.add_argument("--fps", type=float, default=100.0, help="frames per second recorded "
                                                           "(default 100)")
    p.add_argument("--set", help="a parameter, input or build option", **sets)
    p.add_argument("--input", metavar="CSV", help="inputs over time: 'time,<input>,...'")
    p.add_argument("--csv", metavar="CSV", help="draw this `embed-fmu simulate` result instead "
                                                "of running (its outputs must hold every "
                                                "coordinate)")
    p.add_argument("--out", default="run.html", metavar="HTML", help="(default run.html)")
    p.add_argument("--gif", metavar="GIF", help="also write the animation as a GIF")
    p.add_argument("--gif-fps", type=float, default=25.0, metavar="F",
                   help="GIF frames per second of run time (default 25; every k-th recorded "
                        "frame)")
    p.add_argument("--gif-frames", type=int, default=None, metavar="N",
                   help="at most N frames in the GIF (default: no limit)")
    p.set_defaults(func=cmd_animate)

    p = sub.add_parser("graph", help="the hybrid automaton as Mermaid text and SVG",
                       description="Modes (constraints, dof) and switching conditions (guard, "
                                   "approaching or level, reset map, impact), the Zeno "
                                   "handover and the initial reset map.")
    p.add_argument("model", metavar="MODEL|FMU", help=model_help + ", or an .fmu")
    p.add_argument("--set", help="a keyword argument of the model's build()", **sets)
    p.add_argument("--svg", metavar="SVG", help="write the graph as SVG")
    p.add_argument("--mermaid", metavar="MD", help="write the Mermaid text here (default: print)")
    p.set_defaults(func=cmd_graph)
