"""symengine's LLVM functions pickled as their own object code (issue 30,
``embed.codegen.llvm_object``): every LLVM-compiled function a bundled scenario's run fills
its library with (the unconstrained terms, the monitors and laws of the compiled-terms path,
the entry terms, pendulum_belt's RK4 step) loads in a fresh process that never imports
symengine and gives symengine's bits on random argument vectors; object code calling what
the C library does not export is not used (the function pickles as symengine's)."""

import pickle
import subprocess
import sys

import numpy as np
import symengine as se

import scenarios
from embed.codegen import llvm_object
from embed.codegen.lambda_order import LambdaNative
from embed.modes import functions
from embed.modes.library import ModeLibrary

LOAD = r"""
import pickle, sys
import numpy as np
fns, vectors = pickle.load(open(sys.argv[1], "rb"))
outs = []
for fn, vs in zip(fns, vectors):
    out = np.empty(fn.n_out)
    rows = []
    for v in vs:
        fn.unsafe_real(np.ascontiguousarray(v), out)
        rows.append(out.copy())
    outs.append(np.array(rows))
pickle.dump((outs, [type(f).__name__ for f in fns],
             [m for m in ("symengine", "sympy") if m in sys.modules]), open(sys.argv[2], "wb"))
"""


def llvm_functions(obj, found, seen=None):
    """Every LLVM ``Compiled`` reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, np.ndarray)):
        return found
    seen.add(id(obj))
    if isinstance(obj, functions.Compiled):
        if obj.source is None:
            found.append(obj)
        return found
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    else:
        items = list(getattr(obj, "__dict__", {}).values())
        items += [getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)]
    for v in items:
        llvm_functions(v, found, seen)
    return found


def library_after(name, until):
    """The mode library scenario ``name``'s own simulator filled in ``until`` s."""
    sc = scenarios.load(name).build()
    lib = ModeLibrary.of(sc.automaton, sc.embedding)
    sim = sc.simulator(embedding=sc.embedding, library=lib)
    sim.warm_up()
    sim.advance(until)
    return lib


def test_llvm_functions_load_without_symengine_bit_for_bit(tmp_path):
    fns = []
    for name in ("pendulum_belt", "disk_ramp"):
        lib = library_after(name, 2.0)
        fns += llvm_functions([lib.terms, lib.entry, lib.modes], [])
    assert len(fns) >= 8
    rng = np.random.default_rng(7)
    vectors = []
    for fn in fns:
        v = rng.normal(size=(200, fn.n_in)) * 10.0 ** rng.uniform(-3, 3, (200, 1))
        v[::17] = 0.0
        vectors.append(v)
    shipped = [pickle.loads(pickle.dumps(fn)) for fn in fns]     # in this process too
    assert all(isinstance(f, LambdaNative) for f in shipped)
    path, out = tmp_path / "fns.pkl", tmp_path / "out.pkl"
    path.write_bytes(pickle.dumps((fns, vectors)))
    res = subprocess.run([sys.executable, "-c", LOAD, str(path), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got, kinds, modules = pickle.loads(out.read_bytes())
    assert modules == [] and set(kinds) == {"LambdaNative"}
    for fn, vs, g, local in zip(fns, vectors, got, shipped):
        want = np.array([fn(v) for v in vs])
        np.testing.assert_array_equal(want.view(np.int64), g.view(np.int64))
        mine = np.array([local(v) for v in vs])
        np.testing.assert_array_equal(want.view(np.int64), mine.view(np.int64))


def test_object_code_calling_unknown_symbols_is_not_used():
    x, y = se.symbols("x y")
    fn = functions.lambdify([x, y], [se.sin(x) * y, se.atan2(x, y)], "f", "llvm")
    obj = fn.fn.__reduce__()[1][-1]
    defined, undefined = llvm_object.elf_symbols(obj)
    assert llvm_object.ENTRY in defined and undefined <= {"sin", "atan2"}
    assert isinstance(pickle.loads(pickle.dumps(fn)), LambdaNative)
    # the same object naming a function no library exports: kept as symengine's pickle
    bad = obj.replace(b"\0sin\0", b"\0zzz\0")
    assert llvm_object.elf_symbols(bad)[1] >= {"zzz"}

    class Fake:
        def __reduce__(self):
            return (None, (bad,))
    assert llvm_object.native_of_llvm(Fake(), 2, 2) is None
    assert llvm_object.elf_symbols(b"not an object") is None
