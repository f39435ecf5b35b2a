"""Imports run one way (docs/design.md, layers): the engine (embed/) imports neither the
scenarios nor the FMU layer (fmu_src/), and the scenarios never import the FMU layer; inside
embed/ and fmu_src/, a sub-package imports only itself and the sub-packages below it.  Read
from every module's source with ast (nothing is imported), so an import inside a function
counts as much as one at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("embed", "scenarios", "fmu_src")
FORBIDDEN = {"embed": {"scenarios", "fmu_src"}, "scenarios": {"fmu_src"}, "fmu_src": set()}
# the sub-packages of a package, lowest first (docs/design.md, the layer table); a package's
# own __init__.py (its public API) stands above them all
SUBLAYERS = {
    "embed": ("base", "codegen", "model", "embedding", "check", "modes", "hybrid", "background",
              "interface"),
    "fmu_src": ("runtime", "builder", "host"),
}
# Imports of a sub-package above the importer's that the pure moves of issue 28 kept (a move
# changes no code): (importing file, sub-package imported).  Each is to be removed, none added.
KNOWN_UPWARD = set()


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


def imported_modules(path, dotted, is_package):
    """{(absolute dotted name imported, line)} of the module ``dotted`` at ``path``, relative
    imports resolved (``from . import x`` gives the package's ``x``)."""
    here = dotted.split(".") if is_package else dotted.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            if node.module:
                out.add((base, node.lineno))
            else:
                out.update((f"{base}.{a.name}", node.lineno) for a in node.names)
    return out


def sub_package(dotted, package):
    """The sub-package of ``package`` that module ``dotted`` is in (None: the package itself)."""
    parts = dotted.split(".")
    return parts[1] if parts[0] == package and len(parts) > 2 or (
        parts[0] == package and len(parts) == 2 and parts[1] in SUBLAYERS[package]) else None


@pytest.mark.parametrize("package", sorted(SUBLAYERS))
def test_a_sub_package_never_imports_one_above_it(package):
    order = SUBLAYERS[package]
    bad, upward = [], set()
    for path in modules(package):
        rel = path.relative_to(ROOT)
        parts = rel.with_suffix("").parts
        if rel.parts[1:] == ("__init__.py",):
            continue                                  # the package's front: above them all
        assert len(parts) >= 3 and parts[1] in order, \
            f"{rel}: every module of {package}/ lives in one of its sub-packages {order}"
        mine = order.index(parts[1])
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for name, line in imported_modules(path, dotted, parts[-1] == "__init__"):
            if name.split(".")[0] != package:
                continue
            theirs = sub_package(name, package)
            if theirs is None:
                bad.append(f"{rel}:{line} imports {name}, the package's front (above them all)")
            elif order.index(theirs) > mine:
                if (rel.as_posix(), theirs) in KNOWN_UPWARD:
                    upward.add((rel.as_posix(), theirs))
                else:
                    bad.append(f"{rel}:{line} imports {name}: {theirs} is above {parts[1]}")
    assert not bad, "\n".join(bad)
    gone = {k for k in KNOWN_UPWARD if k[0].startswith(package + "/")} - upward
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {sorted(gone)}"


def test_the_check_sees_imports_of_every_form(tmp_path):
    """The reader above finds what it must refuse: plain, from, relative, nested imports."""
    source = tmp_path / "m.py"
    source.write_text("import scenarios.disk_fence\nfrom fmu_src import slave\n"
                      "from . import sibling\n\ndef f():\n    import fmu_src.fence\n"
                      "    __import__('scenarios')\n")
    found = {name for name, _ in imported_packages(source, "embed")}
    assert found == {"scenarios", "fmu_src", "embed"}
    nested = tmp_path / "embed" / "hybrid"
    nested.mkdir(parents=True)
    (nested / "m.py").write_text("from ..model.model import TIME\nfrom . import events\n"
                                 "def f():\n    from embed.modes.compile import lambdify\n")
    found = {name for name, _ in imported_modules(nested / "m.py", "embed.hybrid.m", False)}
    assert found == {"embed.model.model", "embed.hybrid.events", "embed.modes.compile"}
    assert [sub_package(n, "embed") for n in sorted(found)] == ["hybrid", "model", "modes"]


# ------------------------------------------------------------------------- no circles
def module_graph():
    """{module: {(module it imports, line)}} over every module of PACKAGES (an import of a
    package's ``__init__`` counts only when written: Python runs the parents' ``__init__``
    of every import, and the fronts import their sub-packages by design; imports under
    ``if TYPE_CHECKING:`` never run and do not count)."""
    files = {}
    for package in PACKAGES:
        for path in modules(package):
            parts = path.relative_to(ROOT).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            files[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    graph = {}
    for dotted, (path, is_package) in files.items():
        out = set()
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:      # read by type checkers, never run
                continue
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                here = dotted.split(".") if is_package else dotted.split(".")[:-1]
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
                # ``from package import module`` imports the module, not only the package
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in files]
                names = subs if subs and len(subs) == len(node.names) else [base] + subs
            out.update((n, node.lineno) for n in names if n in files and n != dotted)
        graph[dotted] = out
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _ in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_through_others():
    """No circle of imports, also none through an import inside a function (issue 28:
    compile <-> modes, check <-> probe and disk_fence -> fmu_src.fence -> disk_fence were)."""
    graph = module_graph()
    found = circles(graph)
    report = ["  ".join(f"{m} -> {', '.join(sorted(n for n, _ in graph[m] if n in comp))}"
                        for m in comp) for comp in found]
    assert not found, "\n".join(report)


STRING_NAME = re.compile(r"(%s)(\.\w+)+(:\w+)?" % "|".join(PACKAGES))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_string_names_a_module_of_a_layer_above(package):
    """A module named in a string ("fmu_src.runtime.fence", "pkg.mod:name", imported later by
    ``load_target``) is an import too: none of a layer above the one naming it."""
    bad = []
    for path in modules(package):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and STRING_NAME.fullmatch(node.value)
                    and node.value.split(".")[0] in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.value!r}")
    assert not bad, "\n".join(bad)


def test_the_circle_finder_finds_circles():
    graph = {"a": {("b", 1)}, "b": {("c", 2)}, "c": {("a", 3)}, "d": {("a", 4)}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {("b", 1)}, "b": set()}) == []
