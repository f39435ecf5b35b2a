"""Example systems from the papers; each module has ``build()`` returning an ``embed.Scenario``."""

import importlib

NAMES = ["disk_ramp"]


def load(name):
    """The scenario module ``name`` (one of NAMES)."""
    if name not in NAMES:
        raise KeyError(f"unknown scenario {name!r}; known: {NAMES}")
    return importlib.import_module(f"{__name__}.{name}")
