"""The LLVM IR text of a straight-line program (``embed.codegen.program``), compiled by
``embed.codegen.native``: one LLVM instruction an operation, in order, no symbolic pass.
"""

from __future__ import annotations

import numpy as np

from . import ldlt, pivoting, reduction
from .program import arity

INTRINSIC = {"sin": "llvm.sin.f64", "cos": "llvm.cos.f64", "exp": "llvm.exp.f64",
             "log": "llvm.log.f64", "sqrt": "llvm.sqrt.f64", "fabs": "llvm.fabs.f64"}
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


def ir_text(prog, outs, name):
    """The LLVM IR text of ``prog`` writing the registers ``outs`` to ``out``: one line an
    operation (written as text: faster to build than llvmlite.ir objects, docs/design.md); the
    programs it calls are functions of their own (``noinline``: compiled once, called at each
    stage); its memo (``registers.Memo``), a global array of both remembered evaluations (i64
    bits)."""
    used, subs, text = set(), {}, []
    memo = prog.memo and (f"@{name}_memo", prog.memo)
    _define(prog, outs, name, name, subs, text, used, memo)
    decls = [_DECL.get(op, f"declare double @{INTRINSIC.get(op, op)}(double)")
             for op in sorted(used)]
    if memo:
        decls.append(f"{memo[0]} = global [{2 * memo[1].slot} x i64] zeroinitializer")
    return "\n".join(decls + text + [""])


def _define(p, o, fname, top, subs, text, used, memo):
    """Append to ``text`` the functions of the programs ``p`` calls (each once: ``subs``
    maps them to their names), then ``p``'s own, named ``fname`` (``ir_text``).  A module-level
    function, not a closure: a nested one that calls itself is a reference cycle, which kept
    the megabytes of IR text alive until the cyclic collector freed them, a pause of
    whichever step it ran in (docs/design.md's facts)."""
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
            # the bits in hexadecimal: a float's shortest repr ("2e-05", "1e+16") is not
            # LLVM's syntax for a double
            val[r] = "0x" + np.float64(a).tobytes()[::-1].hex().upper()
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
            fn = INTRINSIC.get(op, op)
            used.add(op)
            lines.append(f"  {d} = call double @{fn}(double {val[a]})")
    lines += _stores(prog, "%o", "%out", list(enumerate(outs)), val, used)
    head = f"define void @{name}(ptr noalias %in, ptr noalias %out){' noinline' * internal} {{"
    return "\n".join([head, "entry:"] + allocas + lines + ["  ret void", "}"])


def largest_function(prog, outs):
    """The operations of the largest function ``prog`` compiles to (itself or a called one)."""
    return max([sum(prog.live(outs))] + [sum(sub[0].live(sub[1])) for sub in prog.subs
                                         if isinstance(sub, tuple)])
