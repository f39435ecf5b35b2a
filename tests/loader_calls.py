"""Bad fmi2 calls on an FMU's binary through ctypes, as a careless or hostile C master makes
them; one JSON line per case on stdout.  tests/test_loader_safety.py runs this as a
subprocess, so a crash fails the cases from there on instead of the test session.

    python tests/loader_calls.py FMU
"""

import ctypes
import json
import pathlib
import random
import shutil
import sys
from ctypes import POINTER, byref, c_char_p, c_double, c_int, c_size_t, c_uint, c_void_p

from fmpy import calloc, extract, free, read_model_description
from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy.logging import addLoggerProxy

CO_SIMULATION = 1
MESSAGES = []            # (componentEnvironment, instanceName, status, category, message)


def _text(b):
    return None if b is None else b.decode(errors="replace")


@fmi2CallbackLoggerTYPE
def _logger(env, name, status, category, message):
    MESSAGES.append((env, _text(name), status, _text(category), _text(message)))


def callbacks(env):
    cb = fmi2CallbackFunctions()
    cb.logger = _logger
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    cb.componentEnvironment = env
    addLoggerProxy(byref(cb))           # formats the message (the logger is variadic)
    return cb


def emit(case, **result):
    print(json.dumps({"case": case, **result}), flush=True)


def since(n):
    """Messages logged since MESSAGES had n entries, as [status, category, text]."""
    return [[s, c, m] for _, _, s, c, m in MESSAGES[n:]]


class Binary:
    """The FMU's binary with the signatures of the calls used here."""

    def __init__(self, path):
        lib = self.lib = ctypes.CDLL(str(path))
        vp, sz, ptr = c_void_p, c_size_t, POINTER
        sig = {
            "Instantiate": ([c_char_p, c_int, c_char_p, c_char_p, vp, c_int, c_int], vp),
            "FreeInstance": ([vp], None),
            "SetupExperiment": ([vp, c_int, c_double, c_double, c_int, c_double], c_int),
            "EnterInitializationMode": ([vp], c_int),
            "ExitInitializationMode": ([vp], c_int),
            "DoStep": ([vp, c_double, c_double, c_int], c_int),
            "GetReal": ([vp, vp, sz, vp], c_int), "SetReal": ([vp, vp, sz, vp], c_int),
            "GetInteger": ([vp, vp, sz, vp], c_int), "SetInteger": ([vp, vp, sz, vp], c_int),
            "GetBoolean": ([vp, vp, sz, vp], c_int), "SetBoolean": ([vp, vp, sz, vp], c_int),
            "GetString": ([vp, vp, sz, vp], c_int), "SetString": ([vp, vp, sz, vp], c_int),
            "GetFMUstate": ([vp, vp], c_int), "SetFMUstate": ([vp, vp], c_int),
            "FreeFMUstate": ([vp, vp], c_int),
            "SerializedFMUstateSize": ([vp, vp, ptr(sz)], c_int),
            "SerializeFMUstate": ([vp, vp, vp, sz], c_int),
            "DeSerializeFMUstate": ([vp, vp, sz, vp], c_int),
        }
        for name, (args, res) in sig.items():
            f = getattr(lib, "fmi2" + name)
            f.argtypes, f.restype = args, res
            setattr(self, name, f)


def run(fmu):
    md = read_model_description(fmu)
    root = pathlib.Path(extract(fmu))
    try:
        b = Binary(root / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so")
        _instantiation(b, md, root)
        _arguments_and_states(b, md, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _instantiation(b, md, root):
    guid = md.guid.encode()
    good = (root / "resources").as_uri()
    cases = {
        "http": (b"x", good.replace("file://", "http://example.com"), True),
        "no uri": (b"x", None, True),
        "empty uri": (b"x", "", True),
        "missing folder": (b"x", (root / "no such" / "resources").as_uri(), True),
        "not the resources": (b"x", root.as_uri(), True),
        "bad escape": (b"x", good + "%zz", True),
        "encoded NUL": (b"x", good + "%00", True),
        "other host": (b"x", good.replace("file://", "file://example.com"), True),
        "no path": (b"x", "file:", True),
        "null name": (None, good, True),
        "null callbacks": (b"x", good, False),
    }
    for env, (label, (name, uri, with_cb)) in enumerate(cases.items(), start=100):
        cb = callbacks(env)
        n = len(MESSAGES)
        emit(f"instantiate: {label}", started=True)
        c = b.Instantiate(name, CO_SIMULATION, guid, None if uri is None else uri.encode(),
                          ctypes.addressof(cb) if with_cb else None, 0, 0)
        emit(f"instantiate: {label}", null=c is None, messages=since(n))
        if c:
            b.FreeInstance(c)
    cb = callbacks(99)
    c = b.Instantiate(b"localhost", CO_SIMULATION, guid,
                      good.replace("file://", "file://localhost").encode(),
                      ctypes.addressof(cb), 0, 0)
    emit("instantiate: file://localhost/", null=c is None)
    if c:
        b.FreeInstance(c)


def _start(b, md, root, name, env):
    cb = callbacks(env)
    c = b.Instantiate(name, CO_SIMULATION, md.guid.encode(), (root / "resources").as_uri()
                      .encode(), ctypes.addressof(cb), 0, 1)
    assert c, MESSAGES[-3:]
    assert b.SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) == 0
    assert b.EnterInitializationMode(c) == 0
    assert b.ExitInitializationMode(c) == 0
    return c, cb


def _outputs(b, c, md):
    vrs = [v.valueReference for v in md.modelVariables
           if v.causality == "output" and v.type == "Real"]
    vr = (c_uint * len(vrs))(*vrs)
    out = (c_double * len(vrs))()
    assert b.GetReal(c, vr, len(vrs), out) == 0
    return list(out)


def _arguments_and_states(b, md, root):
    c, cb = _start(b, md, root, b"a", 1)
    real = next(v.valueReference for v in md.modelVariables if v.type == "Real")
    string = next(v.valueReference for v in md.modelVariables if v.type == "String")
    vr1, val = (c_uint * 1)(real), (c_double * 1)()
    null_args = {
        "GetReal vr NULL": lambda: b.GetReal(c, None, 1, val),
        "GetReal value NULL": lambda: b.GetReal(c, vr1, 1, None),
        "SetReal vr NULL": lambda: b.SetReal(c, None, 1, val),
        "SetReal value NULL": lambda: b.SetReal(c, vr1, 1, None),
        "GetInteger value NULL": lambda: b.GetInteger(c, vr1, 1, None),
        "SetBoolean value NULL": lambda: b.SetBoolean(c, vr1, 1, None),
        "GetString value NULL": lambda: b.GetString(c, (c_uint * 1)(string), 1, None),
        "SetString value NULL": lambda: b.SetString(c, (c_uint * 1)(string), 1, None),
        "SetString a NULL string": lambda: b.SetString(c, (c_uint * 1)(string), 1,
                                                       (c_char_p * 1)(None)),
        "GetFMUstate NULL": lambda: b.GetFMUstate(c, None),
        "SetFMUstate NULL": lambda: b.SetFMUstate(c, None),
        "FreeFMUstate NULL": lambda: b.FreeFMUstate(c, None),
        "SerializedFMUstateSize NULL": lambda: b.SerializedFMUstateSize(c, None,
                                                                        byref(c_size_t())),
        "SerializeFMUstate NULL": lambda: b.SerializeFMUstate(c, None,
                                                              ctypes.create_string_buffer(64), 64),
        "DeSerializeFMUstate NULL bytes": lambda: b.DeSerializeFMUstate(c, None, 10,
                                                                        byref(c_void_p())),
        "DeSerializeFMUstate NULL state": lambda: b.DeSerializeFMUstate(c, b"{}", 2, None),
        "GetReal nothing (n = 0, NULL arrays)": lambda: b.GetReal(c, None, 0, None),
    }
    for label, call in null_args.items():
        emit(f"null: {label}", started=True)
        n = len(MESSAGES)
        emit(f"null: {label}", status=call(), messages=since(n))
    emit("null: then a step", status=b.DoStep(c, 0.0, 0.01, 1))

    # fmi2FreeFMUstate sets the handle to NULL; a second free of it is ignored; a copy of a
    # freed handle is refused by every state call
    s = c_void_p()
    r_get = b.GetFMUstate(c, byref(s))
    copy = c_void_p(s.value)
    r_free = b.FreeFMUstate(c, byref(s))
    n = len(MESSAGES)
    emit("free: twice", get=r_get, first=r_free, handle_after=s.value,
         second=b.FreeFMUstate(c, byref(s)),
         copy_free=b.FreeFMUstate(c, byref(copy)), copy_after=copy.value,
         copy_set=b.SetFMUstate(c, copy),
         copy_serialize=b.SerializeFMUstate(c, copy, ctypes.create_string_buffer(64), 64),
         messages=since(n))

    # serialization buffers: too small refused and untouched, larger filled to the size only
    s = c_void_p()
    b.GetFMUstate(c, byref(s))
    need = c_size_t()
    r_size = b.SerializedFMUstateSize(c, s, byref(need))
    small = ctypes.create_string_buffer(b"\xaa" * (need.value // 2), need.value // 2)
    n = len(MESSAGES)
    r_small = b.SerializeFMUstate(c, s, small, len(small))
    small_messages = since(n)
    exact = ctypes.create_string_buffer(need.value)
    r_exact = b.SerializeFMUstate(c, s, exact, need.value)
    big = ctypes.create_string_buffer(b"\xaa" * (need.value + 64), need.value + 64)
    r_big = b.SerializeFMUstate(c, s, big, len(big))
    emit("serialize: buffers", size=r_size, need=need.value, small=r_small,
         small_untouched=small.raw == b"\xaa" * len(small), small_messages=small_messages,
         exact=r_exact, big=r_big, big_same=big.raw[:need.value] == exact.raw,
         big_tail_untouched=big.raw[need.value:] == b"\xaa" * 64)
    blob = exact.raw

    # deserializing what is not a state: refused, nothing returned, the instance alive
    rng = random.Random(33)
    bad = {"garbage": bytes(rng.randrange(256) for _ in range(len(blob))),
           "truncated": blob[:len(blob) // 2], "not JSON": b"\x00" * 40}
    for label, data in bad.items():
        d = c_void_p()
        n = len(MESSAGES)
        emit(f"deserialize: {label}", status=b.DeSerializeFMUstate(c, data, len(data), byref(d)),
             handle=d.value, messages=since(n))
    at = _outputs(b, c, md)
    emit("deserialize: then a step", status=b.DoStep(c, 0.01, 0.01, 1))
    d = c_void_p()
    r_de = b.DeSerializeFMUstate(c, blob, len(blob), byref(d))
    r_set = b.SetFMUstate(c, d)
    emit("deserialize: the good blob", status=r_de, set=r_set, restored=_outputs(b, c, md) == at,
         freed=b.FreeFMUstate(c, byref(d)))

    # a reused handle (FMI 2.0 2.1.8: *FMUstate != NULL) takes the new state
    assert b.DoStep(c, 0.01, 0.01, 1) == 0
    first = c_void_p(s.value)
    r_reuse = b.GetFMUstate(c, byref(s))
    then = _outputs(b, c, md)
    assert b.DoStep(c, 0.02, 0.01, 1) == 0
    moved = _outputs(b, c, md) != then
    emit("reuse", status=r_reuse, same_handle=s.value == first.value,
         set=b.SetFMUstate(c, s), restored=moved and _outputs(b, c, md) == then)

    # a state of another instance is refused
    c2, cb2 = _start(b, md, root, b"b", 2)
    other = c_void_p()
    b.GetFMUstate(c2, byref(other))
    n = len(MESSAGES)
    emit("foreign state", set=b.SetFMUstate(c, other), free=b.FreeFMUstate(c, byref(other)),
         messages=since(n))
    b.FreeInstance(c2)                 # with its state still taken: freed with it
    b.FreeInstance(c)                  # s is still taken too
    emit("done", fatal=[m for m in MESSAGES if m[2] == 4])


if __name__ == "__main__":
    run(sys.argv[1])
