"""What FMI tools show of each FMU: a unit on every Real, defined in UnitDefinitions with its SI
base units, a DefaultExperiment, a description and a version, and the status codes spelled out."""

import zipfile
from xml.etree import ElementTree as ET

import pytest

import build_fmu
import scenarios
from fmu_src.describe import base_units
from fmu_src.status import STATUS

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
