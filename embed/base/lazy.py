"""symengine imported at its first use (issue 30: the stepping process imports nothing
symbolic).

The engine's modules that form expressions also hold what the stepping process runs (a
mode's layout, the compiled terms' evaluation, the constraint sets' names); they import
``symengine`` as ``from ..base.lazy import symengine as se``: the module is imported when
one of its attributes is first read (a symbolic function running), which is then kept on the
proxy, so that later reads cost an ordinary attribute lookup.  Behaviour is symengine's own.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for module ``name``, imported at the first attribute read."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if attr.startswith("__"):            # copy, pickle, inspect probe for hooks
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._name), attr)
        object.__setattr__(self, attr, value)
        return value

    def __repr__(self):
        return f"<lazily imported module {self._name!r}>"


symengine = LazyModule("symengine")
