"""``embed-fmu simulate`` (issue 13): an FMU stepped by fmpy's ``simulate_fmu`` with start
values, inputs read from a CSV (fmpy's structured input: a time column, then one column per
input), written as a CSV and plotted with the events marked (where ``event_count``
increments) and the modes named.  It is an ordinary fmpy run: the FMU is stepped from the
outside, as any fmpy script would."""

from __future__ import annotations

import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

from embed.base.errors import InputError

# recorded whenever the FMU has them: the plot marks events and names modes from them
MARKS = ("mode", "event_count", "last_event_time")
NUMPY_TYPES = {"Real": np.float64, "Integer": np.int32, "Enumeration": np.int32, "Boolean": np.bool_}


def start_values(md, raw: dict) -> dict:
    """``--set`` texts as start values of the FMU's parameters and inputs, each converted to
    the variable's type (never evaluated); any other name is refused, naming it."""
    from fmu_src.builder.source import convert

    variables = {v.name: v for v in md.modelVariables}
    out = {}
    for name, text in raw.items():
        v = variables.get(name)
        if v is None or v.causality not in ("parameter", "input"):
            what = "not a variable of" if v is None else f"an {v.causality} of"
            settable = [n for n, x in variables.items() if x.causality in ("parameter", "input")]
            raise InputError(f"--set {name}: {what} {md.modelName}; it has the parameters and "
                             f"inputs {', '.join(settable)}")
        like = {"Real": 0.0, "Integer": 0, "Enumeration": 0, "Boolean": False, "String": ""}[v.type]
        default = None if v.start is None else convert(name, v.start, like)
        value = convert(name, text, like, default=default)
        if v.type == "Real" and not math.isfinite(value):
            raise InputError(f"--set {name}={text}: not a finite number")
        out[name] = value
    return out


def read_inputs(path: Path, md) -> np.ndarray:
    """The input CSV as fmpy's structured input: a header ``time,name,...`` naming the FMU's
    inputs, then rows of numbers with time never decreasing (fmpy's rules: a Real input is
    interpolated linearly between rows, a discrete one held; two rows at one time: a step)."""
    variables = {v.name: v for v in md.modelVariables}
    try:
        with open(path, newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except OSError as exc:
        raise InputError(f"--input {path}: {exc.strerror}") from None
    if len(rows) < 2:
        raise InputError(f"--input {path}: needs a header (time, then input names) and a row")
    header = [c.strip() for c in rows[0]]
    if header[0] != "time":
        raise InputError(f"--input {path}: the first column must be 'time', not {header[0]!r}")
    dtype = [("time", np.float64)]
    for name in header[1:]:
        v = variables.get(name)
        if v is None or v.causality != "input":
            inputs = [n for n, x in variables.items() if x.causality == "input"]
            raise InputError(f"--input {path}: column {name!r} is not an input of "
                             f"{md.modelName} (its inputs: {', '.join(inputs) or 'none'})")
        if v.type not in NUMPY_TYPES:
            raise InputError(f"--input {path}: {name} is a {v.type} input; fmpy takes only "
                             f"numbers from a CSV: give it with --set {name}=...")
        dtype.append((name, NUMPY_TYPES[v.type]))
    data = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise InputError(f"--input {path}:{line}: {len(row)} values, {len(header)} columns")
        values = []
        for name, cell in zip(header, row):
            try:
                x = float(cell)
            except ValueError:
                raise InputError(f"--input {path}:{line}: {name} = {cell.strip()!r} is not a "
                                 "number") from None
            if not math.isfinite(x):
                raise InputError(f"--input {path}:{line}: {name} = {cell.strip()} is not finite")
            values.append(x)
        if data and values[0] < data[-1][0]:
            raise InputError(f"--input {path}:{line}: time {values[0]} goes back")
        data.append(tuple(values))
    return np.array(data, dtype=dtype)


def mode_names(md) -> dict:
    """{number: name} of the modes, read from the Enumeration type the ``mode`` output is
    declared with (``fmu_src.runtime.status.type_definitions``); empty (numbers only) for an
    FMU whose ``mode`` is a plain Integer."""
    v = next((v for v in md.modelVariables if v.name == "mode"), None)
    if v is None or v.type != "Enumeration" or v.declaredType is None:
        return {}
    return {int(item.value): item.name for item in v.declaredType.items}


def chosen_outputs(md, names: list | None) -> list:
    """The outputs to plot: ``names`` (each checked), else every Real output but the engine's
    bookkeeping (constraint_residual, last_event_time)."""
    outputs = [v for v in md.modelVariables if v.causality == "output"]
    if not names:
        return [v.name for v in outputs if v.type == "Real"
                and v.name not in ("constraint_residual", "last_event_time")]
    known = {v.name for v in outputs}
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"--outputs: {', '.join(bad)} not an output of {md.modelName}; its "
                         f"outputs: {', '.join(v.name for v in outputs)}")
    return list(names)


class Progress:
    """fmpy's ``step_finished`` callback: a progress line on stderr once a run has taken
    more than 2 s (a ``\\r`` line on a terminal, else a line every 5 s)."""

    def __init__(self, stop_time: float):
        self.stop, self.t0, self.shown = stop_time, time.perf_counter(), 0.0
        self.tty = sys.stderr.isatty()

    def __call__(self, t, recorder) -> bool:
        wall = time.perf_counter() - self.t0
        if wall > 2.0 and wall - self.shown >= (0.5 if self.tty else 5.0):
            self.shown = wall
            text = f"embed-fmu: t = {t:.4g} of {self.stop:g} s ({wall:.0f} s)"
            print("\r" + text if self.tty else text, end="" if self.tty else "\n",
                  file=sys.stderr, flush=True)
        return True

    def done(self):
        if self.shown and self.tty:
            print(file=sys.stderr)


def run(fmu: Path, stop_time: float, step: float, start: dict, inputs, outputs: list):
    """fmpy's ``simulate_fmu`` over [0, stop_time] in communication steps ``step``,
    recording ``outputs`` and the event marks; returns fmpy's structured result."""
    from fmpy import read_model_description, simulate_fmu

    md = read_model_description(str(fmu))
    have = {v.name for v in md.modelVariables}
    record = list(dict.fromkeys(outputs + [m for m in MARKS if m in have]))
    from fmpy.fmi1 import FMICallException

    progress, log = Progress(stop_time), FmuLog()
    try:
        return simulate_fmu(str(fmu), stop_time=stop_time, output_interval=step,
                            start_values=start, input=inputs, output=record,
                            step_finished=progress, logger=log)
    except FMICallException as exc:
        raise log.refusal(exc, md.modelName) from None
    finally:
        progress.done()


class FmuLog:
    """fmpy's logger callback: the FMU's warnings and errors printed on stderr as one line
    each, the last error kept so that a refused call becomes one message (FMI 2.0 reports a
    refused value or a failed step as fmi2Error/fmi2Discard; the FMU logs why)."""

    LABELS = ("ok", "warning", "discard", "error", "fatal", "pending")

    def __init__(self):
        self.last_error = ""

    def __call__(self, component, instance, status, category, message):
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        if status >= 2:                       # the last one ends the run's message
            if self.last_error:
                print(f"embed-fmu: FMU error: {self.last_error}", file=sys.stderr)
            self.last_error = text
        elif status == 1:
            print(f"embed-fmu: FMU warning: {text}", file=sys.stderr)

    def refusal(self, exc, model: str):
        """The error for fmpy's FMICallException: a set or initialization call refused is
        an argument's fault (InputError, exit 2); a failed step the model's
        (ModelDefinitionError's sibling IntegrationError, exit 1)."""
        from embed.base.errors import IntegrationError

        why = self.last_error or f"{exc.function} returned status {exc.status}"
        if exc.function.startswith("fmi2DoStep"):
            return IntegrationError(f"{model}: the run stopped: {why}")
        return InputError(f"{model}: {exc.function} refused: {why}")


def write_csv(path: Path, result) -> None:
    """The result as CSV: a header of names, then each value at full precision."""
    from fmpy.util import write_csv as fmpy_write_csv
    path.parent.mkdir(parents=True, exist_ok=True)
    fmpy_write_csv(str(path), result)


def events(result) -> list:
    """Times of the events: where event_count increments, the located time if recorded."""
    if "event_count" not in result.dtype.names:
        return []
    count = result["event_count"]
    at = result["last_event_time"] if "last_event_time" in result.dtype.names else result["time"]
    return [float(at[i]) for i in range(1, len(result)) if count[i] != count[i - 1]]


def units(md) -> dict:
    """Each variable's unit as the model description declares it (its own or its type's)."""
    out = {}
    for v in md.modelVariables:
        unit = getattr(v, "unit", None) or getattr(getattr(v, "declaredType", None), "unit", None)
        if unit and unit != "1":
            out[v.name] = unit
    return out


def plot(path: Path, result, outputs: list, mode_names: dict, title: str,
         unit_of: dict | None = None) -> None:
    """The chosen outputs over time, one panel each with its unit, events marked by dashed
    lines, and the mode (named by ``mode_names``: number -> name) in the last panel."""
    unit_of = unit_of or {}
    try:
        import matplotlib
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'embed-fmu[demo]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_mode = "mode" in result.dtype.names
    panels = len(outputs) + has_mode
    if not panels:
        raise InputError("--plot: nothing to plot (give --outputs)")
    fig, axes = plt.subplots(panels, 1, sharex=True, figsize=(7, 1.6 + 1.5 * panels),
                             squeeze=False)
    t, marks = result["time"], events(result)
    for ax, name in zip(axes[:, 0], outputs + (["mode"] if has_mode else [])):
        for te in marks:
            ax.axvline(te, color="gray", lw=0.6, ls="--")
        if name == "mode":
            ax.step(t, result["mode"], where="post", color="C3")
            numbers = sorted({int(k) for k in result["mode"]} | set(mode_names))
            ax.set_yticks(numbers)
            ax.set_yticklabels([f"{k} {mode_names.get(k, '')}".strip() for k in numbers])
        else:
            ax.plot(t, result[name])
        ax.set_ylabel(f"{name} ({unit_of[name]})" if name in unit_of else name)
    axes[-1, 0].set_xlabel("time (s)")
    n = len(marks)
    fig.suptitle(f"{title}: events (dashed) in {n} step{'' if n == 1 else 's'}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
