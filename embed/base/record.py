"""Plain value classes without ``dataclasses`` (issue 30, start-up).

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and,
frozen, ``__setattr__`` as source text and compiles it with ``exec`` when the class is
defined: 1-4 ms a class, about 20 ms of every FMU's start for the fifteen classes an FMU
imports (measured: ``dataclasses._process_class`` timed inside fmpy's instantiate).  A
``Record`` subclass names its fields in ``FIELDS`` and writes its ``__init__`` by hand;
``Record`` gives what the decorator gave, with the same behaviour:

- ``repr``: ``Name(field=value, ...)`` over ``FIELDS``;
- ``==``: same class and equal field tuples (``NotImplemented`` for another class);
- ``FROZEN = True``: assigning or deleting an attribute raises ``FrozenInstanceError`` (an
  ``AttributeError``), the instance hashes by its field tuple; a mutable record is unhashable
  (``__hash__ = None``, as a dataclass with ``eq=True``);
- ``replace(**changes)``: a new instance through ``__init__`` (checks and derived values run
  again), as ``dataclasses.replace``.

Instances pickle and copy as any plain object (their ``__dict__``).  ``__init__`` assigns
through ``self.__dict__`` so that a frozen record can set its own fields.
"""

from __future__ import annotations

__all__ = ["FrozenInstanceError", "Record"]


class FrozenInstanceError(AttributeError):
    """An attribute of a frozen ``Record`` was assigned or deleted."""


class Record:
    """Base of the plain value classes (module docstring)."""

    FIELDS: tuple = ()      # the fields' names, in ``__init__``'s order
    FROZEN = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.FROZEN and "__hash__" not in cls.__dict__:
            cls.__hash__ = None
        if cls.FROZEN:      # (a mutable record keeps object's C-level setattr: no cost)
            cls.__setattr__, cls.__delattr__ = Record._frozen_setattr, Record._frozen_delattr

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __repr__(self):
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self):
        return hash(self._values())

    def _frozen_setattr(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def _frozen_delattr(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def replace(self, **changes):
        """A copy with ``changes`` (field name -> value), made through ``__init__``."""
        unknown = sorted(set(changes) - set(self.FIELDS))
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field(s) {unknown}")
        return type(self)(**{name: changes.get(name, getattr(self, name))
                             for name in self.FIELDS})
