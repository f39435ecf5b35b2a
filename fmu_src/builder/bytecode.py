"""The FMU's Python modules shipped as bytecode too (build time; issue 30, start-up).

A master extracts an FMU into a fresh folder (fmpy's ``simulate_fmu``, fmusim, a study's
worker), so the interpreter that runs it finds no ``__pycache__`` and compiles every module
of the engine from source at each start: about 80 modules, 0.2-0.4 s of disk_ramp's 0.5 s
from fmi2Instantiate (``compile`` in a profile of a fresh extraction).  ``pyc_entries`` makes,
for every ``.py`` file of the FMU, the ``__pycache__`` file this interpreter would write (PEP
3147 naming: its cache tag, so another Python version ignores them and compiles as before)
in PEP 552's *checked-hash* form: the import system hashes the source it finds and uses the
bytecode only if the hash is the source's, so a module edited in the extracted FMU is
compiled from its new source, never run from stale bytecode.  A zip's modification times
do not survive extraction, which is why timestamp pycs would never be used.
"""

from __future__ import annotations

import importlib.util
import marshal
import re
import sys
from importlib import _bootstrap_external

from embed.base.bundle import pack, unpack


def pyc_name(path: str) -> str:
    """The ``__pycache__`` path of the module file ``path`` (a zip member's name) for this
    interpreter."""
    head, _, tail = path.rpartition("/")
    stem = tail[:-3]
    cached = f"__pycache__/{stem}.{sys.implementation.cache_tag}.pyc"
    return f"{head}/{cached}" if head else cached


def pyc_of(path: str, source: bytes) -> bytes:
    """The checked-hash bytecode file (PEP 552) of module ``source`` (named ``path``, which
    the import system replaces by the extracted file's own path when it loads it)."""
    code = compile(source, path, "exec", dont_inherit=True)
    return bytes(_bootstrap_external._code_to_hash_pyc(
        code, importlib.util.source_hash(source), checked=True))


def pyc_entries(members: dict) -> dict:
    """{pyc member name: bytes} for the ``.py`` members of ``members`` ({name: bytes}) under
    resources/; a module that does not compile (never the FMU's own) gets none and is
    compiled, and reported, where it is imported."""
    out = {}
    for name, data in members.items():
        if not (name.startswith("resources/") and name.endswith(".py")):
            continue
        try:
            out[pyc_name(name)] = pyc_of(name, data)
        except (SyntaxError, ValueError):
            continue
    return out


PYTHONFMU_INIT = "resources/pythonfmu/__init__.py"
_EAGER_BUILDER = b"from .builder import FmuBuilder\n"
_LAZY_BUILDER = b'''

def __getattr__(name):
    """FmuBuilder imported when asked for (PEP 562): building needs it, running never
    (rewritten by the embed project's fmu_src/builder/bytecode.py)."""
    if name == "FmuBuilder":
        from .builder import FmuBuilder
        return FmuBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''


def lazy_pythonfmu_init(source: bytes):
    """The FMU's copy of pythonfmu's ``__init__.py`` without its eager ``from .builder import
    FmuBuilder``, which imports argparse, logging, xml.dom.minidom, inspect, tempfile, zipfile
    (25-40 ms of every start, the floor FMU's too) to build FMUs, never to run one:
    ``pythonfmu.FmuBuilder`` is imported by a module ``__getattr__`` when asked for, so every
    name stays.  None when the file is not the one expected (another pythonfmu): left as is."""
    if source.count(_EAGER_BUILDER) != 1:
        return None
    return source.replace(_EAGER_BUILDER, b"") + _LAZY_BUILDER


_BUNDLE_MODULE = re.compile(r"^resources/fmu_src(_[0-9a-f]+)/runtime/bundle\.py$")


def bundle(members: dict):
    """(member name, bytes) of the one file holding the bytecode of every module of the
    FMU's own packages (``fmu_src.runtime.bundle``, which reads it), or None when the FMU
    ships no ``runtime/bundle.py``.  Each module: (is package, path under resources/, its
    source's PEP 552 hash, its marshalled code: unmarshalled when imported, the symbolic
    modules never at a start), by module name; modules that do not compile are left to the
    path finder."""
    tags = [m.group(1) for m in map(_BUNDLE_MODULE.match, members) if m]
    if len(tags) != 1:
        return None
    tag = tags[0]
    packages = tuple(f"resources/{p}{tag}/" for p in ("embed", "fmu_src", "scenarios"))
    table = {}
    for name, data in sorted(members.items()):
        if not (name.startswith(packages) and name.endswith(".py")):
            continue
        rel = name[len("resources/"):]
        parts = rel[:-3].split("/")
        is_package = parts[-1] == "__init__"
        try:
            code = compile(data, rel, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        table[".".join(parts[:-1] if is_package else parts)] = (
            is_package, rel, importlib.util.source_hash(data), marshal.dumps(code))
    return f"resources/modules{tag}.{sys.implementation.cache_tag}.bundle", pack(table)


# imported before the bundle's finder is in place (the slave's entry module: fmu_src's
# runtime.bundle; a worker's: ``python -m embed.background.worker``): these keep their
# ``__pycache__`` files too (paths under the package folder, whatever its tag)
BEFORE_BUNDLE = ("fmu_src/__init__.py", "fmu_src/runtime/__init__.py",
                 "fmu_src/runtime/bundle.py", "embed/__init__.py", "embed/base/__init__.py",
                 "embed/base/bundle.py", "embed/background/__init__.py",
                 "embed/background/worker.py")


def without_pyc(data: bytes) -> set:
    """The module files (paths under resources/) of the bundle ``data`` that travel without a
    ``__pycache__`` file: the bundle serves them (one without an entry, or edited after the
    build, is compiled from its source as an unbundled module is); those of ``BEFORE_BUNDLE``
    keep theirs."""
    out = set()
    for entry in unpack(data).values():
        top, _, rest = entry[1].partition("/")
        if f"{top.rsplit('_', 1)[0]}/{rest}" not in BEFORE_BUNDLE:
            out.add(entry[1])
    return out
