"""The ``status`` output's codes: one table, keyed by the engine's error classes; and the
FMI Enumeration types ``status`` and ``mode`` are declared with in modelDescription.xml.

``status`` reports the last doStep, initialization or refused call.  docs/fmu.md's table
(status codes) is checked against this one by tests/test_fmi2_conformance.py.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

from embed.base.errors import (CompilationError, ConstraintRankError, EventLocationError,
                          ImpactError, InputError, IntegrationError, ModelDefinitionError,
                          ZenoError)

OK = 0
INTERNAL = 1
INPUT_REJECTED = 9
REFUSED = 10

BY_ERROR = {            # engine error class -> status code
    ModelDefinitionError: 2,
    ConstraintRankError: 3,
    CompilationError: 4,
    IntegrationError: 5,
    EventLocationError: 6,
    ZenoError: 7,
    ImpactError: 8,
    InputError: INPUT_REJECTED,
}

STATUS = {
    OK: "ok",
    INTERNAL: "internal error (see the FMI log); no step gets past it",
    2: "model definition error (the FMI log names the mode and guard; `check` finds these "
       "before a build); no step gets past it",
    3: "active constraints redundant or inconsistent",
    4: "compilation of a mode failed",
    5: "integration failed (non-finite state, step budget exceeded, configuration off the "
       "constraint manifold)",
    6: "a switching condition could not be located",
    7: "Zeno behaviour with no persistent mode to switch to",
    8: "impact could not be resolved",
    INPUT_REJECTED: "an input or parameter value was rejected (not finite, out of range, "
                    "unknown option); the previous value is kept",
    REFUSED: "an FMI call was refused (illegal in this state, or a bad argument); nothing of "
             "it was applied",
}


NAMES = {             # status code -> its item name in the FMU's Status enumeration type
    OK: "ok", INTERNAL: "internal_error", 2: "model_definition_error",
    3: "constraint_rank_error", 4: "compilation_error", 5: "integration_error",
    6: "event_location_error", 7: "zeno", 8: "impact_error", INPUT_REJECTED: "input_rejected",
    REFUSED: "refused",
}


def status_of(exc):
    """The status code of an exception: its engine error class's, else internal error."""
    for cls in type(exc).__mro__:
        if cls in BY_ERROR:
            return BY_ERROR[cls]
    return INTERNAL


STATUS_DESCRIPTION = ("0 ok, else the code of the last failed step or refused call (the codes: "
                      "type Status)")
# Integer outputs declared as Enumerations.  ``status`` stays an Integer (its codes are listed
# in the type Status all the same): libcosim 0.11 drops Enumeration variables, and a master
# must see the status; ``mode`` has the Integer alias MODE_NUMBER for such masters.
ENUMERATIONS = {"mode": "Mode"}
MODE_NUMBER = "mode_number"


def as_enumeration(element, name):
    """A ScalarVariable element of pythonfmu's (``<Integer start=.../>``) declared instead as
    the Enumeration type of ``ENUMERATIONS[name]`` (FMI 2.0 Sec 2.2.3: read with
    fmi2GetInteger all the same)."""
    child = element.find("Integer")
    if child is not None:
        child.tag = "Enumeration"
        child.set("declaredType", ENUMERATIONS[name])
    return element


def type_definitions(mode_names: dict, names=("mode", "status")) -> Element:
    """<TypeDefinitions> with the Enumeration types of the variables ``names``: Mode, the
    automaton's modes by the number the ``mode`` output reports ({number: name}; a name
    that repeats gets its number added: item names are unique), and Status, the codes of
    ``STATUS`` with their meaning."""
    types = Element("TypeDefinitions")
    if "mode" in names and mode_names:
        items = []
        for value, name in sorted(mode_names.items()):
            name = name or f"mode {value}"
            items.append((f"{name} ({value})" if name in [n for n, _, _ in items] else name,
                          value, None))
        _enumeration(types, "Mode", "the hybrid automaton's modes (gillespie2005 Sec 4)", items)
    if "status" in names:
        _enumeration(types, "Status", "code of the last doStep, initialization or refused call",
                     [(NAMES[k], k, text) for k, text in sorted(STATUS.items())])
    return types


def _enumeration(types, name, description, items):
    simple = SubElement(types, "SimpleType", name=name, description=description)
    enum = SubElement(simple, "Enumeration")
    for item, value, text in items:
        SubElement(enum, "Item", {"name": item, "value": str(value),
                                  **({"description": text} if text else {})})


def add_integer_alias(root, name, alias):
    """An Integer output ``alias`` of the Enumeration output ``name`` (same value reference:
    FMI 2.0 Sec 2.2.7, Integer and Enumeration share value references and are got with
    fmi2GetInteger), appended to ModelVariables and to ModelStructure's Outputs."""
    variables = root.find("ModelVariables")
    index = {v.get("name"): i for i, v in enumerate(variables, start=1)}
    original = variables[index[name] - 1]
    copy = SubElement(variables, "ScalarVariable", dict(original.attrib))
    copy.set("name", alias)
    copy.set("description", f"{name} as a plain Integer (an alias of {name}, for masters that "
             "read no Enumeration)")
    start = original.find("Enumeration").get("start")
    SubElement(copy, "Integer", {"start": start} if start is not None else {})
    outputs = root.find("ModelStructure/Outputs")
    if outputs is not None:
        SubElement(outputs, "Unknown", index=str(len(variables)))
