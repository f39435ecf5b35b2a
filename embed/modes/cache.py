"""A user cache folder for the engine runner's compiled modes (issue 30).

What an FMU ships in resources/formed/objects.pkl (``embed.base.shipped``), the engine runner
(a script's ``Scenario.simulator``, the study runner's cases) keeps in a folder of the user's:
the first ``simulator`` of a scenario's automaton on an embedding path loads that path's
``ModeLibrary`` from the folder if a file for its key is there, and what the process compiled
is written back (``ModeLibrary.picklable``: object code only, no symbolic expression) when
the automaton is dropped or the process ends (``save_all``: also at the end of a study's chunk).

- Folder (``folder``): ``$EMBED_CACHE``, else ``$XDG_CACHE_HOME/embed-fmu``, else
  ``~/.cache/embed-fmu``; ``EMBED_CACHE=off`` (or 0, no, false, none) turns the cache off.
  Its size is kept under ``$EMBED_CACHE_MAX_MB`` (default 1000): the least recently used
  files are removed after a write (``prune``); ``embed-fmu cache --info/--clear``.
- Key (``key_of``): the scenario's name, the embedding path, a digest of the automaton
  (``content_digest``: its expressions as text, its numbers, the code of its functions and
  the sources of the modules its objects come from, so build options such as a chain's N
  are in it), the digest of the engine's and the bundled scenarios' sources, and the
  versions, LLVM version and CPU name and features (``shipped.environment``) of the
  FMU's shipped objects.  The file's name is the key's SHA-256; the key travels in its header.
- A file for another key, or whose bytes do not hash to its header's SHA-256 (corrupt,
  truncated), is refused before it is unpickled (``shipped.read``), with a ``CacheWarning``
  naming the file and why; the modes are compiled as without it and the file overwritten.
- Writes go to a temporary file in the folder, then ``os.replace``: a reader sees a whole
  file or none, and concurrent writers (a study's workers) leave one of theirs whole.
- Results are bit for bit those of an uncached run: the symbolic caches are formed again
  from the model (``ModeLibrary.picklable``; why: ``embed.model.kane_terms``).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings
import weakref
from pathlib import Path

from ..base import shipped
from ..base.cache_files import SUFFIX, CacheWarning, folder, prune, write
from ..base.sha import sha256
from .library import _LIBRARIES, _LOCKS_LOCK, SYMBOLIC, ModeLibrary

MAX_NODES = 2_000_000       # a larger automaton is not cached (its digest would cost too much)
_PROJECT = ("embed", "scenarios")
_ENTRIES = {}               # (id(automaton), embedding) -> _Entry, while the automaton lives
_MEMO = {}                  # per process: environment, sources digest
_INSTALLED = {}             # module name -> whether it is not the project's (``_installed``)


# ------------------------------------------------------------------------------ keys
def _module_files(modules) -> list:
    out = []
    for name in sorted(modules):
        f = getattr(sys.modules.get(name), "__file__", None)
        if f and f.endswith(".py") and os.path.isfile(f):
            out.append(f)
    return out


def _project_digest() -> str:
    """The digest of the engine's and the bundled scenarios' sources (once per process)."""
    if "sources" not in _MEMO:
        root = Path(__file__).resolve().parents[2]
        _MEMO["sources"] = shipped.sources_digest(
            root, [p for p in _PROJECT if (root / p).is_dir()])
    return _MEMO["sources"]


class _Digest:
    """A canonical digest of an object graph (a Merkle walk: an object's digest is that of
    its class and its parts', so objects shared or not, as a process's caches make them, digest
    alike): numbers by repr, expressions (sympy, symengine) by their text, arrays by their
    bytes, functions by their code, constants, defaults and closures, other objects by their
    class and attributes.  The modules of the classes and functions met are collected (their
    sources enter the key)."""

    def __init__(self):
        self.memo, self.stack, self.modules, self.nodes = {}, set(), set(), 0
        self._keep = []          # what was walked: ids stay unique while the walk lasts
        self.basics = tuple(t for t in (_cls("sympy", "Basic"), _cls("symengine", "Basic"),
                                        _cls("sympy.matrices", "MatrixBase"),
                                        _cls("symengine", "MatrixBase")) if t)

    def walk(self, obj) -> str:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise OverflowError("automaton too large to digest")
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            return f"{type(obj).__name__}:{obj!r}"
        i = id(obj)
        if i in self.memo:
            return self.memo[i]
        if self.basics and isinstance(obj, self.basics):
            self._keep.append(obj)
            d = self.memo[i] = _sha(type(obj).__name__, str(obj))
            return d
        if i in self.stack:                   # a cycle: named by its class only
            return f"cycle:{type(obj).__qualname__}"
        self.stack.add(i)
        self._keep.append(obj)
        try:
            d = self.memo[i] = _sha(*self._parts(obj))
        finally:
            self.stack.discard(i)
        return d

    def _parts(self, obj):
        t = type(obj)
        if t.__module__ == "numpy" or hasattr(obj, "__array_interface__"):
            import numpy as np
            a = np.asarray(obj)
            return ["array", a.dtype.str, a.shape, a.tobytes().hex()]
        if isinstance(obj, (list, tuple)):
            return [t.__name__] + [self.walk(x) for x in obj]
        if isinstance(obj, dict):
            return ["dict"] + [self.walk(x) for kv in obj.items() for x in kv]
        if isinstance(obj, (set, frozenset)):
            return ["set"] + sorted(self.walk(x) for x in obj)
        if isinstance(obj, type):
            self.modules.add(obj.__module__)
            return ["class", obj.__module__, obj.__qualname__]
        code = getattr(obj, "__code__", None)
        if code is not None:                  # a function, a lambda, a closure
            self.modules.add(getattr(obj, "__module__", None) or "")
            cells = []
            for cell in getattr(obj, "__closure__", None) or ():
                try:
                    cells.append(self.walk(cell.cell_contents))
                except ValueError:            # an empty cell
                    cells.append("empty")
            return ["function", getattr(obj, "__qualname__", ""), self._code(code),
                    self.walk(getattr(obj, "__defaults__", None)),
                    self.walk(getattr(obj, "__kwdefaults__", None))] + cells
        if hasattr(obj, "__func__") and hasattr(obj, "__self__"):   # a bound method
            return ["method", self.walk(obj.__func__), self.walk(obj.__self__)]
        if _installed(t.__module__):          # another package's object (a sympy frame):
            text = str(obj)                   # its text, not its internals (counters, caches)
            return ["foreign", t.__module__, t.__qualname__, "" if " at 0x" in text else text]
        self.modules.add(t.__module__)
        names = sorted(getattr(obj, "__dict__", {}))
        if not names:
            names = [k for c in t.__mro__ for k in getattr(c, "__slots__", ())]
        out = ["object", t.__module__, t.__qualname__]
        for k in names:
            if k.startswith("__") or "lock" in k.lower() or not hasattr(obj, k):
                continue
            v = getattr(obj, k)
            if isinstance(v, weakref.ref):
                continue
            out += [k, self.walk(v)]
        return out

    def _code(self, code) -> str:
        return _sha("code", code.co_code.hex(), code.co_names, code.co_varnames,
                    *[self._code(c) if hasattr(c, "co_code") else self.walk(c)
                      for c in code.co_consts])


def _sha(*parts) -> str:
    h = sha256()
    for p in parts:
        h.update(str(p).encode() + b"\x1f")
    return h.hexdigest()


def _cls(module, name):
    m = sys.modules.get(module)
    return getattr(m, name, None) if m is not None else None


def content_digest(automaton) -> str:
    """SHA-256 of the automaton's canonical text (``_Digest``) and of the sources of the
    modules outside the engine its classes and functions come from (a scenario's own modes
    and reset maps, a script's model)."""
    d = _Digest()
    parts = [d.walk(automaton)]
    project = tuple(p + "." for p in _PROJECT) + _PROJECT
    for f in _module_files(m for m in d.modules if m and not m.startswith(project)
                           and not _installed(m)):
        parts += ["source", Path(f).name, sha256(Path(f).read_bytes()).hexdigest()]
    return _sha(*parts)


def _installed(module: str) -> bool:
    """Whether ``module`` is the standard library's or an installed package's."""
    if module in _INSTALLED:
        return _INSTALLED[module]
    f = getattr(sys.modules.get(module), "__file__", None)
    _INSTALLED[module] = out = not f or "site-packages" in f or any(
        f.startswith(p + os.sep) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    return out


def key_of(scenario, embedding: str) -> dict:
    """The key of ``scenario``'s compiled modes on the embedding path ``embedding``."""
    if "env" not in _MEMO:
        _MEMO["env"] = shipped.environment(cpu=True)
    return {"model": scenario.name, "embedding": embedding,
            "content": content_digest(scenario.automaton), "sources": _project_digest(),
            **_MEMO["env"]}


def path_of(where: Path, file_key: dict) -> Path:
    """The file of ``file_key`` in the folder ``where``."""
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in file_key["model"])[:40]
    digest = sha256(json.dumps(file_key, sort_keys=True).encode()).hexdigest()[:24]
    return where / f"{name}-{file_key['embedding']}-{digest}{SUFFIX}"


# ------------------------------------------------------------------------------ load, save
class _Entry:
    """A library served from (and saved to) the file ``path``: ``kept``, how many compiled
    objects the library held when the file was written (with those that do not pickle,
    compiled again by every process: the file is not rewritten for them)."""

    __slots__ = ("library", "key", "path", "kept", "pickled")

    def __init__(self, library, file_key, path, kept, pickled):
        self.library, self.key, self.path, self.kept = library, file_key, path, kept
        self.pickled = pickled          # how many of them the file holds


def _size(library) -> int:
    """How many compiled objects ``library`` holds (its symbolic caches left out)."""
    n = sum(len(getattr(library, s)) for s in library.__slots__
            if s not in ("lock", "submitted") + SYMBOLIC and isinstance(getattr(library, s), dict))
    return n + (library.terms is not None)


def enabled() -> bool:
    """Whether this process's engine runner uses the cache: not when ``EMBED_CACHE`` is off,
    nor in an FMU's renamed packages (an FMU ships its own objects and writes nothing into
    the user's folders; nor at ``embed-fmu build``)."""
    return folder() is not None and not shipped.tag_of(__name__)


def library(scenario, embedding: str) -> ModeLibrary:
    """The library the simulators of ``scenario`` share on the path ``embedding``
    (``ModeLibrary.of``), loaded from the cache the first time when a file for its key is
    there, and written back when the automaton is dropped or the process ends."""
    aut = scenario.automaton
    k = (id(aut), embedding)
    with _LOCKS_LOCK:
        if k in _LIBRARIES or not enabled():
            return ModeLibrary.of(aut, embedding)
    try:
        file_key = key_of(scenario, embedding)
    except (OverflowError, RecursionError):
        return ModeLibrary.of(aut, embedding)
    path = path_of(folder(), file_key)
    got = None
    if path.exists():
        got, why = shipped.read(path, file_key)
        if got is not None and not (isinstance(got, dict) and
                                    isinstance(got.get("library"), ModeLibrary)):
            got, why = None, f"{path.name} holds no mode library"
        if got is None:
            warnings.warn(f"compiled-mode cache: {why}; compiling as without it (the file "
                          "will be overwritten)", CacheWarning, stacklevel=3)
        else:
            _touch(path)
    with _LOCKS_LOCK:
        if k in _LIBRARIES:                   # another thread was first
            return _LIBRARIES[k]
        lib = (ModeLibrary.adopt(aut, embedding, got["library"]) if got is not None
               else ModeLibrary.of(aut, embedding))
        _ENTRIES[k] = (_Entry(lib, file_key, path, got["live"], _size(lib)) if got is not None
                       else _Entry(lib, file_key, path, 0, 0))
        weakref.finalize(aut, _finish, k)
    return lib


def _touch(path):
    try:
        os.utime(path)        # least recently used goes first (``prune``)
    except OSError:
        pass


def _finish(k):
    entry = _ENTRIES.pop(k, None)
    if entry is not None:
        save(entry)


def save_all() -> int:
    """Write every library of this process that compiled something new; returns how many
    files were written."""
    with _LOCKS_LOCK:
        entries = list(_ENTRIES.values())
    return sum(save(e) for e in entries)


def save(entry) -> bool:
    """Write ``entry``'s library to its file if it holds compiled objects the file has not;
    a file that cannot be written is a ``CacheWarning``, never an error."""
    lib = entry.library
    if _size(lib) <= entry.kept:
        return False
    with lib.lock:                        # no simulator of it steps while it is copied
        live, copy = _size(lib), lib.picklable()
        pickled = _size(copy)
        if pickled <= entry.pickled:      # what is new does not pickle
            entry.kept = live
            return False
        try:
            import cloudpickle
            payload = cloudpickle.dumps({"library": copy, "live": live},
                                        protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - not cached; the run is unaffected
            warnings.warn(f"compiled-mode cache: {entry.path.name} not written "
                          f"({type(exc).__name__}: {exc})", CacheWarning, stacklevel=2)
            return False
    try:
        write(entry.path, entry.key, payload)
    except OSError as exc:
        warnings.warn(f"compiled-mode cache: {entry.path} not written ({exc})", CacheWarning,
                      stacklevel=2)
        return False
    entry.kept, entry.pickled = live, pickled
    prune(entry.path.parent)
    return True
