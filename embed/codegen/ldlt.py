"""The looped LDL^T solves that compiled programs call for systems beyond ``UNROLL_MAX``.

``embed_ldlt(A, B, w, n, nrhs)``: A (n x n by rows, its lower triangle read) symmetric and
definite, or quasi-definite ([A_u B^T; B 0] with A_u definite: every leading block is
nonsingular); it is overwritten by L (unit lower, below the diagonal) and D (on it), and the
``nrhs`` right-hand sides B (each n long, one after the other) by the solutions; w is n
doubles of scratch.  No pivoting: a zero pivot gives inf or nan, which the caller sees.

An unrolled LDL^T (``Program.ldl_solve``) is straight-line code that grows like n^3: 25 KB of
machine code at n = 18 and 200 KB for the 38 x 38 reduced mass matrix of the 40-link chain's
point pin, which a step that switches into the mode reads cold (the first call of a mode's
program costs what reading its code costs).  A looped one is a few kilobytes, shared by
every program in the process, so it is warm whichever mode is stepping:

- ``embed_ldlt_exact`` (``EXACT``, up to ``EXACT_MAX`` unknowns): the unrolled solve's
  operations in its order, nothing reassociated or fused (its back substitution by rows of
  L^T, x_i = y_i (1 / d_i) - sum_{k > i} L_ki x_k): bit for bit the unrolled solve, a little
  slower a call and a fraction of its code (docs/design.md, "One compiled call a step");
- ``embed_ldlt`` (``NAME``, beyond): its dot products reassociated, which LLVM's loop
  vectorizer turns into vector code, faster than the unrolled one for the larger systems
  (the figures: docs/design.md, "One compiled call a step").

Both are compiled once a process (``embed.codegen.native``) and called by name.
"""

from __future__ import annotations

from ..base.lazy import LazyModule

ir = LazyModule("llvmlite.ir")   # imported when a helper is built: not at an FMU's start

NAME = "embed_ldlt"
EXACT = "embed_ldlt_exact"
UNROLL_MAX = 8        # Program.ldl_solve unrolls up to this size (as fast, as small), calls beyond
EXACT_MAX = 24        # ... ``EXACT`` up to this size (the unrolled results), ``NAME`` beyond
_FP = ("reassoc", "contract")     # the dot products may be reordered (vectorized) and fused


def _loop(b, lo, hi, body, init=None, down=False):
    """``for i in range(lo, hi)`` (``down``: from hi - 1 to lo) in IR: ``body(i, acc)`` emits
    the loop body and returns the new value of a carried ``acc`` (starting at ``init``)."""
    i64 = ir.IntType(64)
    pre = b.block
    head, body_b, out = (b.append_basic_block(s) for s in ("head", "body", "exit"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(i64)
    i.add_incoming(hi if down else lo, pre)
    acc = None
    if init is not None:
        acc = b.phi(init.type)
        acc.add_incoming(init, pre)
    b.cbranch(b.icmp_signed(">", i, lo) if down else b.icmp_signed("<", i, hi), body_b, out)
    b.position_at_end(body_b)
    idx = b.sub(i, ir.Constant(i64, 1)) if down else i
    new = body(idx, acc)
    i.add_incoming(idx if down else b.add(i, ir.Constant(i64, 1)), b.block)
    if acc is not None:
        acc.add_incoming(new, b.block)
    b.branch(head)
    b.position_at_end(out)
    return acc


def module(exact=False):
    """The IR text of ``embed_ldlt`` (LDL^T by columns, eq 15-16 of the embedding: the same
    factorization as ``Program.ldl_solve``, its dot products vectorized), or with ``exact``
    of ``embed_ldlt_exact`` (nothing reordered: the unrolled solve's results)."""
    dbl, i64, ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
    name, fp = (EXACT, ()) if exact else (NAME, _FP)
    mod = ir.Module(name)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, i64, i64]), name)
    A, B, w, n, nrhs = fn.args
    for a in (A, B, w):
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero, one = ir.Constant(i64, 0), ir.Constant(i64, 1)

    def ld(p, k):
        return b.load(b.gep(p, [k], inbounds=True, source_etype=dbl), typ=dbl)

    def st(v, p, k):
        b.store(v, b.gep(p, [k], inbounds=True, source_etype=dbl))

    def dot(p, q, hi):
        """sum_{k < hi} p[k] q[k]"""
        return _loop(b, zero, hi, lambda k, acc: b.fadd(acc, b.fmul(ld(p, k), ld(q, k), flags=fp),
                                                        flags=fp), ir.Constant(dbl, 0.0))

    def row(i):
        return b.gep(A, [b.mul(i, n)], inbounds=True, source_etype=dbl)

    def column(j, _):                 # w_k = L_jk d_k; d_j; L_ij (i > j)
        rj = row(j)
        _loop(b, zero, j, lambda k, _: st(b.fmul(ld(rj, k), ld(row(k), k)), w, k))
        d = b.fsub(ld(rj, j), dot(rj, w, j))
        st(d, rj, j)
        inv = b.fdiv(ir.Constant(dbl, 1.0), d)
        _loop(b, b.add(j, one), n,
              lambda i, _: st(b.fmul(b.fsub(ld(row(i), j), dot(row(i), w, j)), inv), row(i), j))

    _loop(b, zero, n, column)

    def solve(r, _):                  # L y = b, z = D^-1 y, L^T x = z
        x = b.gep(B, [b.mul(r, n)], inbounds=True, source_etype=dbl)
        _loop(b, zero, n, lambda i, _: st(b.fsub(ld(x, i), dot(row(i), x, i)), x, i))
        if exact:                     # x_i = y_i (1 / d_i) - sum_{k > i} L_ki x_k, k ascending
            def back_exact(i, _):
                s = _loop(b, b.add(i, one), n, lambda k, acc: b.fadd(
                    acc, b.fmul(ld(row(k), i), ld(x, k))), ir.Constant(dbl, 0.0))
                inv = b.fdiv(ir.Constant(dbl, 1.0), ld(row(i), i))
                st(b.fsub(b.fmul(ld(x, i), inv), s), x, i)
            _loop(b, zero, n, back_exact, down=True)
            return
        _loop(b, zero, n, lambda i, _: st(b.fdiv(ld(x, i), ld(row(i), i)), x, i))

        def back(i, _):               # by rows of L
            ri, xi = row(i), ld(x, i)
            _loop(b, zero, i, lambda k, _: st(b.fsub(ld(x, k), b.fmul(ld(ri, k), xi, flags=fp),
                                                     flags=fp), x, k))
        _loop(b, zero, n, back, down=True)

    _loop(b, zero, nrhs, solve)
    b.ret_void()
    return str(mod)
