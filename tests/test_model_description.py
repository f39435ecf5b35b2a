"""What FMI tools show of each FMU: a unit on every Real, defined in UnitDefinitions with its SI
base units, a DefaultExperiment, a description and a version, and the status codes spelled out;
and what each FMU carries: the engine, the slave and its own model only."""

import zipfile
from xml.etree import ElementTree as ET

import pytest

import build_fmu
import scenarios
from fmu_files import SLAVE_MODULES, resources
from fmu_src.builder.describe import base_units
from fmu_src.runtime.status import NAMES as STATUS_NAMES, STATUS

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
    if name in scenarios.NAMES:
        status = next(v for v in root.iter("ScalarVariable") if v.get("name") == "status")
        assert len(status.get("description")) < 100          # one line; the codes: type Status
        assert status.find("Integer") is not None             # read by every master (libcosim)
        items = enumeration(root, "Status")
        assert {int(v): text for _, v, text in items} == STATUS
        assert [n for n, _, _ in items] == [STATUS_NAMES[int(v)] for _, v, _ in items]


def enumeration(root, name):
    """[(item name, value, description)] of the Enumeration type ``name``."""
    simple = next(t for t in root.iter("SimpleType") if t.get("name") == name)
    return [(i.get("name"), i.get("value"), i.get("description"))
            for i in simple.find("Enumeration").iter("Item")]


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_mode_is_an_enumeration_of_the_mode_names(fmu_dir, name):
    """``mode`` is declared with the Enumeration type Mode, whose items are the scenario's
    modes by the number the output reports (issue 29: no names parsed from a description);
    fmpy reads them (``simulate.mode_names``), and the FMU still validates; the formulation's
    integer option is an Integer and the soft constraint's gains have force units."""
    from fmpy import read_model_description
    from fmpy.validation import validate_fmu

    from fmu_src.host.simulate import mode_names
    path = str(fmu_dir / f"{name}.fmu")
    sc = scenarios.load(name).build()
    md = read_model_description(path)
    assert mode_names(md) == sc.mode_names() and len(sc.mode_names()) >= 1
    mode = next(v for v in md.modelVariables if v.name == "mode")
    assert mode.type == "Enumeration" and int(mode.start) in sc.mode_names()
    alias = next(v for v in md.modelVariables if v.name == "mode_number")   # for libcosim
    assert (alias.type, alias.valueReference, alias.causality) == ("Integer",
                                                                   mode.valueReference, "output")
    by = {v.name: v for v in md.modelVariables}
    assert by["projection_iterations"].type == "Integer"
    assert (by["soft_stiffness"].unit, by["soft_damping"].unit) == ("N/m", "N.s/m")
    assert validate_fmu(path) == []


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
    scenario (a module, or a package folder with its parts) and nothing of the others; beside
    each module its bytecode (``__pycache__/<module>.cpython-XY.pyc``) and no other."""
    tree = resources(fmu_dir / f"{name}.fmu")
    if name in build_fmu.OTHERS:
        assert tree["fmu_src"] == {"__init__.py", "runtime/__init__.py", "runtime/gc_pause.py",
                                   "runtime/bundle.py",
                                   f"{build_fmu.OTHERS[name][0].replace('.', '/')}.py"}
        assert "scenarios" not in tree
        return
    assert tree["fmu_src"] == SLAVE_MODULES
    own = {f for f in tree["scenarios"] if f != "__init__.py"}
    assert own and all(f == f"{name}.py" or f.startswith(f"{name}/") for f in own), own
    assert "embed" in tree and "hybrid/simulator.py" in tree["embed"]
