"""modelDescription.xml of the FMI 3.0 co-simulation FMU (build time), written from the FMI 2.0
one (pythonfmu's, with ``describe``'s units and status codes): the same variables, value
references, units and start values, in FMI 3.0's schema (fmi3ModelDescription.xsd,
fmi3Variable.xsd, fmi3ModelStructure.xsd).

What FMI 3.0 adds is declared as the loader (fmu_src/runtime/loader/fmi3_loader.c) provides it:
``hasEventMode`` and ``mightReturnEarlyFromDoStep`` (early return at each located event), FMU
state get/set/serialize, no intermediate update, directional derivatives of the outputs w.r.t.
the inputs (fmu_src/runtime/derivatives.py) with each output's ``dependencies`` as the FMI 2.0
description declares them, in value references, and answered by fmi3GetVariableDependencies
(``providesPerElementDependencies``: every variable concerned is a scalar); the extension's
arrays, which FMI 2.0 lacks (fmu_src/runtime/arrays.py: disk_fence's fence_points[32][2]).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

from fmu_src.runtime import arrays

# an FMI 2.0 Enumeration (``mode``, of the Mode type) is reported as the Int32 it is read as:
# the loader forwards Int32 calls, and the mode numbers' names are in the FMI 2.0 FMU
TYPES = {"Real": "Float64", "Integer": "Int32", "Boolean": "Boolean", "String": "String",
         "Enumeration": "Int32"}
ALIASES = ("mode_number",)     # the FMI 2.0 FMU's Integer alias of ``mode``: one variable here

# the FMI 2.0 attributes FMI 3.0 keeps on the model and on each variable
MODEL_ATTRS = ("modelName", "description", "author", "version", "copyright", "license",
               "generationTool", "generationDateAndTime", "variableNamingConvention")
VARIABLE_ATTRS = ("name", "valueReference", "description", "causality", "variability",
                  "initial", "canHandleMultipleSetPerTimeInstant")
TYPE_ATTRS = ("declaredType", "quantity", "unit", "displayUnit", "relativeQuantity", "min",
              "max", "nominal", "unbounded", "derivative", "reinit")


def co_simulation(identifier: str) -> dict:
    """The CoSimulation element's attributes (FMI 3.0, section 4.3.1)."""
    return {"modelIdentifier": identifier, "needsExecutionTool": "true",
            "canBeInstantiatedOnlyOncePerProcess": "false",
            "canGetAndSetFMUState": "true", "canSerializeFMUState": "true",
            "providesDirectionalDerivative": "true",
            "providesPerElementDependencies": "true",
            "canHandleVariableCommunicationStepSize": "true",
            "providesIntermediateUpdate": "false",
            "mightReturnEarlyFromDoStep": "true",
            "canReturnEarlyAfterIntermediateUpdate": "false",
            "hasEventMode": "true"}


def time_reference(xml2: bytes) -> int:
    """The value reference of FMI 3.0's independent variable ``time``: the first one the FMI 2.0
    variables leave free (the loader answers it, fmi3_loader.c EMBED_TIME_VR)."""
    return 1 + max((int(v.get("valueReference")) for v in ET.fromstring(xml2).iter("ScalarVariable")),
                   default=-1)


def fmi3_description(xml2: bytes, extension=None) -> bytes:
    """The FMI 3.0 modelDescription.xml of the FMU whose FMI 2.0 one is ``xml2``, with the arrays
    of the scenario's ``extension`` class (``arrays.describe``)."""
    src = ET.fromstring(xml2)
    time_vr = time_reference(xml2)
    root = ET.Element("fmiModelDescription", fmiVersion="3.0")
    for k in MODEL_ATTRS:
        if src.get(k) is not None:
            root.set(k, src.get(k))
    root.set("instantiationToken", src.get("guid"))
    ET.SubElement(root, "CoSimulation", co_simulation(src.find("CoSimulation")
                                                      .get("modelIdentifier")))
    units = src.find("UnitDefinitions")        # the same Unit/BaseUnit elements in FMI 3.0
    if units is None:
        units = ET.Element("UnitDefinitions")
    if not any(u.get("name") == "s" for u in units):      # time's
        ET.SubElement(ET.SubElement(units, "Unit", name="s"), "BaseUnit", s="1")
    root.append(units)
    cats = src.find("LogCategories")
    if cats is not None:
        out = ET.SubElement(root, "LogCategories")
        for c in cats:
            ET.SubElement(out, "Category", name=c.get("name"),
                          description=(c.get("description") or "").replace("fmi2", "fmi3"))
    exp = src.find("DefaultExperiment")
    if exp is not None:
        root.append(exp)
    variables = ET.SubElement(root, "ModelVariables")
    # FMI 3.0 2.4.7.4: exactly one independent variable
    ET.SubElement(variables, "Float64", name="time", valueReference=str(time_vr),
                  causality="independent", variability="continuous", unit="s",
                  description="simulation time: the last communication point")
    by_index = {}                              # FMI 2.0 index (1-based) -> value reference
    for i, sv in enumerate(src.find("ModelVariables"), start=1):
        typed = sv[0]
        by_index[i] = sv.get("valueReference")
        if sv.get("name") in ALIASES:
            continue
        var = ET.SubElement(variables, TYPES[typed.tag])
        for k in VARIABLE_ATTRS:
            if sv.get(k) is not None:
                var.set(k, sv.get(k))
        for k in TYPE_ATTRS:
            if typed.get(k) is not None and not (k == "declaredType" and
                                                 typed.tag == "Enumeration"):
                var.set(k, typed.get(k))
        start = typed.get("start")
        if start is not None:
            if typed.tag == "String":          # FMI 3.0: a String's start is an element
                ET.SubElement(var, "Start", value=start)
            else:
                var.set("start", start)
    variables.extend(arrays.describe(extension, time_vr))
    structure = ET.SubElement(root, "ModelStructure")
    old = src.find("ModelStructure")
    for group, tag in (("Outputs", "Output"), ("InitialUnknowns", "InitialUnknown")):
        seen = set()
        for u in (old.find(group) if old is not None and old.find(group) is not None else []):
            vr = by_index[int(u.get("index"))]
            if vr not in seen:                 # an alias's entry is its original's
                seen.add(vr)
                entry = ET.SubElement(structure, tag, valueReference=vr)
                deps = u.get("dependencies")
                if deps is not None:           # FMI 2.0 indices -> FMI 3.0 value references
                    entry.set("dependencies", " ".join(by_index[int(i)] for i in deps.split()))
                    if u.get("dependenciesKind") is not None:
                        entry.set("dependenciesKind", u.get("dependenciesKind"))
    ET.indent(root, "\t")
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def as_fmi3(fmu2: Path, dest: Path, extension=None) -> Path:
    """The FMI 3.0 co-simulation FMU ``dest`` made from the FMI 2.0 one ``fmu2`` of the same
    build: the same resources and binary (which exports the fmi3 functions too), under FMI 3.0's
    platform folder x86_64-linux/, with the modelDescription.xml of ``fmi3_description`` (the
    arrays of the scenario's ``extension`` class)."""
    tmp = dest.with_suffix(".tmp3")
    with zipfile.ZipFile(fmu2) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item)
            name = item.filename
            if name == "modelDescription.xml":
                data = fmi3_description(data, extension)
            elif name.startswith("binaries/linux64/"):
                name = "binaries/x86_64-linux/" + name[len("binaries/linux64/"):]
            info = zipfile.ZipInfo(name, item.date_time)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, item.external_attr
            dst.writestr(info, data)
    tmp.replace(dest)
    return dest
