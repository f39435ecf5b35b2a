"""The FMU's modules imported from one file of bytecode (issue 30, start-up).

An FMU imports about 75 modules of its own at fmi2Instantiate.  Through the path finder each
costs a search of its package folder, a read of its source and of its checked-hash bytecode
(``fmu_src.builder.bytecode``): 10-15 ms of a 0.09 s start (measured: the same instantiate
with the modules served from one file).  ``embed-fmu build`` writes every module of the
FMU's own packages into ``resources/modules<tag>.<cache tag>.bundle`` (``bytecode.bundle``,
``pack``): an index, {module name: (is package, path under resources, source hash, where
its marshalled code is in the file)}, then the codes; a start reads the index, and each
module's code when it is imported (reading and unmarshalling the whole 1.5 MB took 3 ms of
every start: issue 30).
``install`` puts a finder for those names first on ``sys.meta_path`` (the slave's entry
through ``fmu_src.runtime.bundle``, a background worker at its start: ``embed.background.worker``); it finds a module
only where its source file is in this extraction and serves it through the ordinary source
loader, whose ``get_code`` returns the bundled code when the source's hash (PEP 552's, as the
checked-hash bytecode) is the bundled one and otherwise compiles the source as without the
bundle: a module edited in the extracted FMU never runs from stale code.  The file is named
by the interpreter's cache tag, so another Python finds none and imports as before.
The bundled modules travel without ``__pycache__`` files (fewer files for a master to unzip
at every start), but for the few imported before the finder is in place
(``fmu_src.builder.bytecode.BEFORE_BUNDLE``: this module, its packages, the slave's and the
worker's entry modules).
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import source_hash, spec_from_file_location

SUFFIX = ".bundle"
# {absolute path: PEP 552 source hash} of each source a bundle's loader read to import it:
# ``embed.base.shipped.sources_digest`` takes these instead of reading and hashing those
# files again (the code that runs is that of these bytes)
SOURCE_HASHES = {}


def file_name(tag: str) -> str:
    """The bundle's name in resources/ for the packages of build ``tag`` (``_ab12``)."""
    return f"modules{tag}.{sys.implementation.cache_tag}{SUFFIX}"


_HEAD = 8      # bytes of the index's length (little-endian), before the index


def pack(table: dict) -> bytes:
    """The bundle file of ``table`` {module: (is package, path, source hash, marshalled
    code)}: the index's length, the index {module: (is package, path, source hash, offset,
    size)}, the codes (offsets from the end of the index)."""
    index, codes, at = {}, [], 0
    for name, (is_package, rel, digest, code) in table.items():
        index[name] = (is_package, rel, digest, at, len(code))
        codes.append(code)
        at += len(code)
    head = marshal.dumps(index)
    return len(head).to_bytes(_HEAD, "little") + head + b"".join(codes)


def unpack(data: bytes) -> dict:
    """The table ``pack`` was given, from the bundle file's bytes ``data``."""
    n = int.from_bytes(data[:_HEAD], "little")
    base = _HEAD + n
    return {k: (p, r, d, data[base + o:base + o + size])
            for k, (p, r, d, o, size) in marshal.loads(data[_HEAD:base]).items()}


def _read(path, at, size) -> bytes:
    """``size`` bytes of file ``path`` from offset ``at``."""
    if hasattr(os, "pread"):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.pread(fd, size, at)
        finally:
            os.close(fd)
    with open(path, "rb") as f:
        f.seek(at)
        return f.read(size)


class _Loader(SourceFileLoader):
    """The source loader, with the bundled code of a source whose hash is the bundled one."""

    def __init__(self, name, path, digest, where):
        super().__init__(name, path)
        self._bundled = (digest, where)        # (bundle file, offset, size) of the code

    def get_code(self, fullname):
        digest, (bundle, at, size) = self._bundled
        try:
            source = self.get_data(self.path)
        except OSError:
            source = None
        found = None if source is None else source_hash(source)
        if found is not None:
            SOURCE_HASHES[self.path] = found
        if found == digest:
            try:
                code = marshal.loads(_read(bundle, at, size))
            except (OSError, EOFError, ValueError, TypeError):
                return super().get_code(fullname)        # a damaged bundle: the source
            _imp._fix_co_filename(code, self.path)
            return code
        return super().get_code(fullname)


class BundleFinder:
    """Finds the modules of one bundle in the extraction ``root`` (resources/)."""

    def __init__(self, name: str, root: str, table: dict, base: int):
        self.name, self.root, self.table, self.base = name, root, table, base

    def find_spec(self, fullname, path=None, target=None):
        entry = self.table.get(fullname)
        if entry is None:
            return None
        is_package, rel, digest, at, size = entry
        where = os.path.join(self.root, rel)
        if not os.path.isfile(where):        # another extraction's layout: the path finder
            return None
        code = (os.path.join(self.root, self.name), self.base + at, size)
        return spec_from_file_location(
            fullname, where, loader=_Loader(fullname, where, digest, code),
            submodule_search_locations=[os.path.dirname(where)] if is_package else None)

    def invalidate_caches(self):
        pass


def install(tag: str) -> bool:
    """The finder of build ``tag``'s bundle first on ``sys.meta_path`` (pointed at this
    extraction, resources/ holding this package, if it was installed by an earlier one);
    False where there is no bundle for this interpreter or it does not load."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    name = file_name(tag)
    for finder in sys.meta_path:
        if isinstance(getattr(finder, "name", None), str) and finder.name == name and \
                hasattr(finder, "table"):
            finder.root = root
            return True
    try:
        with open(os.path.join(root, name), "rb") as f:
            n = int.from_bytes(f.read(_HEAD), "little")
            table = marshal.loads(f.read(n))
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if not isinstance(table, dict):
        return False
    sys.meta_path.insert(0, BundleFinder(name, root, table, _HEAD + n))
    return True
