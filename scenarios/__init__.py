"""Example systems from the papers: each scenario is a module, or a package, of this folder
whose top level defines ``build()`` returning an ``embed.Scenario`` (``disk_fence`` is a package:
the scenario and its run-time fence)."""

import importlib
import sys
from pathlib import Path

_HERE = Path(__file__).parent


def _defines_build(path):
    """Whether the module at ``path`` defines or imports ``build`` at its top level (read with
    ast: listing the scenarios imports none of them)."""
    import ast
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == "build":
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == "build"
                                                    for a in node.names):
            return True
    return False


def _scenario_names():
    modules = [p.stem for p in _HERE.glob("*.py")]
    packages = [p.parent.name for p in _HERE.glob("*/__init__.py")
                if _defines_build(p)]
    return sorted(n for n in modules + packages if not n.startswith("_"))


def _names():
    if "NAMES" not in globals():
        globals()["NAMES"] = _scenario_names()
    return globals()["NAMES"]


def __getattr__(name):
    """NAMES, the scenarios' names, listed at the first read (1-2 ms of globbing and parsing
    that an FMU's process, importing a scenario's modules by reference, never needs)."""
    if name == "NAMES":
        return _names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(name):
    """The scenario module ``name`` (one of NAMES).

    Parameters
    ----------
    name : str

    Returns
    -------
    the module (or package), whose ``build()`` returns an ``embed.Scenario``.
    """
    loaded = sys.modules.get(f"{__name__}.{name}")
    if loaded is not None:   # an earlier FMU instance's (its extraction, where NAMES was
        return loaded        # listed, may be gone: fmpy removes it when the instance is freed)
    names = _names()
    if name not in names:
        raise KeyError(f"unknown scenario {name!r}; known: {names}")
    return importlib.import_module(f"{__name__}.{name}")
