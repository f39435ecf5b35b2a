"""A variable of a scenario's interface (``Var``): a parameter, an input or an output, with
its range, and the one check of a value given to it from outside (``Var.problem``)."""

from __future__ import annotations

import math

from ..base.record import Record


class Var(Record):
    """A variable of the interface: a parameter, an input or an output.

    Parameters
    ----------
    name : str
    start : number or str
        Default (parameters, inputs) or start value (outputs).
    description, unit : str
    type : str
        Real, Integer, Boolean or String.
    min, max : float, optional
        The range a master may set (FMI min/max); None: unbounded.
    min_excluded : bool
        ``min`` itself is refused (x > min): a ``positive`` parameter is min 0 excluded.
    choices : tuple of str
        A String's allowed values (compared stripped and lower-case); empty: any.

    The one check of a value from outside (``problem``, ``convert``): the FMU's setters,
    ``embed.check`` and the studies all ask the variable.
    """

    FIELDS = ("name", "start", "description", "unit", "type", "min", "max", "min_excluded",
              "choices")
    FROZEN = True

    def __init__(self, name: str, start, description: str = "", unit: str = "",
                 type: str = "Real", min: float | None = None, max: float | None = None,
                 min_excluded: bool = False, choices: tuple = ()):
        self.__dict__.update(name=name, start=start, description=description, unit=unit,
                             type=type, min=min, max=max, min_excluded=min_excluded,
                             choices=choices)

    def problem(self, value) -> str | None:
        """What is wrong with ``value`` for this variable, naming it, or None: a String not
        among ``choices``; a Real or Integer that is not a finite number or lies outside
        [min, max] (a sign named as such when min is 0)."""
        if self.type == "Boolean":
            return None
        if self.type == "String":
            if self.choices and str(value).strip().lower() not in self.choices:
                return f"{self.name} = {value!r} is not one of {self.choices}"
            return None
        try:
            x = float(value)
        except (TypeError, ValueError):
            return f"{self.name} = {value!r} is not a number"
        if not math.isfinite(x):
            return f"{self.name} = {value!r} is not finite"
        lo, hi = self.min, self.max
        if lo is not None and (x <= lo if self.min_excluded else x < lo):
            if lo == 0:
                return f"{self.name} = {value!r} must " + (
                    "be positive" if self.min_excluded else "not be negative")
            return f"{self.name} = {value!r} lies outside {self._range()}"
        if hi is not None and x > hi:
            return f"{self.name} = {value!r} lies outside {self._range()}"
        return None

    def _range(self) -> str:
        return f"{'(' if self.min_excluded else '['}{self.min}, {self.max}]"

    def convert(self, value):
        """``value`` (that ``problem`` found nothing wrong with) as this variable holds it."""
        if self.type == "String":
            return str(value).strip().lower() if self.choices else str(value)
        if self.type == "Boolean":
            return bool(value)
        return int(value) if self.type == "Integer" else float(value)

    def with_sign(self, positive: bool = False, nonnegative: bool = False) -> "Var":
        """This variable with ``positive`` (> 0) or ``nonnegative`` (>= 0) folded into its
        range (a range of its own that says as much is kept)."""
        if not (positive or nonnegative) or self.min is not None and (
                self.min > 0 or self.min == 0 and (self.min_excluded or not positive)):
            return self
        return self.replace(min=0.0, min_excluded=bool(positive))
