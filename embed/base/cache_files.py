"""The files of the user's cache folder of compiled modes (issue 30; ``embed.modes.cache``).

``folder``: ``$EMBED_CACHE``, else ``$XDG_CACHE_HOME/embed-fmu``, else ``~/.cache/embed-fmu``;
``EMBED_CACHE=off`` (or 0, no, false, none) turns the cache off.  A file is ``shipped``'s
format (a JSON header with its key, the SHA-256 and size of the pickle, then the pickle),
written to a temporary file of the folder and renamed into place (``write``).  The folder is
kept under ``$EMBED_CACHE_MAX_MB`` (default 1000) MB, least recently used first (``prune``);
``info`` and ``clear`` serve ``embed-fmu cache``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import shipped
from .sha import sha256

ENV, MAX_ENV = "EMBED_CACHE", "EMBED_CACHE_MAX_MB"
OFF = ("off", "0", "no", "false", "none")
MAX_MB = 1000.0
SUFFIX = ".modes"


class CacheWarning(UserWarning):
    """A cache file refused (another key, corrupt, truncated) or not written."""


def folder():
    """The cache folder (a Path), or None when ``EMBED_CACHE`` turns the cache off."""
    given = os.environ.get(ENV, "").strip()
    if given.lower() in OFF and given:
        return None
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "embed-fmu"


def write(path: Path, file_key: dict, payload: bytes) -> None:
    """The pickle ``payload`` behind ``shipped``'s header, written to a temporary file of the
    folder and renamed into place (atomic: readers and other writers see whole files)."""
    header = {"key": file_key, "sha256": sha256(payload).hexdigest(),
              "size": len(payload)}
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile      # (with shutil, random: imported where a file is written)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(shipped.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n")
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _files(where: Path) -> list:
    return sorted(where.glob("*" + SUFFIX)) if where and where.is_dir() else []


def prune(where: Path, max_bytes=None) -> list:
    """Remove the least recently used files of ``where`` until it holds at most
    ``max_bytes`` (default ``$EMBED_CACHE_MAX_MB`` MB), and temporary files left by
    processes that died more than an hour ago; returns the files removed."""
    if max_bytes is None:
        max_bytes = float(os.environ.get(MAX_ENV, MAX_MB)) * 1e6
    gone, stats = [], []
    for f in _files(where):
        try:
            stats.append((f.stat().st_mtime, f.stat().st_size, f))
        except OSError:
            continue
    total = sum(s for _, s, _ in stats)
    for _, size, f in sorted(stats):
        if total <= max_bytes:
            break
        try:
            f.unlink()
            gone.append(f)
            total -= size
        except OSError:
            pass
    for f in where.glob("*.tmp"):
        try:
            if f.stat().st_mtime < time.time() - 3600:
                f.unlink()
                gone.append(f)
        except OSError:
            pass
    return gone


def info(where=None) -> dict:
    """{"folder", "files": [(name, model, embedding, bytes)], "bytes", "enabled"}."""
    where = folder() if where is None else Path(where)
    files = []
    for f in _files(where):
        model = embedding = "?"
        try:
            with open(f, "rb") as fh:
                head = fh.read(len(shipped.MAGIC))
                if head == shipped.MAGIC:
                    k = json.loads(fh.readline()).get("key", {})
                    model = k.get("model") or k.get("object", "?")
                    embedding = k.get("embedding", "llvm helper")
            files.append((f.name, model, embedding, f.stat().st_size))
        except (OSError, ValueError):
            continue
    return {"folder": where, "enabled": where is not None, "files": files,
            "bytes": sum(x[3] for x in files)}


# the C loader's kept interpreter queries (fmu_src/runtime/loader/python_query.c), written
# through "<name>.<pid>.tmp" files as this module's
QUERIES = "python-*.query"


def clear(where=None) -> int:
    """Remove every cache file, kept interpreter query and temporary file of the folder;
    returns how many."""
    where = folder() if where is None else Path(where)
    n = 0
    for f in (_files(where) + list(where.glob(QUERIES)) + list(where.glob("*.tmp"))) \
            if where and where.is_dir() else []:
        try:
            f.unlink()
            n += 1
        except OSError:
            pass
    return n


_ENV = {}


def object_code(what: str, source: bytes, make):
    """The object code ``make()`` returns for ``source`` (LLVM IR and how it is compiled, as
    bytes), read from the cache folder when a whole file for it, this LLVM and this CPU is
    there (``shipped.read``: refused by key or SHA-256 before use), else made and written.
    The engine's LLVM helpers, compiled once per process (``embed.codegen.native``)."""
    where = folder()
    if where is None or shipped.tag_of(__name__):     # off, or an FMU's own code
        return make()
    if "env" not in _ENV:
        _ENV["env"] = shipped.environment(cpu=True)
    key = {"object": what, "source": sha256(source).hexdigest(), **_ENV["env"]}
    path = where / f"llvm-{what}-{sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]}{SUFFIX}"
    if path.exists():
        got, why = shipped.read(path, key)
        if isinstance(got, bytes):
            return got
        import warnings
        warnings.warn(f"compiled-mode cache: {why or path.name + ' holds no object code'}; "
                      "compiling as without it", CacheWarning, stacklevel=2)
    obj = make()
    try:
        import pickle
        write(path, key, pickle.dumps(bytes(obj), protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass                     # not cached: this process compiled it, as without the cache
    return obj
