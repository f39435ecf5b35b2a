"""FMI 3.0's array variables of a scenario's extension (FMI 3.0 2.2.6.2, 2.4.7.3: <Dimension>),
and fmi3GetVariableDependencies (2.2.10), answered by the slave for the C loader
(fmu_src/runtime/loader/fmi3_loader.c through loader.h's ExtraVariables and
VariableDependencies callbacks).

An extension declares ``arrays``: [(Var, shape)], shape () for a scalar FMI 2.0 does not show
(disk_fence: fence_points[32][2] and fence_point_count, ``scenarios/disk_fence/extension.py``).
They are FMI 3.0-only: the FMI 2.0 FMU has no such variable and is unchanged.  Their value
references follow FMI 3.0's ``time`` (``describe3.time_reference``): time + 1, time + 2, ...,
in the order declared, the same at build time (``describe``) and in the slave (``Arrays``).
A set checks every value (``Var.problem``: finite, in [min, max]) and sets nothing on a bad one,
fmi3Error with the variable and element named; the instance stays usable.  The values reach the
extension with its other inputs at the next step (``Arrays.values``).
"""

from __future__ import annotations

import ctypes
import math
import weakref
from xml.etree import ElementTree as ET

from pythonfmu.enums import Fmi2Causality
from pythonfmu.variables import Real

EXTRA_SIZE, EXTRA_SET, EXTRA_GET, EXTRA_WRONG_COUNT = range(4)     # loader.h
OK, ERROR = 0, 3
EXTRA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_uint,
                         ctypes.POINTER(ctypes.c_double), ctypes.c_size_t)
DEPENDENCIES = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint),
                                ctypes.c_size_t)
TYPES = {"Real": "Float64", "Integer": "Int32"}


def declared(extension):
    """[(Var, shape)] of an extension class (or None): its FMI 3.0-only variables."""
    return list(getattr(extension, "arrays", ()) or ()) if extension is not None else []


def size(shape):
    return math.prod(shape) if shape else 1


def _number(x):
    return repr(int(x)) if float(x).is_integer() and abs(x) < 2 ** 53 else repr(float(x))


def describe(extension, time_vr):
    """The FMI 3.0 ModelVariables elements of the extension's arrays (inputs, discrete), value
    references from time_vr + 1: <Float64|Int32 ...> with one <Dimension start="n"/> per axis
    and the start value repeated for every element (row-major)."""
    out = []
    for k, (v, shape) in enumerate(declared(extension)):
        el = ET.Element(TYPES[v.type], name=v.name, valueReference=str(time_vr + 1 + k),
                        description=v.description, causality="input", variability="discrete")
        if v.unit:
            el.set("unit", v.unit)
        for attr in ("min", "max"):
            if getattr(v, attr) is not None:
                el.set(attr, _number(getattr(v, attr)))
        el.set("start", " ".join([_number(v.start)] * size(shape)))
        for n in shape:
            ET.SubElement(el, "Dimension", start=str(n))
        out.append(el)
    return out


class Arrays:
    """The slave's FMI 3.0-only variables: their values and the loader's callbacks."""

    def __init__(self, slave):
        self.specs = declared(slave.sc.extension)
        self.first = len(slave.vars) + 1                 # after FMI 3.0's time
        self.values = {v.name: ([v.start] * size(shape) if shape else v.start)
                       for v, shape in self.specs}

    def _spec(self, vr):
        k = vr - self.first
        return self.specs[k] if 0 <= k < len(self.specs) else (None, None)

    def size(self, vr):
        v, shape = self._spec(vr)
        return -1 if v is None else size(shape)

    def set(self, vr, values):
        """Set variable ``vr`` to ``values`` (all its elements): None, or what is wrong."""
        v, shape = self._spec(vr)
        for i, x in enumerate(values):
            if v.type == "Integer":             # travelled as a double (exact)
                x = int(x)
            wrong = v.problem(x)
            if wrong is not None:
                where = f"element {i + 1} of {size(shape)}: " if shape else ""
                return f"fmi3Set{TYPES[v.type]}: {where}{wrong}; nothing was set"
        conv = int if v.type == "Integer" else float
        self.values[v.name] = [conv(x) for x in values] if shape else conv(values[0])
        return None

    def get(self, vr):
        v, shape = self._spec(vr)
        x = self.values[v.name]
        return list(x) if shape else [x]

    def wrong_count(self, vr, n):
        v, shape = self._spec(vr)
        dims = "x".join(str(d) for d in shape) or "scalar"
        return (f"{v.name} ({dims}) has {size(shape)} values but {n} were given for it "
                "(FMI 3.0 2.2.6.2: nValues counts every element); nothing was set")


def dependencies(slave):
    """Output value reference -> the Real inputs' value references it depends on, as the FMI 2.0
    ModelStructure declares them (``derivatives.declare``: all Real inputs if the output may
    follow the inputs at an instant, ``slave.dependence``, else none)."""
    real_inputs = [vr for vr, var in slave.vars.items()
                   if var.causality == Fmi2Causality.input and isinstance(var, Real)]
    return {vr: (real_inputs if slave.dependence.get(var.name) else [])
            for vr, var in slave.vars.items() if var.causality == Fmi2Causality.output}


def install(slave):
    """``slave.arrays`` and the loader's callbacks (kept on the slave, forgotten with the
    instance); the messages a call logs are delivered before it returns."""
    slave.arrays = arrays = Arrays(slave)
    lib = slave.loader._lib
    setter = getattr(lib, "embed_fmi3_set_extra", None) if lib else None
    if setter is None:
        return
    ref = weakref.ref(slave)
    deps = dependencies(slave)

    def extra(op, vr, values, n):
        s = ref()
        if s is None:
            return ERROR
        if op == EXTRA_SIZE:
            return arrays.size(vr)
        if op == EXTRA_GET:
            for i, x in enumerate(arrays.get(vr)[:n]):
                values[i] = x
            return OK
        wrong = (arrays.set(vr, [values[i] for i in range(n)]) if op == EXTRA_SET
                 else arrays.wrong_count(vr, n))
        if wrong is None:
            return OK
        s.loader.log_now(ERROR, wrong)
        return ERROR

    def depend(vr, out, n):
        s = ref()
        if s is None or vr not in deps:
            return -1
        for i, x in enumerate(deps[vr][:n]):
            out[i] = x
        return len(deps[vr])

    slave._extra_callbacks = (EXTRA(extra), DEPENDENCIES(depend))
    setter.argtypes = [EXTRA, ctypes.c_uint, ctypes.c_size_t, DEPENDENCIES]
    setter(slave._extra_callbacks[0], arrays.first, len(arrays.specs), slave._extra_callbacks[1])
