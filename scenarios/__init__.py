"""Example systems from the papers: each scenario is a module, or a package, of this folder
whose top level defines ``build()`` returning an ``embed.Scenario`` (``disk_fence`` is a package:
the scenario and its run-time fence)."""

import ast
import importlib
from pathlib import Path

_HERE = Path(__file__).parent


def _defines_build(path):
    """Whether the module at ``path`` defines or imports ``build`` at its top level (read with
    ast: listing the scenarios imports none of them)."""
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


NAMES = _scenario_names()


def load(name):
    """The scenario module ``name`` (one of NAMES).

    Parameters
    ----------
    name : str

    Returns
    -------
    the module (or package), whose ``build()`` returns an ``embed.Scenario``.
    """
    if name not in NAMES:
        raise KeyError(f"unknown scenario {name!r}; known: {NAMES}")
    return importlib.import_module(f"{__name__}.{name}")
