"""Load functions that cloudpickle pickled by value without importing cloudpickle (issue 30).

A scenario image holds its ``build()``'s closures (reset maps, ``enabled`` predicates),
which cloudpickle pickles as calls of a few reconstructors in ``cloudpickle.cloudpickle``
(a code object, globals, cells).  Importing cloudpickle to unpickle them costs 8-10 ms of an
FMU's start (it imports logging, dataclasses, traceback, uuid, platform).  ``find_class``
answers those reconstructors with the equivalents below, written after cloudpickle 3.x's
(same arguments, same results), and leaves every other name to cloudpickle itself.  A
cloudpickle of another major version than the one these follow is always imported
(``FOLLOWS``).  Classes pickled by value (disk_fence's ``FenceGeometry``, its frozen
dataclasses) are made as cloudpickle makes them, one class per tracker id in a process
(``_lookup_class_or_track``): those made here are handed to cloudpickle's own tracker when
it is imported later (``answers``), so that a later load through it finds the same class.
"""

from __future__ import annotations

import builtins
import sys
import threading
import types
import weakref

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


_TRACKED = weakref.WeakValueDictionary()      # class tracker id -> the class made here
_LOCK = threading.Lock()


def _lookup_class_or_track(class_tracker_id, class_def):
    """The class already made for ``class_tracker_id`` in this process, else ``class_def``,
    tracked under it (cloudpickle's tracker: ``_DYNAMIC_CLASS_TRACKER_BY_ID``)."""
    if class_tracker_id is not None:
        with _LOCK:
            class_def = _TRACKED.setdefault(class_tracker_id, class_def)
            if not any(isinstance(f, _HandOver) for f in sys.meta_path):
                sys.meta_path.insert(0, _HandOver())
    return class_def


class _HandOver:
    """On ``sys.meta_path`` once a class is made here: cloudpickle's module, when it is
    imported, gets those classes in its tracker (``_hand_over``) as soon as it has run, so
    that a ``cloudpickle.loads`` of a pickle naming the same class finds that one."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != MODULE:
            return None
        for finder in list(sys.meta_path):
            spec = None if finder is self or not hasattr(finder, "find_spec") else \
                finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and \
                    hasattr(spec.loader, "exec_module"):
                run = spec.loader.exec_module

                def exec_module(module, run=run):
                    run(module)
                    _hand_over(module)
                spec.loader.exec_module = exec_module
                return spec
        return None

    def invalidate_caches(self):
        pass


def _make_skeleton_class(type_constructor, name, bases, type_kwargs, class_tracker_id, extra):
    """A class pickled by value, with an empty namespace (filled by ``_class_setstate``)."""
    type_kwargs = {sys.intern(k): v for k, v in type_kwargs.items()}
    skeleton_class = types.new_class(name, bases, {"metaclass": type_constructor},
                                     lambda ns: ns.update(type_kwargs))
    return _lookup_class_or_track(class_tracker_id, skeleton_class)


def _class_setstate(obj, state):
    """A class's attributes, as pickled (its ABC registry registered again)."""
    state, slotstate = state
    registry = None
    for attrname, attr in state.items():
        if attrname == "_abc_impl":
            registry = attr
        else:
            setattr(obj, attrname, attr)
    if sys.version_info >= (3, 13) and "__firstlineno__" in state:
        obj.__firstlineno__ = state["__firstlineno__"]     # deleted by the setattr above
    if registry is not None:
        for subclass in registry:
            obj.register(subclass)
    return obj


def _get_dataclass_field_type_sentinel(name):
    """A dataclass field's kind (``dataclasses._FIELD``, ...): the module's own object."""
    import dataclasses
    return {f.name: f for f in (dataclasses._FIELD, dataclasses._FIELD_CLASSVAR,
                                dataclasses._FIELD_INITVAR)}[name]


def _hand_over(module):
    """The classes made here put in cloudpickle's own tracker (``module``, imported since),
    unless it has one for that id already."""
    with _LOCK:
        tracked = list(_TRACKED.items())
    lock, by_id, by_class = (getattr(module, f"_DYNAMIC_CLASS_TRACKER_{k}", None)
                             for k in ("LOCK", "BY_ID", "BY_CLASS"))
    if not tracked or None in (lock, by_id, by_class):
        return
    with lock:
        for tracker_id, cls in tracked:
            cls = by_id.setdefault(tracker_id, cls)
            by_class.setdefault(cls, tracker_id)


ANSWERED = {f.__name__: f for f in (_make_function, _make_empty_cell, _make_cell,
                                    _function_setstate, _builtin_type, subimport,
                                    dynamic_subimport, _make_skeleton_class, _class_setstate,
                                    _get_dataclass_field_type_sentinel)}
ANSWERED["_empty_cell_value"] = _empty_cell_value


def answers() -> bool:
    """Whether a load starting now answers the reconstructors here: cloudpickle is not
    imported yet (if it is, its own serve) and is of the series these follow.  Decided once
    per load, so that one pickle's cells and their empty-cell marker come from one side;
    where cloudpickle is imported, the classes made here are handed to it first."""
    module = sys.modules.get(MODULE)
    if module is not None:
        _hand_over(module)
        return False
    return (host_facts.version("cloudpickle") or "").startswith(FOLLOWS)


def find_class(module: str, name: str):
    """The reconstructor ``module.name`` answered here, or None (let pickle import it)."""
    return ANSWERED.get(name) if module == MODULE else None
