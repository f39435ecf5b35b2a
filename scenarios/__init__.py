"""Example systems from the papers; each module has ``build()`` returning an ``embed.Scenario``."""

import importlib
from pathlib import Path

# every module in this folder is a scenario
NAMES = sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_"))


def load(name):
    """The scenario module ``name`` (one of NAMES)."""
    if name not in NAMES:
        raise KeyError(f"unknown scenario {name!r}; known: {NAMES}")
    return importlib.import_module(f"{__name__}.{name}")
