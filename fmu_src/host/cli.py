"""embed-fmu: a model (a bundled scenario or your own file) to a checked FMI 2.0 FMU.

    embed-fmu list                                  # the bundled scenarios
    embed-fmu check my_model.py                     # the model checker's findings
    embed-fmu build my_model.py --out build         # checked, then build/<name>.fmu
    embed-fmu info build/cart.fmu                   # its variables as a table
    embed-fmu simulate my_model.py --stop-time 5 --out run.csv --plot run.png
    embed-fmu animate pendulum_belt --stop-time 3 --out run.html --gif run.gif
    embed-fmu graph pendulum_belt --svg automaton.svg   # Mermaid text on stdout
    embed-fmu sweep disk_ramp --vary mu=linspace(0.05,0.5,10) --out runs/mu --plot mu.png

MODEL is a bundled scenario's name or the path of a Python file (or a package folder)
anywhere on disk whose top level defines ``build() -> embed.Scenario``.  ``--set NAME=VALUE``
gives a keyword argument of ``build()`` (e.g. ``--set N=20``); for ``check`` it may also
give a parameter value, for ``simulate`` a start value of the FMU's variables.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from embed.base.errors import EmbedError, InputError, ModelDefinitionError
from fmu_src.builder.source import load_with_sets as _model

PROG = "embed-fmu"


def _err(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def run_check(sc, params=None, out=sys.stdout) -> bool:
    """Run the model checker (``embed.check.check.check_scenario``) and print its findings;
    True when there is no error."""
    from embed.check.check import check_scenario
    from embed.check.probe import probe_embedding

    started = time.perf_counter()
    print(f"{PROG}: checking {sc.name} (every mode is embedded and compiled on the "
          f"{probe_embedding(sc)} path, the scenario's embedding)", file=sys.stderr, flush=True)
    findings = check_scenario(sc, params or None)
    for f in findings:
        print(f"{f.level}: {f.item}: {f.message}", file=out)
    errors = sum(f.level == "error" for f in findings)
    print(f"{PROG}: {sc.name}: {errors} error(s), {len(findings) - errors} warning(s) "
          f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return errors == 0


def build_checked(model: str, out: Path, raw_sets: dict, python: str = "", fmi=(2,)):
    """Resolve, load, check and build one model (``build``, FMI versions ``fmi``); refuses to
    build on errors."""
    from fmu_src.builder.build import OTHERS, build
    from fmu_src.builder.source import resolve

    if model in OTHERS:
        if raw_sets:
            raise InputError(f"--set: {model} takes no build options")
        return build(model, out, python=python, fmi=fmi)
    src = resolve(model)
    sc, options, _ = _model(src, raw_sets)
    if not run_check(sc, out=sys.stderr):
        raise ModelDefinitionError(f"{sc.name}: the checker found errors (above); not built")
    return build(src, out, options, python, fmi=fmi)


def cmd_list(a) -> int:
    from fmu_src.builder.build import OTHERS, ROOT
    from fmu_src.builder.source import bundled_names, resolve

    names = bundled_names()
    width = max(map(len, names + list(OTHERS)))
    for name in names:
        print(f"{name:<{width}}  {resolve(name).description()}")
    for name, (module, _) in OTHERS.items():
        import ast
        doc = ast.get_docstring(ast.parse((ROOT / "fmu_src" / f"{module.replace('.', '/')}.py").read_text()))
        print(f"{name:<{width}}  {doc.splitlines()[0]} (not a scenario)")
    return 0


def cmd_build(a) -> int:
    from fmu_src.builder.source import bundled_names, parse_set
    from fmu_src.builder.build import OTHERS

    if a.all == bool(a.model):
        raise InputError("give a MODEL (a scenario name or a model file) or --all")
    names = bundled_names() + list(OTHERS) if a.all else [a.model]
    raw = parse_set(a.set)
    if a.all and raw:
        raise InputError("--set applies to one MODEL, not --all")
    fmi = fmi_versions(a.fmi)
    for name in names:
        built = build_checked(name, Path(a.out), raw, a.python, fmi)
        for path in (built if isinstance(built, tuple) else (built,)):
            print(path)
    return 0


def fmi_versions(text: str) -> tuple:
    """``--fmi 2``, ``3`` or ``2,3``: the FMI versions to build, in that order."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p not in ("2", "3") for p in parts) or len(set(parts)) != len(parts):
        raise InputError(f"--fmi {text!r}: give 2, 3 or 2,3 (FMI 2.0 and/or 3.0 co-simulation)")
    return tuple(int(p) for p in parts)


def cmd_check(a) -> int:
    from fmu_src.builder.build import OTHERS
    from fmu_src.builder.source import convert, parse_set, resolve

    if a.model in OTHERS:
        raise InputError(f"{a.model} is not a scenario: there is no model to check")
    src = resolve(a.model)
    sc, _, rest = _model(src, parse_set(a.set), others_allowed=True)
    starts = {v.name: v.start for v in sc.parameters}
    for name in rest:
        if name not in starts:
            raise InputError(f"--set {name}: neither an option of build() nor a parameter of "
                             f"{sc.name} (its parameters: {', '.join(starts)})")
    params = {k: convert(k, v, starts[k]) for k, v in rest.items()}
    return 0 if run_check(sc, params) else 1


def _fmu_of(model: str, raw: dict, tmp: Path, check: bool):
    """(FMU path, mode names {number: name}, the ``--set`` texts that are not build options):
    ``model`` itself if it is an .fmu, else its FMU built into ``tmp`` (checked first, and
    other ``--set`` names than build options allowed, if ``check``: ``simulate``)."""
    from fmu_src.builder.build import OTHERS, build
    from fmu_src.builder.source import resolve

    if model.endswith(".fmu"):
        if not Path(model).is_file():
            raise InputError(f"{model}: no such FMU")
        if not zipfile.is_zipfile(model):
            raise InputError(f"{model}: not an FMU (an FMU is a zip archive)")
        return Path(model), {}, raw
    if model in OTHERS:
        return build(model, tmp), {}, raw
    src = resolve(model)
    sc, options, rest = _model(src, raw, others_allowed=check)
    if check and not run_check(sc, out=sys.stderr):
        raise ModelDefinitionError(f"{sc.name}: the checker found errors (above); not built")
    return build(src, tmp, options), sc.mode_names(), rest


def cmd_info(a) -> int:
    from fmpy import read_model_description

    from fmu_src.builder.source import parse_set

    with tempfile.TemporaryDirectory(prefix="embed_info_") as tmp:
        raw = parse_set(a.set)
        if raw and a.model.endswith(".fmu"):
            raise InputError("--set: an FMU has no build options")
        fmu, _, _ = _fmu_of(a.model, raw, Path(tmp), check=False)
        md = read_model_description(str(fmu))
    print(variables_table(md))
    from fmu_src.host.see import commands, graph         # issue 26: the automaton too
    print("\n" + graph.text(commands.scenario_of(a.model, raw)[0]))
    return 0


def variables_table(md) -> str:
    """The FMU's variables (name, causality, type, unit, start, description) as a table."""
    head = ("name", "causality", "type", "unit", "start", "description")
    rows = [(v.name, v.causality, v.type, v.unit or (v.declaredType.unit if v.declaredType
                                                      else "") or "",
             "" if v.start is None else str(v.start), v.description or "")
            for v in md.modelVariables]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    lines = [f"{md.modelName}: {md.description}",
             f"FMI {md.fmiVersion} co-simulation, model identifier "
             f"{md.coSimulation.modelIdentifier}, {len(rows)} variables", ""]
    for r in [head] + rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5])
    return "\n".join(line.rstrip() for line in lines)


def cmd_simulate(a) -> int:
    from fmpy import read_model_description

    from fmu_src.host import simulate
    from fmu_src.builder.source import parse_set

    if not all(math.isfinite(x) and x > 0 for x in (a.stop_time, a.step)):
        raise InputError(f"--stop-time {a.stop_time:g} --step {a.step:g}: both must be "
                         "positive and finite")
    if a.plot:
        need("matplotlib", "demo", "--plot")
    with tempfile.TemporaryDirectory(prefix="embed_simulate_") as tmp:
        fmu, mode_names, rest = _fmu_of(a.model, parse_set(a.set), Path(tmp), check=True)
        md = read_model_description(str(fmu))
        start = simulate.start_values(md, rest)
        inputs = simulate.read_inputs(Path(a.input), md) if a.input else None
        chosen = [n.strip() for n in a.outputs.split(",") if n.strip()] if a.outputs else None
        outputs = simulate.chosen_outputs(md, chosen)
        record = outputs if chosen else [v.name for v in md.modelVariables
                                         if v.causality == "output"]
        print(f"{PROG}: simulating {md.modelName} to {a.stop_time:g} s in steps of {a.step:g} s "
              "(a mode is embedded when first entered)", file=sys.stderr, flush=True)
        result = simulate.run(fmu, a.stop_time, a.step, start, inputs, record)
    simulate.write_csv(Path(a.out), result)
    print(f"{PROG}: wrote {a.out} ({len(result)} rows)", file=sys.stderr)
    if a.plot:
        names = mode_names or simulate.mode_names(md)       # an FMU: from its description
        simulate.plot(Path(a.plot), result, outputs, names, md.modelName, simulate.units(md))
        print(f"{PROG}: wrote {a.plot}", file=sys.stderr)
    return 0


def cmd_sweep(a) -> int:
    for module in ("dask", "distributed", "pandas", "pyarrow"):
        need(module, "study", "sweep")
    from fmu_src.builder.source import parse_set
    from fmu_src.host import study_spec
    from fmu_src.host.study import Study

    if a.plot:
        need("matplotlib", "demo", "--plot")
    d = study_spec.read_dict(a.study) if a.study else {}
    given = {"stop_time": a.stop_time, "step": a.step, "seed": a.seed, "samples": a.samples,
             "runner": a.runner, "solver": a.solver}
    d.update({k: v for k, v in given.items() if v is not None})
    for key, text in (("outputs", a.outputs), ("summaries", a.summaries)):
        if text is not None:
            d[key] = [n.strip() for n in text.split(",") if n.strip()]
    if a.set:
        if a.model.endswith(".fmu"):
            raise InputError("--set: an FMU has no build options")
        d["build"] = {**(d.get("build") or {}), **parse_set(a.set)}
    spec = study_spec.with_axes(study_spec.from_dict(d, a.study or "study", check=False),
                                [study_spec.parse_vary(v) for v in a.vary])
    if not spec.axes:
        raise InputError("nothing to sweep: give --vary NAME=VALUES or a --study file with "
                         "[parameters] or [inputs]")
    cases = [int(c) for c in a.cases.split(",")] if a.cases else None
    study = Study(a.model, spec, out=a.out)
    print(f"{PROG}: sweep: {study.model}, {len(study.cases())} cases through the "
          f"{study.plan.runner}, results in {a.out}", file=sys.stderr, flush=True)
    df = study.run(scheduler=a.scheduler, workers=a.workers, chunk=a.chunk, cases=cases,
                   rerun_failed=a.rerun_failed)
    failed = df[df["status"] != 0]
    for row in failed.head(10).itertuples():
        print(f"{PROG}: case {row.case} failed (status {row.status}): {row.error}",
              file=sys.stderr)
    if len(failed) > 10:
        print(f"{PROG}: ... {len(failed) - 10} more failed cases", file=sys.stderr)
    rerun = " (re-run them with --rerun-failed or --cases N,...)" if len(failed) else ""
    print(f"{PROG}: {len(df)} of {len(study.cases())} cases in {a.out}: {len(df) - len(failed)} "
          f"ok, {len(failed)} failed{rerun}", file=sys.stderr)
    if a.plot:
        from fmu_src.host.study_plot import plot
        from fmu_src.host.study_spec import summary_column
        plot(Path(a.plot), df, [x.name for x in spec.axes],
             [summary_column(s) for s in spec.summaries], study.model)
        print(f"{PROG}: wrote {a.plot}", file=sys.stderr)
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 epilog="`embed-fmu COMMAND --help` for each command")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    model_help = "a bundled scenario's name (see `list`) or the path of a model file"
    sets = dict(action="append", default=[], metavar="NAME=VALUE")

    p = sub.add_parser("list", help="the bundled scenarios with their description")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("build", help="check a model and build its FMU",
                       description="Check MODEL (embed.check.check), refuse on errors, and build "
                                   "OUT/<model identifier>.fmu.")
    p.add_argument("model", nargs="?", metavar="MODEL", help=model_help)
    p.add_argument("--all", action="store_true", help="every bundled scenario and pi_controller")
    p.add_argument("--out", default="build", metavar="DIR", help="output folder (default: build)")
    p.add_argument("--set", help="a keyword argument of the model's build(), e.g. N=20", **sets)
    p.add_argument("--python", default="", metavar="PATH",
                   help="the Python the FMU loads in a process without one, unless EMBED_PYTHON "
                        "is set (default: python3 first on PATH)")
    p.add_argument("--fmi", default="2", metavar="2|3|2,3",
                   help="FMI version(s) of the co-simulation FMU: 2 (default), 3, or 2,3 for both "
                        "(the FMI 3.0 one then as OUT/<model identifier>_fmi3.fmu)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("check", help="run the model checker",
                       description="Run the model checker on MODEL: every mode compiled, "
                                   "guards, outputs, jumps, constraints and parameters "
                                   "verified. Exits 1 if it finds an error.")
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--set", help="a keyword argument of build() or a parameter value", **sets)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("info", help="the variables of a model or an FMU as a table",
                       description="Variables with causality, type, unit, start and "
                                   "description (of an FMU's modelDescription.xml; a MODEL is "
                                   "built to a temporary folder first).")
    p.add_argument("model", metavar="MODEL|FMU", help=model_help + ", or an .fmu")
    p.add_argument("--set", help="a keyword argument of the model's build()", **sets)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("simulate", help="step a model or an FMU with fmpy; CSV and plot",
                       description="Step MODEL (built to a temporary folder first) or FMU with "
                                   "fmpy; write the outputs as CSV and optionally plot them "
                                   "with the events marked and the modes named.")
    p.add_argument("model", metavar="MODEL|FMU", help=model_help + ", or an .fmu")
    p.add_argument("--stop-time", type=float, default=1.0, metavar="T", help="(s, default 1)")
    p.add_argument("--step", type=float, default=0.01, metavar="H",
                   help="communication step (s, default 0.01)")
    p.add_argument("--set", help="a start value of a parameter or input (or, for a MODEL, a "
                                 "keyword argument of its build())", **sets)
    p.add_argument("--input", metavar="CSV",
                   help="inputs over time: a header 'time,<input>,...' and rows of numbers")
    p.add_argument("--out", default="simulation.csv", metavar="CSV",
                   help="where to write the results (default: simulation.csv)")
    p.add_argument("--plot", metavar="PNG", help="plot the chosen outputs (needs matplotlib)")
    p.add_argument("--outputs", metavar="a,b,c",
                   help="the outputs to record and plot (default: record every output, plot the Real ones)")
    p.set_defaults(func=cmd_simulate)

    from fmu_src.host.study_spec import DEFAULT_SUMMARIES, SUMMARIES
    p = sub.add_parser(
        "sweep", help="a parameter sweep or Monte Carlo study on Dask; Parquet results",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run MODEL (through the engine; built to an FMU with --runner fmu) or FMU "
                    "(through fmpy) once per case of a study: the varied parameters and "
                    "inputs' grid, each point --samples times with its random values drawn "
                    "from the seed and the case number. Cases run in chunks on Dask (a "
                    "LocalCluster of one process per core, or --scheduler); each finished "
                    "chunk is written to OUT (Parquet), so running again resumes; a failed "
                    "case is recorded with its status and error.",
        epilog="VALUES: 0.3 | 0.1,0.2,0.4 | linspace(a,b,n) | geomspace(a,b,n) | "
               "uniform(low,high) | normal(mean,std) | lognormal(mean,sigma)\n\nsummaries:\n"
               + "\n".join(f"  {k:<18} {v}" for k, v in SUMMARIES.items()))
    p.add_argument("model", metavar="MODEL|FMU", help=model_help + ", or an .fmu")
    p.add_argument("--study", metavar="TOML", help="the study file (README: Studies); the "
                                                    "options below override its keys")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=VALUES",
                   help="a parameter or input and its values (see below)")
    p.add_argument("--stop-time", type=float, metavar="T", help="(s, default 1)")
    p.add_argument("--step", type=float, metavar="H", help="communication step (s, default 0.01)")
    p.add_argument("--samples", type=int, metavar="N", help="random draws per grid point")
    p.add_argument("--seed", type=int, metavar="S", help="the study's seed (default 0)")
    p.add_argument("--outputs", metavar="a,b", help="outputs whose time series are kept")
    p.add_argument("--summaries", metavar="s,t",
                   help=f"per case (default {','.join(DEFAULT_SUMMARIES)})")
    p.add_argument("--runner", choices=("engine", "fmu"),
                   help="engine (a MODEL's default) or fmu (an .fmu's only one)")
    p.add_argument("--solver", choices=("rk4", "adaptive"), help="(default rk4)")
    p.add_argument("--set", help="a keyword argument of the model's build()", **sets)
    p.add_argument("--out", default="sweep", metavar="DIR",
                   help="results folder (default: sweep); an existing one is resumed")
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask cluster's "
                   "scheduler, e.g. tcp://10.0.0.5:8786 (workers need this project installed)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default: one per core)")
    p.add_argument("--chunk", type=int, metavar="K", help="cases per task (default: about "
                                                          "four tasks per worker)")
    p.add_argument("--cases", metavar="i,j", help="run these cases (numbers) again, alone")
    p.add_argument("--rerun-failed", action="store_true", help="run the failed cases again")
    p.add_argument("--plot", metavar="PNG", help="the summaries against the varied "
                                                 "parameter(s) (needs matplotlib)")
    p.set_defaults(func=cmd_sweep)
    from fmu_src.host.see.commands import add_commands       # animate, graph (issue 26)
    add_commands(sub, model_help, sets)
    return ap



def need(module: str, extra: str, what: str) -> None:
    """Refuse (InputError, exit 2) when the optional ``module`` is missing, naming the extra
    of this distribution that brings it."""
    if importlib.util.find_spec(module) is None:
        raise InputError(f"{what} needs {module}, which is not installed: "
                         f"pip install 'embed-fmu[{extra}]'")


def main(argv=None) -> int:
    """The ``embed-fmu`` console script; returns its exit status: 0 ok, 1 the model is wrong
    (the checker found errors, the model's code failed, a run stopped), 2 an argument is wrong
    (a bad value, a missing file or optional package).  Never a traceback: an unexpected
    exception is one line naming it (``EMBED_FMU_DEBUG=1`` shows the traceback)."""
    import os

    a = parser().parse_args(argv)
    try:
        return a.func(a)
    except (InputError, OSError) as exc:
        _err(str(exc))
        return 2
    except EmbedError as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as exc:                      # a defect of embed-fmu itself
        if os.environ.get("EMBED_FMU_DEBUG"):
            traceback.print_exc()
        _err(f"internal error: {type(exc).__name__}: {exc} (please report it; "
             "EMBED_FMU_DEBUG=1 shows the traceback)")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
