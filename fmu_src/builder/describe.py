"""What FMI tools show of an FMU (build time): units with their SI definitions, added to the
modelDescription.xml pythonfmu writes."""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

# SI base exponents (FMI 2.0 BaseUnit attributes) of the unit symbols the scenarios use
SYMBOLS = {"m": {"m": 1}, "s": {"s": 1}, "kg": {"kg": 1}, "rad": {"rad": 1}, "K": {"K": 1},
           "N": {"kg": 1, "m": 1, "s": -2}, "J": {"kg": 1, "m": 2, "s": -2},
           "W": {"kg": 1, "m": 2, "s": -3}, "1": {}}


def base_units(unit: str):
    """SI exponents of a unit written like ``kg.m2``, ``m/s2``, ``N.m.s``, ``rad/s``, ``1/m``;
    None if a symbol is unknown."""
    out = {}
    num, *den = unit.replace("*", ".").replace(" ", "").split("/")
    for sign, part in [(1, num)] + [(-1, d) for d in den]:
        for factor in filter(None, part.split(".")):
            m = re.fullmatch(r"([A-Za-z]+|1)\^?(-?\d+)?", factor)
            if not m or m.group(1) not in SYMBOLS:
                return None
            power = sign * int(m.group(2) or 1)
            for base, e in SYMBOLS[m.group(1)].items():
                out[base] = out.get(base, 0) + e * power
    return {k: v for k, v in out.items() if v}


def describe(xml: bytes) -> bytes:
    """modelDescription.xml with UnitDefinitions for every unit its Reals name (the status
    codes are spelled out in its Status type: ``fmu_src.runtime.status.type_definitions``)."""
    root = ET.fromstring(xml)
    units = sorted({r.get("unit") for r in root.iter("Real") if r.get("unit")})
    defs = ET.Element("UnitDefinitions")
    for u in units:
        unit = ET.SubElement(defs, "Unit", name=u)
        base = base_units(u)
        if base is not None:
            ET.SubElement(unit, "BaseUnit", {k: str(v) for k, v in base.items()})
    if units:
        after = root.find("CoSimulation")
        root.insert(list(root).index(after) + 1 if after is not None else 0, defs)
    ET.indent(root, "\t")
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")
