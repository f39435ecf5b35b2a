"""The FMU's modules from its one file of bytecode (``embed.base.bundle``), installed first
thing by the FMU's entry module (fmu_src/builder/build.py) at fmi2Instantiate."""

from __future__ import annotations

from embed.base.bundle import install as _install


def install() -> bool:
    """This build's bundle installed (``embed.base.bundle.install``; the build's tag is the
    suffix of this package's name, ``fmu_src_ab12``)."""
    return _install(__name__.split(".")[0][len("fmu_src"):])
