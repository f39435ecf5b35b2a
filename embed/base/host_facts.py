"""What the shipped and cached files are keyed by, read cheaply (issue 30, start-up).

``embed.base.shipped`` keys a formed file by the versions of the packages its objects come
from and, for object code, by LLVM and the CPU.  Asking ``importlib.metadata`` for six
versions and ``llvmlite.binding`` for the CPU cost about 0.1 s of a 0.5 s FMU start (its
import pulls in email, zipfile, csv; the binding loads the 180 MB LLVM library).  The same
facts are read here from what is already on disk, in about a millisecond:

- a package's version: the name of the ``NAME-VERSION.dist-info`` folder its installer wrote
  beside it (PEP 376/427: one per installed distribution, renamed by every upgrade), found
  in the ``sys.path`` folder that holds the package, so nothing is imported or looked up
  through the import system;  ``importlib.metadata`` only
  where there is no such folder or more than one (an editable or unusual install);
- LLVM: llvmlite's version with the size of the LLVM library it loads (a wheel links one
  LLVM release statically; another build of the same version is another file);
- the CPU: vendor, family, model, stepping, name and the feature flags the kernel reports
  (``/proc/cpuinfo``'s first processor, the flags by their SHA-256), the CPUID facts LLVM's
  host detection reads; where there is no /proc/cpuinfo, LLVM's own host CPU name and
  features (``llvmlite.binding``).

Build and run call the same functions, so a file keyed on one machine is found on it and
missed on another: another package version, LLVM or CPU is another key.
"""

from __future__ import annotations

import functools
import os
import sys
from .sha import sha256

CPU_FIELDS = ("vendor_id", "cpu family", "model", "stepping", "model name")


@functools.lru_cache(maxsize=None)
def _listing(folder: str) -> tuple:
    try:
        return tuple(os.listdir(folder))
    except OSError:
        return ()


def _folder(package: str):
    """The folder holding ``package`` (its site-packages): where the imported module came
    from, else the first ``sys.path`` entry holding it as a folder or a module file (the
    path finder's order; no finder is asked, nothing imported), else None."""
    mod = sys.modules.get(package)
    spec = getattr(mod, "__spec__", None)
    if spec is not None:
        locations = list(spec.submodule_search_locations or ())
        where = locations[0] if locations else spec.origin
        return os.path.dirname(where) if where else None
    suffixes = _suffixes()
    for entry in sys.path:
        folder = entry or "."
        base = os.path.join(folder, package)
        # what the path finder looks for, by stat: listing a large folder (the current one
        # on sys.path, /tmp: thousands of entries) took 4-7 ms of an FMU's start
        if os.path.isdir(base) or any(os.path.isfile(base + x) for x in suffixes):
            return folder
    return None


@functools.lru_cache(maxsize=None)
def _suffixes() -> tuple:
    """The file suffixes of a top-level module the path finder tries (extension modules,
    sources, bytecode)."""
    from importlib.machinery import all_suffixes
    return tuple(all_suffixes())


@functools.lru_cache(maxsize=None)
def _dist_infos(folder: str) -> tuple:
    """The ``*.dist-info`` folders in ``folder``."""
    return tuple(n for n in _listing(folder) if n.endswith(".dist-info"))


@functools.lru_cache(maxsize=None)
def version(package: str):
    """The installed version of ``package`` (a top-level import name equal to its
    distribution's), or None if it is not installed."""
    where = _folder(package)
    prefix = package.lower().replace("-", "_") + "-"
    found = [n for n in _dist_infos(where) if n.lower().startswith(prefix)] \
        if where is not None else []
    if len(found) == 1:
        return found[0][len(prefix):-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as metadata_version
    try:
        return metadata_version(package)
    except PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=None)
def llvm() -> str:
    """LLVM as llvmlite ships it: its version and the size of its LLVM library."""
    where = _folder("llvmlite")
    if where is None:
        return "none"
    binding = os.path.join(where, "llvmlite", "binding")
    sizes = sorted(f"{n}:{os.path.getsize(os.path.join(binding, n))}"
                   for n in _listing(binding) if n.startswith("libllvmlite"))
    return " ".join([f"llvmlite {version('llvmlite')}"] + sizes)


@functools.lru_cache(maxsize=None)
def cpu() -> dict:
    """{"cpu": the first processor's identity, "cpu_features": SHA-256 of its flags}."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            first = f.read().split("\n\n")[0]
    except OSError:
        first = ""
    fields = {}
    for line in first.splitlines():
        k, sep, v = line.partition(":")
        if sep:
            fields.setdefault(k.strip(), v.strip())
    flags = fields.get("flags") or fields.get("Features")
    if flags:
        return {"cpu": " / ".join(fields.get(k, "?") for k in CPU_FIELDS),
                "cpu_features": sha256(" ".join(sorted(flags.split())).encode())
                .hexdigest()[:32]}
    import llvmlite.binding as binding          # no /proc/cpuinfo: LLVM's own detection
    return {"cpu": binding.get_host_cpu_name(),
            "cpu_features": binding.get_host_cpu_features().flatten()}
