"""A scenario's image: the scenario as the stepping process needs it, without its symbols
(issue 30, docs/design.md "Start-up").

``freeze`` pickles a built ``Scenario`` (cloudpickle: its reset maps, ``enabled`` predicates,
initial map and feasibility checks by value, with the modules of their package that import
sympy or symengine; the others, imported without them, by reference) with every
sympy and symengine object replaced by a ``Placeholder`` (its text and kind), their modules,
classes and functions, and the functions of the engine's modules that import them, by lazy
references (imported at first use: ``Deferred``, ``embed.base.lazy.LazyModule``), and the
``Model`` by a ``ModelImage`` (its numeric attributes, the symbols as placeholders): loading
it (``thaw``) imports neither sympy nor the scenario's modules that import it.  The stepping
path reads names and sizes only (``tests/test_frozen_scenario.py``): where an image's
simulator meets symbolic work (a mode or a constraint's terms nobody compiled, a symbolic
Jacobian), its forms build the real scenario then and go on with its symbols
(``embed.modes.forming.register_image``).  A placeholder used for anything but its name raises
``SymbolsNeeded``, naming it.
"""

from __future__ import annotations

import copy
import io
import pickle
import sys
import types

from ..base.errors import EmbedError

SYMBOLIC_PACKAGES = ("sympy", "symengine", "mpmath")


class SymbolsNeeded(EmbedError):
    """A scenario image's placeholder was used as a symbol: the work needs the real scenario
    (``embed.modes.forming.AutomatonForms.symbolic`` builds it first)."""


class Placeholder:
    """A symbolic object's stand-in in an image: its text (hashable and equal by it, as a
    symbol by its name) and the kind it stands for; any other use raises ``SymbolsNeeded``."""

    __slots__ = ("text", "kind")
    error = SymbolsNeeded      # what a use raises (a test's stand-in raises its own)

    def __init__(self, text, kind):
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "kind", kind)

    def __reduce__(self):
        return Placeholder, (self.text, self.kind)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"Placeholder({self.kind} {self.text[:60]})"

    def __hash__(self):
        return hash(("placeholder", self.text))

    def __eq__(self, other):
        return isinstance(other, Placeholder) and other.text == self.text

    def __getattr__(self, name):
        if name.startswith("__"):          # copy, pickle and friends probe for hooks
            raise AttributeError(name)
        raise self.error(f".{name} of {self!r}: a scenario image has no symbols")

    def _used(self, *args):
        raise self.error(f"{self!r} used as a symbol: a scenario image has no symbols")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = \
        __rtruediv__ = __pow__ = __rpow__ = __neg__ = __iter__ = __len__ = __getitem__ = \
        __bool__ = __float__ = __call__ = __lt__ = __gt__ = __le__ = __ge__ = _used


class ModelImage:
    """A ``Model``'s stand-in in an image: its numeric attributes (``n``, the coordinates',
    speeds', forces', parameters' and inputs' names as placeholders); what forms equations
    (``sym``, ``linear_terms``) raises ``SymbolsNeeded``."""

    def __init__(self, state):
        self.__dict__.update(state)

    def index_q(self, name: str) -> int:       # as Model.index_q
        return [str(s) for s in self.q].index(name)

    def sym(self, expr):
        raise SymbolsNeeded(f"model {self.name!r}: an expression formed from an image")

    def linear_terms(self):
        raise SymbolsNeeded(f"model {self.name!r}: linear terms formed from an image")


class Deferred:
    """In an image, a function of a module that imports sympy or symengine when loaded
    (``embed.base.expression``, ``embed.model.model``), or one of their own functions and
    classes, named by the image's by-value code (a parser for a fence's text, say): the
    module is imported at its first use (a call, an attribute, ``isinstance``), never by
    loading the image."""

    __slots__ = ("module", "name", "_obj")

    def __init__(self, module, name):
        self.module, self.name, self._obj = module, name, None

    def __reduce__(self):
        return Deferred, (self.module, self.name)

    def get(self):
        """The function or class itself (its module imported now)."""
        if self._obj is None:
            import importlib
            obj = importlib.import_module(self.module)
            for part in self.name.split("."):
                obj = getattr(obj, part)
            self._obj = obj
        return self._obj

    def __call__(self, *args, **kwargs):
        return self.get()(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.get(), name)

    def __instancecheck__(self, obj):     # sympy's classes: their objects are placeholders
        return isinstance(obj, self.get())

    def __subclasscheck__(self, cls):
        return issubclass(cls, self.get())

    def __repr__(self):
        return f"Deferred({self.module}.{self.name})"


def _loads_symbols(name, seen=None) -> bool:
    """Whether importing the module ``name`` (in sys.modules) imports sympy or symengine: a
    global of it is one of their modules, classes or functions (imported at its top; not an
    expression, which a module may have made and kept since: ``embed.model.symbols.TIME``),
    or a module, function or class of a module of its package that imports them."""
    mod = sys.modules.get(name)
    if mod is None or _ours(name):
        return _ours(name)
    seen = set() if seen is None else seen
    if name in seen:
        return False
    seen.add(name)
    for v in list(vars(mod).values()):
        if isinstance(v, (types.ModuleType, type, types.FunctionType,
                          types.BuiltinFunctionType)) and _symbolic(v):
            return True
        if isinstance(v, types.ModuleType):
            other = v.__name__
        elif isinstance(v, (type, types.FunctionType)):
            other = getattr(v, "__module__", None)
        else:
            continue
        if isinstance(other, str) and other != name and other.split(".")[0] == name.split(".")[0] \
                and _loads_symbols(other, seen):
            return True
    return False


def _symbolic(obj) -> bool:
    """Whether ``obj`` is of sympy or symengine: an expression or matrix (``Basic``, a class
    sympy made, as ``dynamicsymbols``' functions), an object of a class derived from theirs
    (``embed.model.joints.QuaternionJoint``, whose module imports sympy), or one of their
    modules, classes or functions."""
    if isinstance(obj, types.ModuleType):
        return _ours(obj.__name__)
    kind = obj if isinstance(obj, type) else type(obj)
    if _ours(type(kind).__module__) or any(_ours(getattr(k, "__module__", None))
                                           for k in getattr(kind, "__mro__", (kind,))):
        return True       # of sympy's classes, or of one derived from them (a QuaternionJoint)
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return _ours(getattr(obj, "__module__", None))
    for package, names in (("sympy", ("Basic", "MatrixBase")), ("symengine", ("Basic",))):
        mod = sys.modules.get(package)
        if mod is not None and isinstance(obj, tuple(getattr(mod, n) for n in names)):
            return True
    return False


def _ours(module) -> bool:
    return isinstance(module, str) and module.split(".")[0] in SYMBOLIC_PACKAGES


def freeze(sc, extra=None) -> bytes:
    """The image of the scenario ``sc`` (pickled; ``extra``: what else travels with it, a
    dict, pickled in the same pass): symbols as placeholders, the model as a ``ModelImage``,
    the modules of the scenario's package that import sympy or symengine by value, the others
    by reference (``by_value_modules``); without ``visuals`` and ``check_entries`` (the
    host's drawing and ``embed-fmu check``'s entries, not the stepping process's)."""
    import cloudpickle
    from ..model.model import Model
    img = copy.copy(sc)
    img.visuals, img.check_entries = None, {}
    home = _scenario_package(sc)
    registered = []
    if home is not None and not cloudpickle.list_registry_pickle_by_value() & {home}:
        registered = [sys.modules[m] for m in by_value_modules(home)]
    for mod in registered:
        cloudpickle.register_pickle_by_value(mod)

    class Freezer(cloudpickle.Pickler):
        def reducer_override(self, obj):
            if type(obj) is Model:
                state = {k: v for k, v in vars(obj).items()
                         if k not in ("frame", "bodies", "_linear_terms", "_plain_sub")}
                return ModelImage, (state,)
            if _symbolic(obj):
                return _importable(obj) or (Placeholder, (_text(obj), type(obj).__name__))
            if isinstance(obj, types.FunctionType):   # (a class may have instances here)
                module = getattr(obj, "__module__", None)
                module = module if isinstance(module, str) else ""
                if (module and module.split(".")[0] != home and "<locals>" not in obj.__qualname__
                        and _loads_symbols(module)):
                    return Deferred, (module, obj.__qualname__)
            return super().reducer_override(obj)

    buf = io.BytesIO()
    try:
        Freezer(buf, protocol=pickle.HIGHEST_PROTOCOL).dump({"scenario": img, **(extra or {})})
    finally:
        for mod in registered:
            cloudpickle.unregister_pickle_by_value(mod)
    return buf.getvalue()


_CHECK = r"""
import importlib, json, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        print(json.dumps([name, "error"]))
        break
    symbolic = [m for m in sys.modules if m.split(".")[0] in SYMBOLIC]
    print(json.dumps([name, "symbolic" if symbolic else "free"]))
    if symbolic:
        break
"""


def by_value_modules(home) -> list:
    """The modules of the scenario's package ``home`` (those loaded) that an image carries by
    value: each whose import imports sympy, symengine or mpmath, or fails, in a process of
    its own (this one has them).  The others (disk_fence's ``extension``, ``profile``, ...:
    their symbols made at first use) are named by reference, as the engine's own modules:
    the stepping process imports them, and unpickles the image without cloudpickle
    (``embed.base.pickled_functions``: by-value classes need it; issue 30)."""
    import json
    import os
    import subprocess
    names = sorted(m for m in sys.modules if m == home or m.startswith(home + "."))
    free, left = set(), names
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if isinstance(p, str))}
    while left:          # a module found symbolic ends a run; the next starts after it
        out = subprocess.run([sys.executable, "-c", f"SYMBOLIC = {SYMBOLIC_PACKAGES!r}" + _CHECK,
                              *left], capture_output=True, text=True, env=env).stdout
        judged = [json.loads(line) for line in out.splitlines() if line.startswith("[")]
        free |= {n for n, verdict in judged if verdict == "free"}
        left = left[max(len(judged), 1):]
    return [m for m in names if m not in free]


def _importable(obj):
    """How an image names sympy's or symengine's module, class or function ``obj`` that the
    by-value code reads (``sp.preorder_traversal`` in a check of a fence parsed in the
    stepping process, say): the module imported at its first attribute, the function or
    class at its first use (``Deferred``); None for anything else (an expression, a class
    sympy made, as ``Function("h")``), which stays a placeholder."""
    if isinstance(obj, types.ModuleType):
        from ..base.lazy import LazyModule
        return LazyModule, (obj.__name__,)
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(name, str)) or "<" in name:
        return None
    try:
        found = sys.modules[module]
        for part in name.split("."):
            found = getattr(found, part)
    except (KeyError, AttributeError):
        return None
    return (Deferred, (module, name)) if found is obj else None


def thaw(data: bytes) -> dict:
    """The image ``freeze`` wrote: {"scenario": Scenario, ...} (imports no sympy)."""
    return pickle.loads(data)


def _text(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"{obj.__module__}.{obj.__qualname__}"
    try:
        return str(obj)
    except Exception:  # noqa: BLE001 - a placeholder's text is only its name
        return type(obj).__name__


def _scenario_package(sc):
    """The top-level package of the module that built ``sc`` (``scenarios`` or the build's
    renamed one): ``by_value_modules`` says which of its modules travel by value."""
    aut = sc.automaton
    fns = [sc.initial_state, aut.initial, aut.zeno, getattr(aut.transition, "fallback", None)]
    fns += [g.reset for m in aut.modes.values() for g in m.guards]
    for fn in fns:
        name = getattr(fn, "__module__", None) or ""
        if name.split(".")[0].startswith("scenarios"):
            return name.split(".")[0]
    for name in sys.modules:
        top, _, rest = name.partition(".")
        if top.startswith("scenarios") and rest.split(".")[0] == sc.name:
            return top
    return None
