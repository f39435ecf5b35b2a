"""Values a scenario computes once per process (issue 30, start-up), kept in a module of
no symbols: a scenario image carries a scenario module's functions by value (those modules
import sympy: ``embed.interface.image``), and names this one by reference, so it never
ships what the build's own run computed (another CPU computes its own bits)."""

from __future__ import annotations

import threading

_KEPT = {}
_LOCK = threading.Lock()


def once(key, make):
    """``make()`` the first time ``key`` is asked for in this process, then the same object
    (``make`` must be a pure function of ``key``)."""
    with _LOCK:
        if key in _KEPT:
            return _KEPT[key]
    got = make()
    with _LOCK:
        return _KEPT.setdefault(key, got)
