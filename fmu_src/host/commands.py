"""The commands of ``embed-fmu`` (``fmu_src.host.cli`` parses the command line): list, build,
check, info, simulate and sweep, each ``cmd_<name>(args) -> exit status``, and what they share
(the model checker's run, a MODEL built after its check, the variables table)."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from embed.base.errors import InputError, ModelDefinitionError
from fmu_src.builder.source import load_with_sets as _model

PROG = "embed-fmu"


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


def cmd_cache(a) -> int:
    """``embed-fmu cache``: the engine runner's cache folder (``embed.modes.cache``)."""
    from embed.base import cache_files

    where = cache_files.folder()
    if where is None:
        print(f"{PROG}: the cache is off ({cache_files.ENV}={os.environ.get(cache_files.ENV)})")
        return 0
    if a.clear:
        print(f"{PROG}: removed {cache_files.clear(where)} files from {where}")
        return 0
    got = cache_files.info(where)
    for name, model, embedding, size in got["files"]:
        print(f"{size / 1e3:10.0f} kB  {model:<20} {embedding:<10} {name}")
    print(f"{PROG}: {len(got['files'])} files, {got['bytes'] / 1e6:.1f} MB in {where} "
          f"(at most {os.environ.get(cache_files.MAX_ENV, cache_files.MAX_MB)} MB)")
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


def need(module: str, extra: str, what: str) -> None:
    """Refuse (InputError, exit 2) when the optional ``module`` is missing, naming the extra
    of this distribution that brings it."""
    if importlib.util.find_spec(module) is None:
        raise InputError(f"{what} needs {module}, which is not installed: "
                         f"pip install 'embed-fmu[{extra}]'")
