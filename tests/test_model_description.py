"""What FMI tools show of each FMU: a unit on every Real, defined in UnitDefinitions with its SI
base units, a DefaultExperiment, a description and a version, and the status codes spelled out;
and what each FMU carries: the engine, the slave and its own model only."""

import zipfile
from xml.etree import ElementTree as ET

import pytest

import build_fmu
import scenarios
from fmu_src.builder.describe import base_units
from fmu_src.runtime.status import STATUS

NAMES = list(scenarios.NAMES) + list(build_fmu.OTHERS)


@pytest.mark.parametrize("name", NAMES)
def test_model_description_shows_units_and_experiment(fmu_dir, name):
    with zipfile.ZipFile(fmu_dir / f"{name}.fmu") as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    defined = {u.get("name"): u for u in root.iter("Unit")}
    reals = list(root.iter("Real"))
    assert reals and all(r.get("unit") in defined for r in reals)
    assert all(u.find("BaseUnit") is not None for u in defined.values())
    exp = root.find("DefaultExperiment")
    assert float(exp.get("stopTime")) > 0 and float(exp.get("stepSize")) > 0
    assert root.get("version") and len(root.get("description")) > 20
    status = [v for v in root.iter("ScalarVariable") if v.get("name") == "status"]
    if name in scenarios.NAMES:
        for code, meaning in STATUS.items():
            assert f"{code} {meaning.replace(';', ',')}" in status[0].get("description")


def test_base_units():
    assert base_units("N.m") == {"kg": 1, "m": 2, "s": -2}
    assert base_units("m/s2") == {"m": 1, "s": -2}
    assert base_units("kg.m2") == {"kg": 1, "m": 2}
    assert base_units("N.s/m") == {"kg": 1, "s": -1}
    assert base_units("1") == {} and base_units("furlong") is None


@pytest.mark.parametrize("name", NAMES)
def test_fmu_carries_its_own_model_only(fmu_dir, name):
    """resources/: embed<tag>/ whole, fmu_src<tag>/ the slave's modules (pi_controller has
    its controller only), scenarios<tag>/ this
    scenario (a module, or a package folder with its parts) and nothing of the others."""
    with zipfile.ZipFile(fmu_dir / f"{name}.fmu") as z:
        files = [n.split("/", 2) for n in z.namelist() if n.startswith("resources/")]
    tree = {}
    for parts in files:
        if len(parts) == 3 and "_" in parts[1]:
            tree.setdefault(parts[1].rsplit("_", 1)[0], set()).add(parts[2])
    slave = {"__init__.py", "runtime/__init__.py", "runtime/slave.py", "runtime/fmi2.py",
             "runtime/status.py", "runtime/fmu_state.py"}
    if name in build_fmu.OTHERS:
        assert tree["fmu_src"] == {"__init__.py", "runtime/__init__.py",
                                   f"{build_fmu.OTHERS[name][0].replace('.', '/')}.py"}
        assert "scenarios" not in tree
        return
    assert tree["fmu_src"] == slave
    own = {f for f in tree["scenarios"] if f != "__init__.py"}
    assert own and all(f == f"{name}.py" or f.startswith(f"{name}/") for f in own), own
    assert "embed" in tree and "hybrid/simulator.py" in tree["embed"]
