"""The FMU's binary (build time): the C loader fmu_src/runtime/loader/*.c compiled with the
machine's C compiler, and put into the FMU in front of pythonfmu's binary."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADER = ROOT / "fmu_src" / "runtime" / "loader"         # fmi2_loader.c and the files it needs


def _c_string(text: str) -> str:
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def compile_loader(dest: Path, guid: str, python: str = "", time_vr: int = 0xFFFFFFFF) -> Path:
    """Compile the FMU's binary (fmu_src/runtime/loader/*.c) with the machine's C compiler;
    it accepts `guid` only, and loads `python` when EMBED_PYTHON is not set (default: python3);
    `time_vr`: the value reference of FMI 3.0's independent variable time."""
    import fmpy

    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise SystemExit("building an FMU needs a C compiler (gcc or cc) for the FMU's binary")
    headers = Path(fmpy.__file__).parent / "c-code"
    # -Bsymbolic: the fmi3 functions call this binary's own fmi2 ones, never another FMU's;
    # -ffp-contract=off: fast_step.c's arithmetic is numpy's, operation by operation (no FMA)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-ffp-contract=off", "-fvisibility=hidden",
                    "-Wno-format-truncation",
                    "-Wl,-Bsymbolic",
                    "-I", str(headers),
                    "-DEMBED_BUILD_PYTHON=" + _c_string(python), "-DEMBED_GUID=" + _c_string(guid),
                    f"-DEMBED_TIME_VR={int(time_vr)}u",
                    "-o", str(dest), *sorted(str(f) for f in LOADER.glob("*.c")), "-ldl", "-lpthread",
                    "-lm"],
                   check=True)
    return dest


def install_loader(fmu: Path, identifier: str, loader: Path, replace=None) -> None:
    """Put the loader in as binaries/linux64/<identifier>.so and pythonfmu's binary beside it
    as <identifier>_pythonfmu.so (the loader dlopens it); `replace` maps names to new bytes.
    pythonfmu's stock binaries of other platforms are dropped: the loader is Linux-only, and
    an FMU must not claim a platform it was never run on.  The FMU's own modules travel in
    one file of bytecode (``bytecode.bundle``) and without ``__pycache__`` files (those
    doubled the files a C master unzips at every start), but for the few imported before the
    bundle (``bytecode.BEFORE_BUNDLE``); pythonfmu's modules with their checked-hash ones
    (``bytecode.pyc_entries``; any other ``__pycache__`` is dropped), and pythonfmu's
    ``__init__`` imports its builder lazily (``bytecode.lazy_pythonfmu_init``)."""
    from fmu_src.builder.bytecode import (PYTHONFMU_INIT, bundle, lazy_pythonfmu_init,
                                          pyc_entries, without_pyc)
    replace = dict(replace or {})
    sources = {}
    ours = f"binaries/linux64/{identifier}.so"
    tmp = fmu.with_suffix(".tmp")
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.startswith("binaries/") and \
                    not item.filename.startswith("binaries/linux64/") or \
                    "/__pycache__/" in item.filename:
                continue
            if item.filename == PYTHONFMU_INIT and PYTHONFMU_INIT not in replace:
                lazy = lazy_pythonfmu_init(data)
                if lazy is not None:
                    replace[PYTHONFMU_INIT] = lazy
            if item.filename == ours:
                dst.writestr(f"binaries/linux64/{identifier}_pythonfmu.so", data)
            elif item.filename in replace:
                dst.writestr(item, replace[item.filename])
            else:
                dst.writestr(item, data)
            sources[item.filename] = replace.get(item.filename, data)
        one_file = bundle(sources)
        bundled = set()
        if one_file is not None:     # stored: inflating its 1.5 MB took 7 ms of each start
            dst.writestr(*one_file, compress_type=zipfile.ZIP_STORED)     # in a C master
            bundled = {f"resources/{rel}" for rel in without_pyc(one_file[1])}
        for name, pyc in pyc_entries({k: v for k, v in sources.items()
                                      if k not in bundled}).items():
            dst.writestr(name, pyc)
        dst.write(loader, ours)
    tmp.replace(fmu)
