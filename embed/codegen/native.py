"""A straight-line program (``embed.codegen.program``) compiled to machine code with llvmlite.

One LLVM function ``void f(double *in, double *out)`` whose instructions are the program's
operations, in order: no symbolic pass runs at compile time, so compiling costs time in
proportion to the program.  The compiled function is called through ctypes with the
addresses of preallocated arrays; it pickles as object code (the background worker's
answers, gillespie2005 Sec 6.2) and loads without compiling again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import uuid

import numpy as np

from . import ldlt, pivoting, reduction
from ..base.errors import CompilationError
from .program import arity

_LOCK = threading.Lock()
_STATE = {}
_LIBM = ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "pow")
_INTRINSIC = {"sin": "llvm.sin.f64", "cos": "llvm.cos.f64", "exp": "llvm.exp.f64",
              "log": "llvm.log.f64", "sqrt": "llvm.sqrt.f64", "fabs": "llvm.fabs.f64"}
# codegen optimization level, measured for the unrolled LDL^T solve of a 40 x 40 system (26 000
# operations): level 0 compiles in 0.1 s and runs in 22 us, level 1 in 1.6 s and 8 us (2 and 3:
# no faster call).  Level 0 where a compile is on the stepping path, 1 in the background worker.
OPT_FAST, OPT_RUN = 0, 1
RUN_MAX_OPS = 20000   # beyond, level 1 takes seconds (its time grows faster than the function)


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
            # selector does as well on it: level 1 compiled 35 % faster, ran as fast
            llvm.set_option("", "-fast-isel")
            llvm.set_option("", "-enable-misched=false")
            libm = ctypes.CDLL(ctypes.util.find_library("m"))
            libc = ctypes.CDLL(ctypes.util.find_library("c"))
            for lib, names in ((libm, _LIBM), (libc, ("memcpy", "memcmp"))):
                for name in names:
                    llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
            target = llvm.Target.from_default_triple()
            tms = {o: target.create_target_machine(opt=o, jit=True, **_host(llvm))
                   for o in (OPT_FAST, OPT_RUN)}
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tms[OPT_FAST])
            for exact, name in ((False, ldlt.NAME), (True, ldlt.EXACT)):   # ``Program.ldl_solve``
                llvm.add_symbol(name, _optimized(llvm, tms[OPT_RUN], engine,
                                                 ldlt.module(exact), name))
            for mod in (reduction, pivoting):        # ``Program.reduced``, ``pivoted``
                llvm.add_symbol(mod.NAME, _optimized(llvm, tms[OPT_RUN], engine, mod.module(),
                                                     mod.NAME))
            _STATE.update(llvm=llvm, tm=tms, engine=engine)
    return _STATE


def _optimized(llvm, tm, engine, text, name):
    """The address of function ``name`` of the IR ``text``, optimized by LLVM's O3 pipeline
    (loops vectorized) and loaded into ``engine``: a helper the programs call by name."""
    mod = llvm.parse_assembly(text)
    mod.verify()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    engine.add_object_file(llvm.ObjectFileRef.from_data(tm.emit_object(mod)))
    engine.finalize_object()
    return engine.get_function_address(name)


def _host(llvm):
    """This processor and its features (AVX's three-operand forms, more registers): the
    40-link chain's step program 14 % smaller, its step 9 % faster than for generic x86-64.
    No fused multiply-add (the IR carries no ``contract`` flag): the same results to the
    bit.  The code runs only on this machine (the worker compiles on it too)."""
    try:
        return {"cpu": llvm.get_host_cpu_name(),
                "features": llvm.get_host_cpu_features().flatten()}
    except RuntimeError:        # features unknown on this platform: generic code
        return {}


_DECL = {"pow": "declare double @pow(double, double)",
         "atan2": "declare double @atan2(double, double)",
         "ldlt": f"declare void @{ldlt.NAME}(ptr, ptr, ptr, i64, i64)\n"
                 f"declare void @{ldlt.EXACT}(ptr, ptr, ptr, i64, i64)",
         "reduce": f"declare void @{reduction.NAME}({', '.join(['ptr'] * 8)}, i64, i64)",
         "partition": f"declare void @{pivoting.NAME}(ptr, ptr, i64, i64, double)"}
_DECL.update(memcpy="declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
             memcmp="declare i32 @memcmp(ptr, ptr, i64)")
COPY_MIN = 4          # a run of arguments or call outputs this long is one memcpy (``_stores``)
_BINOP = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}


def _ir(prog, outs, name):
    """The LLVM IR text of ``prog`` writing the registers ``outs`` to ``out``: one line an
    operation (written as text: building llvmlite.ir objects took 3x as long); the programs
    it calls are functions of their own (``noinline``: compiled once, called at each stage);
    its memo (``program.Memo``), a global array of both remembered evaluations (i64 bits)."""
    used, subs, text = set(), {}, []
    memo = prog.memo and (f"@{name}_memo", prog.memo)
    _define(prog, outs, name, name, subs, text, used, memo)
    decls = [_DECL.get(op, f"declare double @{_INTRINSIC.get(op, op)}(double)")
             for op in sorted(used)]
    if memo:
        decls.append(f"{memo[0]} = global [{2 * memo[1].slot} x i64] zeroinitializer")
    return "\n".join(decls + text + [""])


def _define(p, o, fname, top, subs, text, used, memo):
    """Append to ``text`` the functions of the programs ``p`` calls (each once: ``subs``
    maps them to their names), then ``p``'s own, named ``fname`` (``_ir``).  A module-level
    function, not a closure: a nested one that calls itself is a reference cycle, which kept
    the megabytes of IR text alive until the cyclic collector freed them, 0.4-0.6 ms of
    whichever step it ran in."""
    for i, sub in enumerate(p.subs):
        if id(sub) in subs:
            continue
        if not isinstance(sub, tuple):          # compiled before: declared, called by name
            subs[id(sub)] = sub.name
            text.append(f"declare void @{sub.name}(ptr, ptr)")
            continue
        subs[id(sub)] = f"{fname}_s{i}"
        _define(sub[0], sub[1], subs[id(sub)], top, subs, text, used, memo)
    text.append(_function(p, o, fname, fname != top, [subs[id(s)] for s in p.subs], used,
                          memo))


def _spans(positions):
    """[(first, length)] of the maximal runs of consecutive integers in ``positions``."""
    spans = []
    for p in positions:
        if spans and spans[-1][0] + spans[-1][1] == p:
            spans[-1][1] += 1
        else:
            spans.append([p, 1])
    return spans


def _memo_lookup(d, memo):
    """IR of a remembered call (``Program.call`` with ``memo``), its arguments stored in
    ``{d}in``: the ones the memo's program reads compared, bit for bit (memcmp, run by run),
    with both remembered evaluations; where one holds them its values are copied to the
    call's outputs and the call is skipped (a branch to the label ``{d}J``, which the rest
    of the function follows).  ``{d}w`` is the evaluation that ``remember`` then replaces:
    the one not found."""
    g, mm = memo
    lines, spans, key = [], _spans(mm.reads), len(mm.reads)
    for s in (0, 1):
        base = s * mm.slot
        lines.append(f"  {d}v{s}p = getelementptr inbounds i64, ptr {g}, i64 {base}\n"
                     f"  {d}v{s} = load i64, ptr {d}v{s}p\n"
                     f"  {d}h{s}_0 = icmp eq i64 {d}v{s}, 1")
        at = 0
        for j, (first, size) in enumerate(spans):
            lines.append(f"  {d}m{s}_{j}p = getelementptr inbounds i64, ptr {g}, "
                         f"i64 {base + 1 + at}\n"
                         f"  {d}m{s}_{j}a = getelementptr inbounds double, ptr {d}in, i64 {first}\n"
                         f"  {d}m{s}_{j} = call i32 @memcmp(ptr {d}m{s}_{j}a, ptr {d}m{s}_{j}p, "
                         f"i64 {8 * size})\n"
                         f"  {d}e{s}_{j} = icmp eq i32 {d}m{s}_{j}, 0\n"
                         f"  {d}h{s}_{j + 1} = and i1 {d}h{s}_{j}, {d}e{s}_{j}")
            at += size
    h0, h1 = f"{d}h0_{len(spans)}", f"{d}h1_{len(spans)}"
    lab = d[1:]
    lines.append(f"  {d}hit = or i1 {h0}, {h1}\n"
                 f"  {d}w = zext i1 {h0} to i64\n"
                 f"  {d}at = select i1 {h0}, i64 {1 + key}, i64 {mm.slot + 1 + key}\n"
                 f"  br i1 {d}hit, label %{lab}H, label %{lab}M\n{lab}H:\n"
                 f"  {d}f = getelementptr inbounds i64, ptr {g}, i64 {d}at\n"
                 f"  call void @llvm.memcpy.p0.p0.i64(ptr {d}out, ptr {d}f, i64 {8 * mm.size}, "
                 f"i1 false)\n"
                 f"  br label %{lab}J\n{lab}M:")
    return lines


def _memo_store(prog, d, regs, val, memo, slot_reg, used):
    """IR of ``Program.remember``: the valid flag, the arguments the memo's program reads and
    the values (``regs``: arguments, then values), as bits, into the evaluation ``slot_reg``
    (an i64 register: the one this function's lookup did not find; 0 where it has none)."""
    g, mm = memo
    n_args = len(regs) - mm.size
    words = [regs[i] for i in mm.reads] + list(regs[n_args:])
    lines = [f"  {d}b = mul i64 {slot_reg}, {mm.slot}\n"
             f"  {d}s = getelementptr inbounds i64, ptr {g}, i64 {d}b\n"
             f"  store i64 1, ptr {d}s"]
    return lines + _stores(prog, f"{d}k", f"{d}s", [(1 + j, r) for j, r in enumerate(words)],
                           val, used)


def _stores(prog, tag, ptr, items, val, used):
    """IR storing registers into the buffer ``ptr``: ``items`` = [(position, register)];
    ``COPY_MIN`` or more consecutive arguments of the function, or outputs of one call,
    going to consecutive positions (the parameters and the partition passed on to each
    stage, a row of A_u into the activation system) are one memcpy from where they are,
    whose loads are then never emitted.  ``tag`` names the IR values (unique to the caller)."""
    def source(r):
        if r < prog.n_in:
            return "%in", r
        op = prog.ops[r - prog.n_in]
        return (f"%r{op[1]}out", op[2]) if op[0] == "result" else None

    lines, k = [], 0
    while k < len(items):
        j0, s0 = items[k][0], source(items[k][1])
        e = k + 1
        while s0 is not None and e < len(items) and items[e][0] == j0 + e - k \
                and source(items[e][1]) == (s0[0], s0[1] + e - k):
            e += 1
        if e - k >= COPY_MIN:
            used.add("memcpy")
            lines.append(f"  {tag}m{j0} = getelementptr inbounds double, ptr {ptr}, i64 {j0}\n"
                         f"  {tag}n{j0} = getelementptr inbounds double, ptr {s0[0]}, "
                         f"i64 {s0[1]}\n  call void @llvm.memcpy.p0.p0.i64(ptr {tag}m{j0}, "
                         f"ptr {tag}n{j0}, i64 {8 * (e - k)}, i1 false)")
        else:
            e = k + 1
            lines.append(f"  {tag}{j0} = getelementptr inbounds double, ptr {ptr}, i64 {j0}\n"
                         f"  store double {val[items[k][1]]}, ptr {tag}{j0}")
        k = e
    return lines


def _run(prog, regs):
    """(call register, first output) where the registers ``regs`` are consecutive outputs
    of one call (the unconstrained terms b, A_u), read where they are; else None."""
    ops = [prog.ops[r - prog.n_in] if r >= prog.n_in else ("",) for r in regs]
    if ops and all(op[0] == "result" for op in ops) and len({op[1] for op in ops}) == 1 \
            and [op[2] for op in ops] == list(range(ops[0][2], ops[0][2] + len(ops))):
        return ops[0][1:]
    return None


def _result_runs(prog):
    """{array: (call register, first output)} for the gathered arrays that are consecutive
    outputs of one call (a permuted mass matrix, say): gathered from the call's outputs,
    not stored again."""
    runs = {aid: _run(prog, regs) for aid, regs in enumerate(prog.arrays)}
    return {aid: r for aid, r in runs.items() if r is not None}


def _function(prog, outs, name, internal, sub_names, used, memo):
    """One function's IR text (``_ir``); a called one (``internal``) is never inlined, and
    exported: ``NativeFunction.entry`` calls it on its own (a mode's monitors alone)."""
    n_in = prog.n_in
    val = [f"%r{i}" for i in range(n_in + len(prog.ops))]
    lines = [f"  %p{i} = getelementptr inbounds double, ptr %in, i64 {i}\n"
             f"  %r{i} = load double, ptr %p{i}" for i in range(n_in)]
    stored = set()
    allocas = [f"  %a{i} = alloca [{len(arr)} x double]" for i, arr in enumerate(prog.arrays)]
    live = prog.live(outs)
    runs = _result_runs(prog)
    slot = "0"                # the memo's evaluation that ``remember`` replaces
    for k, (op, a, c) in enumerate(prog.ops):
        r = n_in + k
        if not live[r]:
            continue
        d = f"%r{r}"
        if op == "const":
            val[r] = repr(float(a)) if a == a and abs(a) != float("inf") else \
                "0x" + np.float64(a).tobytes()[::-1].hex().upper()
            continue
        if op in _BINOP:
            lines.append(f"  {d} = {_BINOP[op]} double {val[a]}, {val[c]}")
        elif op == "gather" and a in runs:      # the outputs of a call, read where they are
            token, j0 = runs[a]
            lines.append(f"  {d}i = fptosi double {val[c]} to i64\n"
                         f"  {d}j = add i64 {d}i, {j0}\n"
                         f"  {d}p = getelementptr inbounds double, ptr %r{token}out, i64 {d}j\n"
                         f"  {d} = load double, ptr {d}p")
        elif op == "gather":          # the array is stored at its first gather
            if a not in stored:
                stored.add(a)
                lines += _stores(prog, f"%a{a}e", f"%a{a}", list(enumerate(prog.arrays[a])),
                                 val, used)
            lines.append(f"  {d}i = fptosi double {val[c]} to i64\n"
                         f"  {d}p = getelementptr inbounds [{len(prog.arrays[a])} x double], "
                         f"ptr %a{a}, i64 0, i64 {d}i\n"
                         f"  {d} = load double, ptr {d}p")
        elif op in ("call", "mcall"):  # arguments stored, the function called
            allocas.append(f"  {d}in = alloca [{len(c)} x double]\n"
                           f"  {d}out = alloca [{arity(prog.subs[a])[1]} x double]")
            lines += _stores(prog, f"{d}a", f"{d}in", list(enumerate(c)), val, used)
            if op == "mcall":
                used.update(("memcmp", "memcpy"))
                lines += _memo_lookup(d, memo)
                slot = f"{d}w"
            lines.append(f"  call void @{sub_names[a]}(ptr {d}in, ptr {d}out)")
            if op == "mcall":
                lines.append(f"  br label %{d[1:]}J\n{d[1:]}J:")
        elif op == "remember":
            lines += _memo_store(prog, d, c, val, memo, slot, used)
        elif op == "ldlt":             # A's lower triangle and the right-hand sides stored
            k, nrhs, exact = a         # (by rows), ``ldlt.NAME`` (or ``EXACT``) called
            used.add(op)
            allocas.append(f"  {d}A = alloca [{k * k} x double]\n"
                           f"  {d}out = alloca [{k * nrhs} x double]\n"
                           f"  {d}w = alloca [{k} x double]")
            tri = k * (k + 1) // 2
            lines += _stores(prog, f"{d}p", f"{d}A", list(zip(
                [i * k + j for i in range(k) for j in range(i + 1)], c[:tri])), val, used)
            lines += _stores(prog, f"{d}q", f"{d}out", list(enumerate(c[tri:])), val, used)
            lines.append(f"  call void @{ldlt.EXACT if exact else ldlt.NAME}(ptr {d}A, "
                         f"ptr {d}out, ptr {d}w, i64 {k}, "
                         f"i64 {nrhs})")
        elif op == "reduce":           # ``Program.reduced``: ``reduction.NAME``, then the
            n, m, exact = a            # looped LDL^T on the reduced system it formed
            n_i, nv = n - m, n + n * n
            used.update((op, "ldlt"))
            allocas.append(f"  {d}A = alloca [{n_i * n_i} x double]\n"
                           f"  {d}out = alloca [{n_i + m * n_i + m} x double]\n"
                           f"  {d}w = alloca [{n_i} x double]\n"
                           f"  {d}in = alloca [{len(c)} x double]")
            run = _run(prog, c[:nv])
            vp = f"{d}in"
            if run is not None:        # b, A_u read in the terms call's outputs
                vp = f"{d}v"
                lines.append(f"  {vp} = getelementptr inbounds double, ptr %r{run[0]}out, "
                             f"i64 {run[1]}")
            lines += _stores(prog, f"{d}a", f"{d}in", [(j, e) for j, e in enumerate(c)
                                                      if run is None or j >= nv], val, used)
            ptrs = [f"{d}{x}" for x in ("P", "D", "g", "y", "z")]
            lines += [f"  {x} = getelementptr inbounds double, ptr {d}{arr}, i64 {i}"
                      for x, (arr, i) in zip(ptrs, [("in", nv), ("in", nv + n),
                                                    ("in", nv + n + m * n_i), ("out", n_i),
                                                    ("out", n_i + m * n_i)])]
            lines.append(f"  call void @{reduction.NAME}(ptr {vp}, ptr {ptrs[0]}, "
                         f"ptr {ptrs[1]}, ptr {ptrs[2]}, ptr {d}A, ptr {d}out, ptr {ptrs[3]}, "
                         f"ptr {ptrs[4]}, i64 {n}, i64 {m})\n"
                         f"  call void @{ldlt.EXACT if exact else ldlt.NAME}(ptr {d}A, "
                         f"ptr {d}out, ptr {d}w, i64 {n_i}, i64 1)")
        elif op == "partition":        # ``Program.pivoted``: B stored, ``pivoting.NAME`` called
            m, n, keep = a
            used.add(op)
            allocas.append(f"  {d}B = alloca [{m * n} x double]\n"
                           f"  {d}out = alloca [{2 * m + 2 * n} x double]")
            lines += _stores(prog, f"{d}b", f"{d}B", list(enumerate(c)), val, used)
            lines.append(f"  call void @{pivoting.NAME}(ptr {d}B, ptr {d}out, i64 {m}, i64 {n}, "
                         f"double 0x{np.float64(keep).tobytes()[::-1].hex().upper()})")
        elif op == "result":
            lines.append(f"  {d}p = getelementptr inbounds double, ptr %r{a}out, i64 {c}\n"
                         f"  {d} = load double, ptr {d}p")
        elif op in ("gt", "eq"):
            lines.append(f"  {d}c = fcmp {'ogt' if op == 'gt' else 'oeq'} double {val[a]}, {val[c]}\n"
                         f"  {d} = uitofp i1 {d}c to double")
        elif op == "select":
            lines.append(f"  {d}c = fcmp une double {val[a]}, 0.0\n"
                         f"  {d} = select i1 {d}c, double {val[c[0]]}, double {val[c[1]]}")
        elif op == "neg":
            lines.append(f"  {d} = fneg double {val[a]}")
        elif op in ("max", "min"):          # nan in either argument gives nan
            x, y = val[a], val[c]
            lines.append(f"  {d}c = fcmp {'ogt' if op == 'max' else 'olt'} double {x}, {y}\n"
                         f"  {d}s = select i1 {d}c, double {x}, double {y}\n"
                         f"  {d}n = fcmp uno double {x}, {x}\n"
                         f"  {d} = select i1 {d}n, double {x}, double {d}s")
        elif op == "sign":
            x = val[a]
            lines.append(f"  {d}p = fcmp ogt double {x}, 0.0\n"
                         f"  {d}m = fcmp olt double {x}, 0.0\n"
                         f"  {d}z = fmul double {x}, 0.0\n"
                         f"  {d}s = select i1 {d}m, double -1.0, double {d}z\n"
                         f"  {d} = select i1 {d}p, double 1.0, double {d}s")
        elif op in ("pow", "atan2"):
            used.add(op)
            lines.append(f"  {d} = call double @{op}(double {val[a]}, double {val[c]})")
        else:
            fn = _INTRINSIC.get(op, op)
            used.add(op)
            lines.append(f"  {d} = call double @{fn}(double {val[a]})")
    lines += _stores(prog, "%o", "%out", list(enumerate(outs)), val, used)
    head = f"define void @{name}(ptr noalias %in, ptr noalias %out){' noinline' * internal} {{"
    return "\n".join([head, "entry:"] + allocas + lines + ["  ret void", "}"])


def largest_function(prog, outs):
    """The operations of the largest function ``prog`` compiles to (itself or a called one)."""
    return max([sum(prog.live(outs))] + [sum(sub[0].live(sub[1])) for sub in prog.subs
                                         if isinstance(sub, tuple)])


def compile_program(prog, outs, what, opt=None):
    """The ``NativeFunction`` computing registers ``outs`` of ``prog`` at codegen level
    ``opt``; None: ``OPT_RUN`` unless a function has more than ``RUN_MAX_OPS`` operations."""
    st = _llvm()
    if opt is None:
        opt = OPT_RUN if largest_function(prog, outs) <= RUN_MAX_OPS else OPT_FAST
    name = f"embed_{uuid.uuid4().hex}"   # unique across processes (the worker's too)
    try:
        mod = st["llvm"].parse_assembly(_ir(prog, outs, name))
        mod.verify()
        obj = st["tm"][opt].emit_object(mod)
    except Exception as exc:       # llvmlite raises RuntimeError variants
        raise CompilationError(f"could not compile {what}: {exc}") from exc
    return NativeFunction(obj, name, prog.n_in, len(outs),
                          {k: f"{name}_s{i}" for k, i in prog.exports.items()}, opt,
                          2 * prog.memo.slot if prog.memo else 0)


_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class Buffer:
    """A float64 array (``array``) and its address (``at``), allocated by ctypes so that the
    address is read once: numpy's ``.ctypes.data`` costs 1.5 us a call warm and 30-40 us in a
    step that finds it cold (an event step).  A copy (pickle) is a buffer of its own, with
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
                 "memo_size", "_f")

    def __init__(self, obj, name, n_in, n_out, exports=None, opt=None, memo_size=0):
        self.obj, self.name, self.n_in, self.n_out = obj, name, n_in, n_out
        self.opt = opt              # the codegen level it was compiled at
        self.exports = dict(exports or {})
        self.memo_size = memo_size
        st = _llvm()
        with _LOCK:
            st["engine"].add_object_file(st["llvm"].ObjectFileRef.from_data(obj))
            st["engine"].finalize_object()
            addr = {k: st["engine"].get_function_address(v)
                    for k, v in [("", name)] + list(self.exports.items())}
            at = st["engine"].get_global_value_address(f"{name}_memo") if memo_size else None
        if not all(addr.values()) or at == 0:
            raise CompilationError(f"compiled function {name} did not load")
        self._f = _CFUNC(addr.pop(""))
        self.entries = {k: _CFUNC(a) for k, a in addr.items()}   # called programs, by name
        # the memo (``program.Memo``: both remembered evaluations, as bits), or None
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
        return (NativeFunction, (self.obj, self.name, self.n_in, self.n_out, self.exports,
                                 self.opt, self.memo_size))
