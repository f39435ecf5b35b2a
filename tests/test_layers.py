"""Imports run one way (docs/design.md, layers): the engine (embed/) imports neither the
scenarios nor the FMU layer (fmu_src/), and the scenarios never import the FMU layer.  Read
from every module's source with ast (nothing is imported), so an import inside a function
counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("embed", "scenarios", "fmu_src")
FORBIDDEN = {"embed": {"scenarios", "fmu_src"}, "scenarios": {"fmu_src"}, "fmu_src": set()}


def imported_packages(path, package):
    """{(top-level package imported, line)} of the module at ``path`` (relative imports
    resolved against ``package``, the module's own top-level package)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update((alias.name.split(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:                 # relative: within the module's own package
                out.add((package, node.lineno))
            elif node.module:
                out.add((node.module.split(".")[0], node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "__import__" and node.args
              and isinstance(node.args[0], ast.Constant)):
            out.add((str(node.args[0].value).split(".")[0], node.lineno))
    return out


def modules(package):
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_layer_never_imports_a_layer_above_it(package):
    files = modules(package)
    assert files, package
    bad = [f"{path.relative_to(ROOT)}:{line} imports {name}"
           for path in files for name, line in imported_packages(path, package)
           if name in FORBIDDEN[package]]
    assert not bad, "\n".join(bad)


def test_the_check_sees_imports_of_every_form(tmp_path):
    """The reader above finds what it must refuse: plain, from, relative, nested imports."""
    source = tmp_path / "m.py"
    source.write_text("import scenarios.disk_fence\nfrom fmu_src import slave\n"
                      "from . import sibling\n\ndef f():\n    import fmu_src.fence\n"
                      "    __import__('scenarios')\n")
    found = {name for name, _ in imported_packages(source, "embed")}
    assert found == {"scenarios", "fmu_src", "embed"}
