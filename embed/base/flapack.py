"""scipy's LAPACK routines without importing scipy.linalg (issue 30: start-up).

``from scipy.linalg.lapack import dgeqp3`` runs scipy.linalg's ``__init__``, which imports
all of scipy.linalg (0.16-0.6 s of an FMU's start-up, measured by benchmarks/bench_startup.py
--importtime) to reach one routine of its f2py extension ``scipy.linalg._flapack``.  Here that
extension is loaded from its file alone, under its own name, so that the routines are the
very objects scipy.linalg.lapack exposes (the same machine code: the same bits; a later
``import scipy.linalg`` finds it in ``sys.modules`` and uses it).  numpy cannot stand in:
it has no pivoted QR, and the OpenBLAS it bundles is another build and version than scipy's,
so the pivots of near-ties (decided by dnrm2's roundoff) would not be provably the same.
Where the file is not found (another scipy layout), scipy.linalg.lapack is imported as before.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

NAME = "scipy.linalg._flapack"
_MODULE = []


def _flapack():
    """The extension module ``scipy.linalg._flapack``, loaded once."""
    if not _MODULE:
        mod = sys.modules.get(NAME)
        if mod is None:
            mod = _load_alone()
        if mod is None:
            import scipy.linalg.lapack  # noqa: F401 - another layout: the package's own import
            mod = sys.modules[NAME]
        _MODULE.append(mod)
    return _MODULE[0]


def _load_alone():
    """The extension loaded from its file (numpy imported, scipy's packages not), or None."""
    spec = importlib.util.find_spec("scipy")       # a top-level spec: imports nothing
    if spec is None or not spec.origin:
        return None
    folder = os.path.join(os.path.dirname(spec.origin), "linalg")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, "_flapack" + suffix)
        if os.path.isfile(path):
            import numpy  # noqa: F401 - the extension's C API table comes from numpy
            loader = importlib.machinery.ExtensionFileLoader(NAME, path)
            mod = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(NAME, path, loader=loader))
            loader.exec_module(mod)
            sys.modules.setdefault(NAME, mod)
            return sys.modules[NAME]
    return None


def routine(name: str):
    """scipy.linalg.lapack's routine ``name`` (e.g. "dgeqp3"), the same object."""
    return getattr(_flapack(), name)
