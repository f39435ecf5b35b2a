"""Where a model comes from (build time, issue 13): a bundled scenario named by its folder
entry in ``scenarios/``, or a user's Python file (or package folder) anywhere on disk whose
top level defines ``build() -> embed.Scenario``; and the ``--set NAME=VALUE`` options of its
``build()``, converted without ``eval`` to the type of each option's default."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from embed.base.errors import EmbedError, InputError, ModelDefinitionError

ROOT = Path(__file__).resolve().parents[2]
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a text"}


@dataclass
class ModelSource:
    """A model to build: ``path`` is its module file or package folder; ``bundled`` says
    whether it is one of the project's scenarios (then ``name`` is its name; for a user's
    file ``name`` is the Scenario's name, known once it is built: see ``load``)."""

    path: Path
    bundled: bool
    name: str = ""
    _module: object = None

    @property
    def is_package(self) -> bool:
        return self.path.is_dir()

    @property
    def init_file(self) -> Path:
        """The file holding ``build()``: the module, or the package's ``__init__.py``."""
        return self.path / "__init__.py" if self.is_package else self.path

    def description(self) -> str:
        """The first line of the module's docstring (the modelDescription's description)."""
        doc = ast.get_docstring(ast.parse(self.init_file.read_text())) or self.name
        return doc.strip().splitlines()[0]

    def module(self):
        """The model's module, imported once (a user's file under a private module name)."""
        if self._module is None:
            self._module = _import(self)
        return self._module

    def build_function(self):
        build = getattr(self.module(), "build", None)
        if not callable(build):
            raise ModelDefinitionError(
                f"{self.init_file} defines no build(): a model file must define "
                "build() -> embed.Scenario at its top level")
        return build

    def load(self, options: dict | None = None):
        """The Scenario ``build(**options)`` returns, its name checked (it becomes the FMU's
        model identifier, a Python class and a module name).

        Parameters
        ----------
        options : dict, optional
            build options (``build_options`` converts them from ``--set``).

        Returns
        -------
        embed.Scenario
        """
        from embed import Scenario

        sc = self.build_function()(**(options or {}))
        if not isinstance(sc, Scenario):
            raise ModelDefinitionError(f"build() of {self.init_file} returned "
                                       f"{type(sc).__name__}, not an embed.Scenario")
        check_identifier(sc.name, self.init_file)
        if self.bundled and sc.name != self.name:
            raise ModelDefinitionError(f"scenario {self.name!r} builds a Scenario named "
                                       f"{sc.name!r}: the two must agree")
        self.name = sc.name
        return sc


def bundled_names() -> list:
    """The bundled scenarios (``scenarios.NAMES``)."""
    import scenarios
    return list(scenarios.NAMES)


def resolve(model: str) -> ModelSource:
    """The ModelSource a MODEL argument names: a bundled scenario's name, or a path to a
    ``.py`` file or a package folder (holding ``__init__.py``) that defines ``build()``.

    Parameters
    ----------
    model : str

    Returns
    -------
    ModelSource
    """
    if model in bundled_names():
        path = ROOT / "scenarios" / model
        return ModelSource(path if path.is_dir() else path.with_suffix(".py"), True, model)
    path = Path(model).expanduser()
    if path.is_dir() and (path / "__init__.py").is_file():
        src = ModelSource(path.resolve(), False)
    elif path.is_file() and path.suffix == ".py":
        src = ModelSource(path.resolve(), False)
    elif path.exists():
        raise InputError(f"{model}: not a model (a .py file, or a folder with __init__.py, "
                         "defining build())")
    elif path.suffix == ".py" or "/" in model:
        raise InputError(f"{model}: no such model file")
    else:
        raise InputError(f"unknown scenario {model!r}: give one of {', '.join(bundled_names())} "
                         "or the path of a model file")
    if not _defines_build(src.init_file):
        raise ModelDefinitionError(f"{src.init_file} defines no build(): a model file must "
                                   "define build() -> embed.Scenario at its top level")
    _refuse_sibling_imports(src)
    return src


def check_identifier(name: str, where) -> None:
    """Refuse a Scenario name that cannot be an FMI model identifier (a C identifier, here
    also a Python class and module name: letters, digits, underscores, a letter first)."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name) or keyword.iskeyword(name):
        raise ModelDefinitionError(
            f"{where}: the Scenario's name {name!r} is the FMU's model identifier and must be a "
            "C identifier starting with a letter (letters, digits, _), not a Python keyword; "
            "e.g. Scenario('cart_wall', ...)")


def parse_set(items) -> dict:
    """{NAME: VALUE text} of ``--set NAME=VALUE`` arguments."""
    out = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        if not eq or not IDENTIFIER.fullmatch(name.strip()):
            raise InputError(f"--set {item!r}: write NAME=VALUE, e.g. --set N=20")
        out[name.strip()] = value.strip()
    return out


def convert(name: str, text: str, like, default=None):
    """``text`` as a value of the type of ``like`` (bool, int, float or str; None: an int
    if it reads as one, else a float, else the text).  Never evaluated.  A refusal names
    ``default`` (``like`` itself when not given) as the value ``name`` has otherwise."""
    try:
        if isinstance(like, bool):
            low = text.lower()
            if low not in ("true", "false", "1", "0"):
                raise ValueError
            return low in ("true", "1")
        if isinstance(like, int):
            return int(text)
        if isinstance(like, float):
            return float(text)
        if isinstance(like, str):
            return text
    except ValueError:
        shown = like if default is None else default
        raise InputError(f"--set {name}={text}: {name} takes {_KINDS[type(like)]} "
                         f"(default {shown!r})") from None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def build_options(src: ModelSource, raw: dict) -> dict:
    """``raw`` (``parse_set``) as keyword arguments of the model's ``build()``, each converted
    to its default's type; a name ``build()`` does not take is refused, naming the ones it does."""
    params = inspect.signature(src.build_function()).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    known = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    out = {}
    for name, text in raw.items():
        if name not in known and not takes_any:
            raise InputError(f"--set {name}: build() of {src.name or src.init_file} takes "
                             f"{', '.join(known) or 'no options'}")
        default = params[name].default if name in known else None
        out[name] = convert(name, text, None if default is inspect.Parameter.empty else default)
    return out


def _defines_build(path: Path) -> bool:
    """Whether the module at ``path`` defines or imports ``build`` at its top level (ast)."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SyntaxError as exc:
        raise ModelDefinitionError(f"{path}:{exc.lineno}: {exc.msg}") from None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "build":
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == "build"
                                                    for a in node.names):
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "build"
                                                for t in node.targets):
            return True
    return False


def _refuse_sibling_imports(src: ModelSource) -> None:
    """A single model file that imports a module lying beside it would build here and fail
    in the FMU, which carries the model file only: refuse it, saying what to do."""
    if src.is_package:
        return
    folder = src.path.parent
    for node in ast.walk(ast.parse(src.path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
            else []
        for name in names:
            top = name.split(".")[0]
            if (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file():
                raise ModelDefinitionError(
                    f"{src.path}:{node.lineno} imports {top}, a module beside the model file; "
                    "the FMU carries the model file only: make the model a package (a folder "
                    f"with __init__.py defining build()) holding {top} and import it relatively "
                    f"(from . import {top})")


def _import(src: ModelSource):
    if src.bundled:
        return importlib.import_module(f"scenarios.{src.name}")
    name = "_embed_model_" + re.sub(r"\W", "_", src.path.stem)
    spec = importlib.util.spec_from_file_location(
        name, src.init_file, submodule_search_locations=[str(src.path)] if src.is_package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module               # relative imports of a package model find it
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


def load_with_sets(src: ModelSource, raw: dict, others_allowed: bool = False) -> tuple:
    """(Scenario, build options, other ``--set`` texts) of the model ``src``: the ``--set``
    names that are keywords of its ``build()`` are its options (converted); the others are
    refused unless ``others_allowed``.  An exception of the model's own code (its import or
    ``build()``) is shown with its traceback and becomes a ModelDefinitionError naming the
    file."""
    import traceback

    try:
        params = inspect.signature(src.build_function()).parameters
        options = build_options(src, {k: v for k, v in raw.items() if k in params})
        rest = {k: v for k, v in raw.items() if k not in params}
        if rest and not others_allowed:
            build_options(src, rest)                 # refuses them, naming the first
        return src.load(options), options, rest
    except EmbedError:
        raise
    except Exception as exc:
        traceback.print_exc()
        raise ModelDefinitionError(f"{src.init_file}: the model's code failed: "
                             f"{type(exc).__name__}: {exc}") from None
