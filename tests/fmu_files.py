"""What an FMU's resources hold, for the tests that check it carries its own model only."""

import zipfile

# the slave's modules (fmu_src/runtime/): every model's FMU carries these and no other
SLAVE_MODULES = {"__init__.py", "runtime/__init__.py", "runtime/slave.py", "runtime/fmi2.py",
                 "runtime/status.py", "runtime/fmu_state.py", "runtime/derivatives.py",
                 "runtime/instances.py", "runtime/simulation.py", "runtime/variables.py",
                 "runtime/formed.py", "runtime/arrays.py", "runtime/fast_step.py",
                 "runtime/gc_pause.py", "runtime/bundle.py"}


def resources(fmu):
    """{package folder without its tag: its source files} of the FMU's resources/, after
    checking that beside each module travels its own bytecode
    (``__pycache__/<module>.cpython-XY.pyc``, fmu_src/builder/bytecode.py) and no other."""
    sources, pycs = {}, {}
    with zipfile.ZipFile(fmu) as z:
        for name in z.namelist():
            parts = name.split("/")
            if parts[0] != "resources" or len(parts) <= 2 or parts[1] == "__pycache__":
                continue
            top, rest = parts[1].rsplit("_", 1)[0], "/".join(parts[2:])
            if "__pycache__/" in rest:
                folder, pyc = rest.rsplit("__pycache__/", 1)
                pycs.setdefault(top, set()).add(folder + pyc.split(".", 1)[0] + ".py")
            else:
                sources.setdefault(top, set()).add(rest)
    for top, files in sources.items():
        assert pycs.get(top, set()) == {f for f in files if f.endswith(".py")}, top
    return sources
