"""What an FMU's resources hold, for the tests that check it carries its own model only."""

import sys
import zipfile
from importlib.util import source_hash

from embed.base.bundle import unpack
from fmu_src.builder.bytecode import BEFORE_BUNDLE

OWN_PACKAGES = ("embed", "fmu_src", "scenarios")   # bundled (fmu_src/builder/bytecode.py)

# the slave's modules (fmu_src/runtime/): every model's FMU carries these and no other
SLAVE_MODULES = {"__init__.py", "runtime/__init__.py", "runtime/slave.py", "runtime/fmi2.py",
                 "runtime/status.py", "runtime/fmu_state.py", "runtime/derivatives.py",
                 "runtime/instances.py", "runtime/simulation.py", "runtime/variables.py",
                 "runtime/formed.py", "runtime/arrays.py", "runtime/fast_step.py",
                 "runtime/fast_stages.py", "runtime/fast_project.py", "runtime/gc_pause.py",
                 "runtime/bundle.py"}


def resources(fmu):
    """{package folder without its tag: its source files} of the FMU's resources/, after
    checking that every module of the FMU's own packages (embed, fmu_src, scenarios) has its
    code in the one bytecode bundle (``resources/modules<tag>.cpython-XY.bundle``,
    fmu_src/builder/bytecode.py) under its own path and source hash, and no ``__pycache__``
    file but for those imported before the bundle (``BEFORE_BUNDLE``); a module of another
    package (pythonfmu) has its checked-hash bytecode (``__pycache__/<module>.cpython-XY.pyc``)
    beside it; and nothing else is bundled or cached."""
    sources, pycs, data, bundles = {}, {}, {}, []
    with zipfile.ZipFile(fmu) as z:
        for name in z.namelist():
            parts = name.split("/")
            if parts[0] != "resources" or len(parts) < 2 or parts[1] == "__pycache__":
                continue
            if len(parts) == 2:
                if parts[1].endswith(f".{sys.implementation.cache_tag}.bundle"):
                    bundles.append(unpack(z.read(name)))
                continue
            top, rest = parts[1].rsplit("_", 1)[0], "/".join(parts[2:])
            if "__pycache__/" in rest:
                folder, pyc = rest.rsplit("__pycache__/", 1)
                pycs.setdefault(top, set()).add(folder + pyc.split(".", 1)[0] + ".py")
            else:
                sources.setdefault(top, set()).add(rest)
                if rest.endswith(".py"):
                    data["/".join(parts[1:])] = z.read(name)
    assert len(bundles) == 1, f"{fmu}: {len(bundles)} bytecode bundles"
    table = bundles[0]
    bundled = {rel: digest for is_package, rel, digest, code in table.values()}
    ours = {rel for rel in data if rel.split("/")[0].rsplit("_", 1)[0] in OWN_PACKAGES}
    assert set(bundled) == ours, set(bundled) ^ ours
    assert all(source_hash(data[rel]) == digest for rel, digest in bundled.items())
    for top, files in sources.items():
        modules = {f for f in files if f.endswith(".py")}
        before = {p.split("/", 1)[1] for p in BEFORE_BUNDLE if p.split("/", 1)[0] == top}
        assert pycs.get(top, set()) == (modules & before if top in OWN_PACKAGES else modules), top
    return sources
