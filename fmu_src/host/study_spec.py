"""A study's design (issue 16): what to vary and how, what to run and what to keep, read from
a TOML file, a dict or ``embed-fmu sweep`` options, and expanded into numbered cases.

A varied name takes a fixed number, a list (a grid axis), ``linspace(start, stop, num)``,
``geomspace(start, stop, num)`` or a distribution ``uniform(low, high)``,
``normal(mean, std)``, ``lognormal(mean, sigma)`` (numpy's); in TOML ``mu = 0.3``,
``mu = [0.1, 0.2]``, ``mu = {linspace = [0.1, 0.5, 5]}``, on the command line
``--vary mu=0.3``, ``mu=0.1,0.2``, ``mu=linspace(0.1,0.5,5)`` (read with a regular
expression, never evaluated).  The cases are the grid axes' full product (the last axis
varying fastest), each repeated ``samples`` times; case i draws its random values from
``numpy.random.default_rng([seed, i])``, so a case's values depend on the study seed and its
own number only: not on the number of workers, the chunks or the cases run before it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from embed.base.errors import InputError

GRIDS = {"linspace": 3, "geomspace": 3}                    # kind -> number of arguments
DISTRIBUTIONS = {"uniform": 2, "normal": 2, "lognormal": 2}
RUNNERS = ("engine", "fmu")
# summary -> what it is (``embed-fmu sweep --help`` shows this table)
SUMMARIES = {
    "final_mode": "the mode (number) at the stop time",
    "events": "events handled (the event_count output at the stop time)",
    "impacts": "impacts resolved (impact_count)",
    "max_residual": "largest constraint_residual over the communication points",
    "event_times": "located times of the events (a list; through an FMU, NaN for all but "
                   "the last event of a step, whose time is last_event_time)",
    "first_entry:MODE": "first time MODE (its number or name) is entered (0 if it is the "
                        "start mode, NaN if never)",
    "final:OUTPUT": "OUTPUT at the stop time",
    "max:OUTPUT": "largest OUTPUT over the communication points",
    "min:OUTPUT": "smallest OUTPUT over the communication points",
}
DEFAULT_SUMMARIES = ("final_mode", "events", "max_residual")
KEYS = {"stop_time", "step", "seed", "samples", "outputs", "summaries", "runner", "solver",
        "h_max", "parameters", "inputs", "build"}
_CALL = re.compile(r"\s*([a-z]+)\s*\((.*)\)\s*")


@dataclass(frozen=True)
class Axis:
    """One varied name: ``kind`` is ``fixed``, ``values`` (a list), a grid kind (expanded to
    ``values``) or a distribution with its ``args``."""

    name: str
    kind: str
    values: tuple = ()
    args: tuple = ()

    @property
    def random(self) -> bool:
        return self.kind in DISTRIBUTIONS

    def draw(self, rng) -> float:
        """One value from the distribution (numpy's Generator methods of that name)."""
        return float(getattr(rng, self.kind)(*self.args))


@dataclass
class StudySpec:
    """What a study runs: the varied names (``axes``, in order; ``kinds`` says which are
    declared parameters or inputs), the run (stop time, communication step, solver, h_max,
    runner), what is kept (``outputs`` as time series, ``summaries`` per case) and the
    Monte Carlo draws (``samples`` per grid point, ``seed``).  ``build`` holds options of the
    model's ``build()``."""

    axes: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)       # name -> "parameter" / "input"
    stop_time: float = 1.0
    step: float = 0.01
    seed: int = 0
    samples: int = 1
    outputs: list = field(default_factory=list)
    summaries: list = field(default_factory=lambda: list(DEFAULT_SUMMARIES))
    runner: str = ""            # "" : engine for a MODEL, fmu for an .fmu
    solver: str = "rk4"
    h_max: float = 1e-3
    build: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """Communication steps from 0 to the stop time."""
        return int(round(self.stop_time / self.step))

    def check(self) -> None:
        """The settings are usable (each named in the message if not)."""
        for name in ("stop_time", "step", "h_max"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
                raise InputError(f"study: {name} = {x!r} must be a positive finite number")
        n = self.steps
        if n < 1 or abs(n * self.step - self.stop_time) > 1e-9 * self.stop_time:
            raise InputError(f"study: stop_time = {self.stop_time:g} is not a whole number of "
                             f"steps of {self.step:g} s")
        if self.runner not in ("",) + RUNNERS:
            raise InputError(f"study: runner = {self.runner!r}; use one of {RUNNERS}")
        if self.solver not in ("rk4", "adaptive"):
            raise InputError(f"study: solver = {self.solver!r}; use 'rk4' or 'adaptive'")
        if not isinstance(self.samples, int) or self.samples < 1:
            raise InputError(f"study: samples = {self.samples!r} must be an integer >= 1")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"study: seed = {self.seed!r} must be an integer >= 0")
        names = [a.name for a in self.axes]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"study: {', '.join(twice)} varied twice")
        if self.samples > 1 and not any(a.random for a in self.axes):
            raise InputError(f"study: samples = {self.samples} but nothing is drawn at random "
                             "(give a distribution, e.g. uniform(0.5, 1))")
        for s in self.summaries:
            summary_column(s)

    def key(self) -> str:
        """A digest of everything that decides the cases and their results (a resumed study
        must be this one)."""
        d = asdict(self)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, default=list)


def summary_column(summary: str) -> str:
    """The results column of a summary (``first_entry:rolling`` -> ``first_entry_rolling``),
    refusing an unknown one."""
    kind, _, arg = summary.partition(":")
    if (kind in SUMMARIES and not arg) or (f"{kind}:MODE" in SUMMARIES and arg) or \
            (f"{kind}:OUTPUT" in SUMMARIES and arg):
        return f"{kind}_{arg}" if arg else kind
    raise InputError(f"summary {summary!r} is unknown; use one of {', '.join(SUMMARIES)}")


# ------------------------------------------------------------------------------ reading
def axis(name: str, value) -> Axis:
    """An Axis from a TOML value: a number, a list of numbers or ``{kind = [args]}``."""
    where = f"study: {name}"
    if isinstance(value, dict):
        if len(value) != 1:
            raise InputError(f"{where}: write one of {{linspace = [a, b, n]}}, "
                             f"{{uniform = [low, high]}}, ...; got {value!r}")
        (kind, args), = value.items()
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        return _call(name, kind, args)
    if isinstance(value, (list, tuple)):
        if not value:
            raise InputError(f"{where}: an empty list of values")
        return Axis(name, "values", tuple(_number(where, v) for v in value))
    return Axis(name, "fixed", (_number(where, value),))


def parse_vary(text: str) -> Axis:
    """An Axis from ``--vary NAME=SPEC``: ``0.3``, ``0.1,0.2,0.4``, ``linspace(0.1,0.5,5)``,
    ``uniform(0.5,1)`` ... (numbers read with float(); nothing is evaluated)."""
    name, eq, spec = text.partition("=")
    name = name.strip()
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise InputError(f"--vary {text!r}: write NAME=VALUES, e.g. mu=0.1,0.2 or "
                         "mu=linspace(0.1,0.5,5) or e1=uniform(0.5,1)")
    m = _CALL.fullmatch(spec)
    if m:
        args = [a for a in m.group(2).split(",") if a.strip()]
        return _call(name, m.group(1), [_number(f"--vary {name}", a) for a in args])
    values = [_number(f"--vary {name}", v) for v in spec.split(",")]
    return Axis(name, "fixed", tuple(values)) if len(values) == 1 else \
        Axis(name, "values", tuple(values))


def _call(name, kind, args) -> Axis:
    where = f"study: {name}"
    want = GRIDS.get(kind, DISTRIBUTIONS.get(kind))
    if want is None:
        raise InputError(f"{where}: {kind!r} is unknown; use a list, "
                         f"{', '.join(list(GRIDS) + list(DISTRIBUTIONS))}")
    if len(args) != want:
        raise InputError(f"{where}: {kind} takes {want} numbers, got {len(args)}")
    args = tuple(_number(where, a) for a in args)
    if kind in GRIDS:
        num = args[2]
        if num != int(num) or num < 1:
            raise InputError(f"{where}: {kind}'s number of points {num:g} must be an integer >= 1")
        if kind == "geomspace" and (args[0] <= 0 or args[1] <= 0):
            raise InputError(f"{where}: geomspace needs positive end points")
        grid = getattr(np, kind)(args[0], args[1], int(num))
        return Axis(name, "values", tuple(float(x) for x in grid), args)
    if args[1] < 0 or (kind == "uniform" and args[1] < args[0]):
        raise InputError(f"{where}: {kind}{args} is not a distribution (a negative spread or "
                         "high below low)")
    return Axis(name, kind, (), args)


def _number(where, v) -> float:
    if isinstance(v, bool):
        raise InputError(f"{where}: {v!r} is not a number")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {v!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{where}: {v!r} is not finite")
    return x


def from_dict(d: dict, where: str = "study", check: bool = True) -> StudySpec:
    """A StudySpec from the TOML file's keys (see the module docstring and docs/studies.md):
    stop_time, step, seed, samples, outputs, summaries, runner, solver, h_max, and the
    tables parameters, inputs (name = value/list/{kind = [args]}) and build."""
    unknown = sorted(set(d) - KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(KEYS))}")
    spec = StudySpec()
    for key in ("stop_time", "step", "h_max"):
        if key in d:
            setattr(spec, key, _number(f"{where}: {key}", d[key]))
    for key in ("seed", "samples"):
        if key in d:
            if not isinstance(d[key], int) or isinstance(d[key], bool):
                raise InputError(f"{where}: {key} = {d[key]!r} must be an integer")
            setattr(spec, key, d[key])
    for key in ("runner", "solver"):
        if key in d:
            setattr(spec, key, str(d[key]))
    for key in ("outputs", "summaries"):
        if key in d:
            if not isinstance(d[key], list) or not all(isinstance(x, str) for x in d[key]):
                raise InputError(f"{where}: {key} must be a list of names")
            setattr(spec, key, list(d[key]))
    for table in ("parameters", "inputs"):
        for name, value in (d.get(table) or {}).items():
            spec.axes.append(axis(name, value))
            spec.kinds[name] = table[:-1]
    spec.build = dict(d.get("build") or {})
    if check:                   # (not yet if --vary adds axes: ``with_axes`` checks)
        spec.check()
    return spec


def read(path) -> StudySpec:
    """A StudySpec from a TOML file (``read_dict``)."""
    return from_dict(read_dict(path), str(path))


def read_dict(path) -> dict:
    """The keys of a TOML study file (tomllib; tomli before Python 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:                                   # pragma: no cover - Python 3.10
        import tomli as tomllib
    path = Path(path)
    try:
        d = tomllib.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"--study {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"--study {path}: not TOML: {exc}") from None
    return d


def with_axes(spec: StudySpec, axes) -> StudySpec:
    """``spec`` with ``axes`` (``--vary``) replacing its axes of the same names or added;
    whether each is a parameter or an input is then the model's to say."""
    for a in axes:
        spec.axes = [b for b in spec.axes if b.name != a.name] + [a]
        spec.kinds.pop(a.name, None)
    spec.check()
    return spec


# ------------------------------------------------------------------------------ cases
def cases(spec: StudySpec) -> list:
    """[(case number, {name: value})] in order: the grid axes' product (fixed values in
    every case), each point ``samples`` times with its random values drawn from
    ``default_rng([seed, case number])`` in the axes' order."""
    grid = [a for a in spec.axes if not a.random]
    random = [a for a in spec.axes if a.random]
    out = []
    for point in itertools.product(*(a.values for a in grid)):
        for _ in range(spec.samples):
            i = len(out)
            values = dict(zip((a.name for a in grid), point))
            if random:
                rng = np.random.default_rng([spec.seed, i])
                values.update((a.name, a.draw(rng)) for a in random)
            out.append((i, {a.name: values[a.name] for a in spec.axes}))
    return out
