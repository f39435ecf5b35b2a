"""A straight-line program (``embed.codegen.program``) compiled to machine code with llvmlite.

One LLVM function ``void f(double *in, double *out)`` whose instructions are the program's
operations, in order: no symbolic pass runs at compile time, so compiling costs time in
proportion to the program.  The compiled function is called through ctypes with the
addresses of preallocated arrays; it pickles as object code (the background worker's
answers, gillespie2005 Sec 6.2) and loads without compiling again.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import uuid
from pathlib import Path

import numpy as np

from . import elf_load, ldlt, pivoting, reduction
from .loader_thread import (LOADER_SWITCH, SharedLock, load_later, run_later,  # noqa: F401
                            start_loader)
from ..base.errors import CompilationError
from .ir import ir_text, largest_function

# (reentered: a placement places what it names, ``_resolve``; the loader thread's counted)
_LOCK = SharedLock(threading.RLock())
_STATE = {}
_LIBM = ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "pow")
# codegen optimization level: 0 compiles fast, 1 runs faster (docs/design.md's facts); 0 where a
# compile is on the stepping path, 1 in the background worker
OPT_FAST, OPT_RUN = 0, 1
RUN_MAX_OPS = 20000   # beyond, level 1 takes seconds (its time grows faster than the function)
# object code is placed by ``elf_load`` (no LLVM in the process) unless this says "mcjit"
LOADER_ENV = "EMBED_OBJECT_LOADER"
HELPERS_KEY = "llvm helpers"   # objects.pkl's entry of the helpers' object code (``Shipped``)
HELPER_OBJECTS = {}            # name -> object code of the helpers built in this process
_SHIPPED_HELPERS = {}          # name -> object code of the helpers an FMU ships, not loaded


def _llvm():
    """llvmlite's binding, initialized once: the native target, one target machine, the C
    math functions the programs call, an MCJIT engine that object code is added to."""
    with _LOCK:
        if not _STATE:
            try:
                import llvmlite.binding as llvm
            except ImportError as exc:          # a dependency: pyproject.toml
                raise CompilationError(f"llvmlite is not installed: {exc}") from exc
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            # straight-line code needs no instruction scheduling, and the fast instruction
            # selector does as well on it (level 1 compiles faster, runs as fast: design.md)
            llvm.set_option("", "-fast-isel")
            llvm.set_option("", "-enable-misched=false")
            import ctypes.util as util   # (with subprocess, tempfile: 10 ms of a C master's start)
            libm = ctypes.CDLL(util.find_library("m"))
            libc = ctypes.CDLL(util.find_library("c"))
            for lib, names in ((libm, _LIBM), (libc, ("memcpy", "memcmp"))):
                for name in names:
                    llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
            target = llvm.Target.from_default_triple()
            tms = {o: target.create_target_machine(opt=o, jit=True, **_host(llvm))
                   for o in (OPT_FAST, OPT_RUN)}
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tms[OPT_FAST])
            _STATE.update(llvm=llvm, tm=tms, engine=engine, helpers=set(), known=set())
    return _STATE


# the helpers programs call by name (``Program.ldl_solve``, ``reduced``, ``pivoted``): each
# optimized by LLVM's O3 pipeline, 0.15-0.6 s, when object code naming it is first loaded (a
# fence's jet names none: the fast worker never builds them)
_HELPERS = {ldlt.NAME: lambda: ldlt.module(False), ldlt.EXACT: lambda: ldlt.module(True),
            reduction.NAME: reduction.module, pivoting.NAME: pivoting.module}


def _helpers(st, obj):
    """The helpers object code ``obj`` names, built (or loaded as shipped) and made known,
    and the functions ``elf_load`` placed that it names made known (under _LOCK)."""
    for name, module in _HELPERS.items():
        if name not in st["helpers"] and name.encode() in obj:
            addr = _shipped_helper(name) or _optimized(st["llvm"], st["tm"][OPT_RUN],
                                                       st["engine"], module(), name)
            st["llvm"].add_symbol(name, addr)
            st["helpers"].add(name)
    for name, addr in elf_load.published().items():
        if name not in st["known"] and name.encode() in obj:
            st["llvm"].add_symbol(name, addr)
            st["known"].add(name)


def _shipped_helper(name):
    """The address of helper ``name`` placed from the object code the FMU ships, or None."""
    obj = _SHIPPED_HELPERS.pop(name, None)
    got = None if obj is None else elf_load.load(obj)
    return got.get(name) if got else elf_load.published().get(name)


def _resolve(name):
    """An undefined symbol of object code ``elf_load`` places: a helper (shipped), a function
    MCJIT loaded, or one unpickled and not placed yet (``_PENDING``: placed now)."""
    addr = _shipped_helper(name) if name in _HELPERS else None
    if addr:
        return addr
    if _STATE and name.startswith("embed_"):
        addr = _STATE["engine"].get_function_address(name)
        if addr:
            return addr
    pending = _PENDING.get(name)
    if pending is not None:
        pending.load()
        return elf_load.published().get(name)
    return None


class Shipped:
    """The helpers' object code in objects.pkl (``HELPERS_KEY``, before the mode libraries):
    unpickled, it is kept for the first object code that names a helper (``_resolve``),
    which is then placed without LLVM, or by MCJIT instead of optimizing the helper again."""

    def __init__(self, objects):
        self.objects = dict(objects)

    def __reduce__(self):
        return (_ship_helpers, (self.objects,))


def _ship_helpers(objects):
    with _LOCK:
        for name, obj in objects.items():
            if name in _HELPERS and name not in elf_load.published():
                _SHIPPED_HELPERS.setdefault(name, obj)
    return Shipped(objects)


def set_up(helpers=True):
    """LLVM ready for the first compile or load (``_llvm``), with every helper if
    ``helpers`` (about 1 s once a process)."""
    st = _llvm()
    if helpers:
        with _LOCK:
            _helpers(st, " ".join(_HELPERS).encode())


def _optimized(llvm, tm, engine, text, name):
    """The address of function ``name`` of the IR ``text``, optimized by LLVM's O3 pipeline
    (loops vectorized) and loaded into ``engine``: a helper the programs call by name."""
    def emit():
        mod = llvm.parse_assembly(text)
        mod.verify()
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        return tm.emit_object(mod)
    # the same object code every process: kept in the user's cache (issue 30), keyed by the
    # IR, this module's source (its LLVM options) and, in ``object_code``, LLVM and the CPU
    from ..base.cache_files import object_code
    obj = object_code(name, text.encode() + Path(__file__).read_bytes(), emit)
    HELPER_OBJECTS[name] = obj        # shipped by an FMU's build (``Shipped``)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine.get_function_address(name)


def _host(llvm):
    """This processor and its features (AVX's three-operand forms, more registers): smaller
    and faster code than for generic x86-64 (docs/design.md's facts).
    No fused multiply-add (the IR carries no ``contract`` flag): the same results to the
    bit.  The code runs only on this machine (the worker compiles on it too)."""
    try:
        return {"cpu": llvm.get_host_cpu_name(),
                "features": llvm.get_host_cpu_features().flatten()}
    except RuntimeError:        # features unknown on this platform: generic code
        return {}


def compile_program(prog, outs, what, opt=None):
    """The ``NativeFunction`` computing registers ``outs`` of ``prog`` at codegen level
    ``opt``; None: ``OPT_RUN`` unless a function has more than ``RUN_MAX_OPS`` operations."""
    st = _llvm()
    if opt is None:
        opt = OPT_RUN if largest_function(prog, outs) <= RUN_MAX_OPS else OPT_FAST
    name = f"embed_{uuid.uuid4().hex}"   # unique across processes (the worker's too)
    try:
        mod = st["llvm"].parse_assembly(ir_text(prog, outs, name))
        mod.verify()
        obj = st["tm"][opt].emit_object(mod)
    except Exception as exc:       # llvmlite raises RuntimeError variants
        raise CompilationError(f"could not compile {what}: {exc}") from exc
    return NativeFunction(obj, name, prog.n_in, len(outs),
                          {k: f"{name}_s{i}" for k, i in prog.exports.items()}, opt,
                          2 * prog.memo.slot if prog.memo else 0)


# PYFUNCTYPE: a call keeps the GIL (CFUNCTYPE's drops and takes it again).  A compiled
# function runs for microseconds; dropping the GIL there handed it to any other thread of the
# process with Python to run (the loader thread placing a fence's object code or preparing
# its terms, issue 30's tails), and the stepping thread then waited for it up to
# sys.getswitchinterval() (5 ms) at each of the dozen calls of an event step.  The same
# machine code at the same arguments: the same bits.
_CFUNC = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class Buffer:
    """A float64 array (``array``) and its address (``at``), allocated by ctypes so that the
    address is read once: numpy's ``.ctypes.data`` costs microseconds a call, tens of them
    in a step that finds it cold (an event step; docs/design.md's facts).  A copy (pickle) is a buffer of its own, with
    the same values."""

    __slots__ = ("array", "at", "_raw")

    def __init__(self, size, values=None):
        self._raw = (ctypes.c_double * size)()
        self.array = np.frombuffer(self._raw)
        self.at = ctypes.addressof(self._raw)
        if values is not None:
            self.array[:] = values

    def __reduce__(self):
        return (Buffer, (self.array.size, self.array.tolist()))


class NativeFunction:
    """A compiled program: ``unsafe_real(args, out)`` writes the outputs for a float64 array
    of ``n_in`` arguments into ``out`` (the interface of ``embed.modes.functions.Compiled``)."""

    __slots__ = ("obj", "name", "n_in", "n_out", "exports", "opt", "entries", "memo",
                 "memo_size", "_f", "lazy")

    def __init__(self, obj, name, n_in, n_out, exports=None, opt=None, memo_size=0,
                 load=True):
        self.obj, self.name, self.n_in, self.n_out = obj, name, n_in, n_out
        self.opt = opt              # the codegen level it was compiled at
        self.exports = dict(exports or {})
        self.memo_size = memo_size
        self.lazy = False           # placed at the first read of its entry points (``_unpickled``)
        if load:
            self.load()

    def __getattr__(self, name):
        """``_f``, ``entries`` and ``memo`` of a function unpickled without being placed
        (``_unpickled``): placed at their first read, then read as set (issue 30, start-up:
        an FMU places the shipped functions its start calls, the rest when first called;
        a real-time run all at its initialization, ``place_pending``)."""
        if name in ("_f", "entries", "memo") and self.lazy:
            self.load()
            return object.__getattribute__(self, name)
        raise AttributeError(name)      # (one ``load_later`` has not loaded yet: not here)

    def load(self):
        """Place the object code (``_place``) unless it is placed already (once: two
        threads asking at once get the same placement)."""
        with _LOCK:
            try:
                object.__getattribute__(self, "_f")
            except AttributeError:
                self._place()
                for n in [self.name] + list(self.exports.values()):
                    _PENDING.pop(n, None)

    def _place(self):
        """Place the object code (``elf_load``; else add it to MCJIT's engine) and resolve
        its functions (``load=False`` at construction leaves this to ``load_later``'s
        thread)."""
        name, memo_size = self.name, self.memo_size
        placed = None
        # without LLVM in the process (an FMU's shipped modes): placed here, saving its
        # import; once LLVM is up (something was compiled), MCJIT as before, whose loads
        # release the GIL (the loader thread's, issue 30's tails)
        if not _STATE and os.environ.get(LOADER_ENV, "").lower() != "mcjit":
            placed = elf_load.load(self.obj, _resolve)
        if placed is not None:
            addr = {k: placed.get(v) for k, v in [("", name)] + list(self.exports.items())}
            at = placed.get(f"{name}_memo", 0) if memo_size else None
            if all(addr.values()) and at != 0:
                return self._resolved(addr, at)
        st = _llvm()
        with _LOCK:
            for other in {id(f): f for n, f in _PENDING.items()    # what it names, first
                          if f is not self and n.encode() in self.obj}.values():
                other.load()
            _helpers(st, self.obj)
            st["engine"].add_object_file(st["llvm"].ObjectFileRef.from_data(self.obj))
            st["engine"].finalize_object()
            addr = {k: st["engine"].get_function_address(v)
                    for k, v in [("", name)] + list(self.exports.items())}
            at = st["engine"].get_global_value_address(f"{name}_memo") if memo_size else None
        self._resolved(addr, at)

    def _resolved(self, addr, at):
        name, memo_size = self.name, self.memo_size
        if not all(addr.values()) or at == 0:
            raise CompilationError(f"compiled function {name} did not load")
        self._f = _CFUNC(addr.pop(""))
        self.entries = {k: _CFUNC(a) for k, a in addr.items()}   # called programs, by name
        # the memo (``registers.Memo``: both remembered evaluations, as bits), or None
        self.memo = None if at is None else \
            np.frombuffer((ctypes.c_int64 * memo_size).from_address(at), dtype=np.int64)

    def unsafe_real(self, args, out):
        self._f(args.ctypes.data, out.ctypes.data)

    def __call__(self, args):
        args = np.ascontiguousarray(args, dtype=np.float64)
        if args.shape != (self.n_in,):
            raise CompilationError(f"compiled function called with {args.shape} arguments, "
                                   f"expects {self.n_in}")
        out = np.empty(self.n_out)
        self._f(args.ctypes.data, out.ctypes.data)
        return out

    def __reduce__(self):          # object code: loads in another process without compiling
        return (_unpickled, (self.obj, self.name, self.n_in, self.n_out, self.exports,
                             self.opt, self.memo_size))


_DEFER = threading.local()


_PENDING = {}      # symbol name -> a NativeFunction unpickled, not placed yet, defining it


def _unpickled(*args):
    """A NativeFunction unpickled: inside ``deferred_loads``, listed there (for the loader
    thread); else placed when it is first called (``NativeFunction.__getattr__``; a function
    another one names, when that one is placed: ``_resolve``)."""
    pending = getattr(_DEFER, "pending", None)
    f = NativeFunction(*args, load=False)
    if pending is not None:
        pending.append(f)
    else:
        f.lazy = True
        with _LOCK:
            for n in [f.name] + list(f.exports.values()):
                _PENDING.setdefault(n, f)
    return f


def place_pending():
    """Place now every function unpickled and not placed yet (``_PENDING``): a real-time
    run's initialization, so that no step pays a placement (an offline run's first calls
    do: 0.1 ms a function)."""
    while True:
        with _LOCK:
            f = next(iter(_PENDING.values()), None)
        if f is None:
            return
        f.load()


@contextlib.contextmanager
def deferred_loads():
    """Functions unpickled inside (in this thread) are not loaded: yields the list of them,
    for ``load_later``.  Loading object code costs 0.1-1 ms of a step that finds the caches
    cold (docs/design.md); the background worker's answers are decoded in the stepping thread,
    and their functions loaded in another (issue 30, tails)."""
    outer = getattr(_DEFER, "pending", None)
    _DEFER.pending = pending = []
    try:
        yield pending
    finally:
        _DEFER.pending = outer
