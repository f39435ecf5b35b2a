"""Load functions that cloudpickle pickled by value without importing cloudpickle (issue 30).

A scenario image holds its ``build()``'s closures (reset maps, ``enabled`` predicates),
which cloudpickle pickles as calls of a few reconstructors in ``cloudpickle.cloudpickle``
(a code object, globals, cells).  Importing cloudpickle to unpickle them costs 8-10 ms of an
FMU's start (it imports logging, dataclasses, traceback, uuid, platform).  ``find_class``
answers those reconstructors with the equivalents below, written after cloudpickle 3.x's
(same arguments, same results), and leaves every other name, dynamic classes included
(cloudpickle tracks their identity across pickles), to cloudpickle itself.  A cloudpickle
of another major version than the one these follow is always imported (``FOLLOWS``).
"""

from __future__ import annotations

import builtins
import sys
import types

from . import host_facts

FOLLOWS = "3."        # the cloudpickle release series these reconstructors follow
MODULE = "cloudpickle.cloudpickle"


class _EmptyCell:
    """The marker of an empty closure cell (cloudpickle's ``_empty_cell_value``)."""


_empty_cell_value = _EmptyCell()


def _make_function(code, globals, name, argdefs, closure):
    globals["__builtins__"] = builtins.__dict__
    return types.FunctionType(code, globals, name, argdefs, closure)


def _make_empty_cell():
    if False:               # a closure over a name never assigned: an empty cell
        cell = None
        raise AssertionError("never run")
    return (lambda: cell).__closure__[0]


def _make_cell(value=_empty_cell_value):
    cell = _make_empty_cell()
    if value is not _empty_cell_value:
        cell.cell_contents = value
    return cell


def _function_setstate(obj, state):
    """A function's attributes, globals and closure cells, as pickled (closure and
    globals are read-only attributes: filled in place)."""
    state, slotstate = state
    obj.__dict__.update(state)
    obj_globals = slotstate.pop("__globals__")
    obj_closure = slotstate.pop("__closure__")
    slotstate.pop("_cloudpickle_submodules")     # held only to import them first
    obj.__globals__.update(obj_globals)
    obj.__globals__["__builtins__"] = builtins.__dict__
    if obj_closure is not None:
        for i, cell in enumerate(obj_closure):
            try:
                value = cell.cell_contents
            except ValueError:      # empty
                continue
            obj.__closure__[i].cell_contents = value
    for k, v in slotstate.items():
        setattr(obj, k, v)


def _builtin_type(name):
    return type if name == "ClassType" else getattr(types, name)


def subimport(name):
    __import__(name)
    return sys.modules[name]


def dynamic_subimport(name, vars):
    mod = types.ModuleType(name)
    mod.__dict__.update(vars)
    mod.__dict__["__builtins__"] = builtins.__dict__
    return mod


ANSWERED = {f.__name__: f for f in (_make_function, _make_empty_cell, _make_cell,
                                    _function_setstate, _builtin_type, subimport,
                                    dynamic_subimport)}
ANSWERED["_empty_cell_value"] = _empty_cell_value


def answers() -> bool:
    """Whether a load starting now answers the reconstructors here: cloudpickle is not
    imported yet (if it is, its own serve) and is of the series these follow.  Decided once
    per load, so that one pickle's cells and their empty-cell marker come from one side."""
    return MODULE not in sys.modules and \
        (host_facts.version("cloudpickle") or "").startswith(FOLLOWS)


def find_class(module: str, name: str):
    """The reconstructor ``module.name`` answered here, or None (let pickle import it)."""
    return ANSWERED.get(name) if module == MODULE else None
