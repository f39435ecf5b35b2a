"""A study's plan (issue 16): its spec read (``spec_of``) and checked against the model's
interface, every varied name a parameter or an input, every kept output and summary there
(``plan``); what every case of the study shares (``fmu_src.host.case_run.Plan``)."""

from __future__ import annotations

from pathlib import Path

from embed.base.errors import InputError
from fmu_src.host import study_spec
from fmu_src.host.case_run import NEEDS, Plan
from fmu_src.host.study_spec import StudySpec


def spec_of(spec) -> StudySpec:
    """A StudySpec from a StudySpec, a dict of the TOML file's keys, or a TOML file's path."""
    if isinstance(spec, StudySpec):
        spec.check()
        return spec
    if isinstance(spec, dict):
        return study_spec.from_dict(spec)
    if isinstance(spec, (str, Path)):
        return study_spec.read(spec)
    if spec is None:
        return study_spec.from_dict({})
    raise InputError(f"a study is a StudySpec, a dict or a TOML file's path, not "
                     f"{type(spec).__name__}")


# ------------------------------------------------------------------------------ the plan
def plan(model: str, spec: StudySpec, fmu_dir=None) -> Plan:
    """The Plan of ``spec`` on ``model`` (a MODEL, or an .fmu), every name checked against
    the model's interface: the varied ones are parameters or inputs (as declared), the kept
    outputs and the summaries' outputs and modes exist.  The runner is the FMU for an .fmu
    (and then the only one), the engine for a MODEL unless the study says ``fmu``: the
    MODEL's FMU is then built into ``fmu_dir``."""
    is_fmu = str(model).endswith(".fmu")
    runner = spec.runner or ("fmu" if is_fmu else "engine")
    if is_fmu and runner == "engine":
        raise InputError(f"{model}: an FMU runs through fmpy only (runner = 'fmu')")
    if is_fmu:
        if spec.build:
            raise InputError(f"{model}: an FMU has no build options ([build])")
        path = Path(model).resolve()
        if not path.is_file():
            raise InputError(f"{model}: no such FMU")
        return _fmu_plan(str(path), spec)
    from fmu_src.builder.source import build_options, resolve

    src = resolve(model)
    options = build_options(src, {k: str(v) for k, v in spec.build.items()})
    if runner == "fmu":
        from fmu_src.builder.build import build
        if fmu_dir is None:
            raise InputError("runner = 'fmu' for a MODEL needs a folder to build its FMU in")
        fmu = build(src, Path(fmu_dir), options)
        return _fmu_plan(str(Path(fmu).resolve()), spec)
    sc = src.load(options)
    modes = {}
    for key, m in sc.automaton.modes.items():
        number = key if m.report is None else m.report
        modes[str(number)] = modes[m.name] = number
    params = {v.name for v in sc.parameters}
    inputs = {v.name for v in sc.inputs}
    outputs = [v.name for v in sc.outputs] + ["impact_count"]
    return _checked(spec, Plan("engine", str(model), tuple(sorted(options.items()))),
                    sc.name, params, inputs, outputs, modes)


def _fmu_plan(path: str, spec: StudySpec) -> Plan:
    from fmpy import read_model_description

    from fmu_src.host.simulate import mode_names

    md = read_model_description(path)
    by = lambda c: {v.name for v in md.modelVariables if v.causality == c}   # noqa: E731
    modes = {}
    for number, name in mode_names(md).items():
        modes[str(number)] = number
        for part in name.split("/"):
            modes[part] = number
    mode_var = next((v for v in md.modelVariables if v.name == "mode"), None)
    return _checked(spec, Plan("fmu", path), md.modelName, by("parameter"), by("input"),
                    sorted(by("output")), modes, any_mode=mode_var is not None and not modes)


def _checked(spec, base: Plan, name, params, inputs, outputs, modes, any_mode=False) -> Plan:
    kinds = {}
    for a in spec.axes:
        kind = "parameter" if a.name in params else "input" if a.name in inputs else None
        declared = spec.kinds.get(a.name)
        if kind is None or (declared and declared != kind):
            what = f"not a{'n' if declared == 'input' else ''} {declared}" if declared else \
                "neither a parameter nor an input"
            raise InputError(f"study: {a.name} is {what} of {name} (parameters: "
                             f"{', '.join(sorted(params))}; inputs: "
                             f"{', '.join(sorted(inputs)) or 'none'})")
        kinds[a.name] = kind
    outputs = set(outputs)
    for o in spec.outputs:
        if o not in outputs:
            raise InputError(f"study: output {o!r} is not an output of {name} (its outputs: "
                             f"{', '.join(sorted(outputs))})")
    chosen = {}
    for s in spec.summaries:
        kind, _, arg = s.partition(":")
        need = [arg] if kind in ("final", "max", "min") else list(NEEDS[kind])
        if base.runner == "fmu" and kind in ("event_times", "first_entry"):
            need += ["mode", "event_count", "last_event_time"]
        for o in need:
            if o not in outputs:
                raise InputError(f"study: summary {s!r} needs the output {o!r}, which {name} "
                                 "does not have")
        if kind == "first_entry":
            if arg in modes:
                chosen[arg] = modes[arg]
            elif any_mode and arg.lstrip("-").isdigit():
                chosen[arg] = int(arg)
            else:
                raise InputError(f"study: summary {s!r}: {arg!r} is not a mode of {name} "
                                 f"(its modes: {', '.join(sorted(modes)) or 'numbers'})")
    return Plan(base.runner, base.model, base.build, tuple(kinds.items()), spec.stop_time,
                spec.step, spec.solver, spec.h_max, tuple(spec.outputs), tuple(spec.summaries),
                tuple(chosen.items()))
