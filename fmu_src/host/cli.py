"""embed-fmu: a model (a bundled scenario or your own file) to a checked FMI 2.0 FMU.

    embed-fmu list                                  # the bundled scenarios
    embed-fmu check my_model.py                     # the model checker's findings
    embed-fmu build my_model.py --out build         # checked, then build/<name>.fmu
    embed-fmu info build/cart.fmu                   # its variables as a table
    embed-fmu simulate my_model.py --stop-time 5 --out run.csv --plot run.png
    embed-fmu animate pendulum_belt --stop-time 3 --out run.html --gif run.gif
    embed-fmu graph pendulum_belt --svg automaton.svg   # Mermaid text on stdout
    embed-fmu sweep disk_ramp --vary mu=linspace(0.05,0.5,10) --out runs/mu --plot mu.png
    embed-fmu cache --info                          # the engine runner's compiled modes

MODEL is a bundled scenario's name or the path of a Python file (or a package folder)
anywhere on disk whose top level defines ``build() -> embed.Scenario``.  ``--set NAME=VALUE``
gives a keyword argument of ``build()`` (e.g. ``--set N=20``); for ``check`` it may also
give a parameter value, for ``simulate`` a start value of the FMU's variables.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from embed.base.errors import EmbedError, InputError
from fmu_src.host.commands import (PROG, cmd_build, cmd_cache, cmd_check, cmd_info, cmd_list,
                                   cmd_simulate, cmd_sweep)


def _err(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


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
    p.add_argument("--study", metavar="TOML", help="the study file (docs/studies.md); the "
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
    p = sub.add_parser("cache", help="the engine runner's cache of compiled modes",
                       description="The folder where scripts and engine studies keep the "
                                   "object code of compiled modes (EMBED_CACHE, else "
                                   "XDG_CACHE_HOME/embed-fmu, else ~/.cache/embed-fmu; "
                                   "EMBED_CACHE=off turns it off; at most EMBED_CACHE_MAX_MB, "
                                   "default 1000).")
    p.add_argument("--clear", action="store_true", help="remove every file of it")
    p.add_argument("--info", action="store_true", help="its files, models and sizes (default)")
    p.set_defaults(func=cmd_cache)
    from fmu_src.host.see.commands import add_commands       # animate, graph (issue 26)
    add_commands(sub, model_help, sets)
    return ap


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
