"""The looped LDL^T solve that compiled programs call for systems beyond ``UNROLL_MAX``.

``embed_ldlt(A, B, w, n, nrhs)``: A (n x n by rows, its lower triangle read) symmetric and
definite, or quasi-definite ([A_u B^T; B 0] with A_u definite: every leading block is
nonsingular); it is overwritten by L (unit lower, below the diagonal) and D (on it), and the
``nrhs`` right-hand sides B (each n long, one after the other) by the solutions; w is n
doubles of scratch.  No pivoting: a zero pivot gives inf or nan, which the caller sees.

An unrolled LDL^T (``Program.ldl_solve``) is straight-line code that grows like n^3: 200 KB of
machine code for the 38 x 38 reduced mass matrix of the 40-link chain's point pin, which a
step that switches into the mode reads cold (the first call of a mode's program costs what
reading its code costs).  This one is a few kilobytes, shared by every program in the
process, so it is warm whichever mode is stepping; LLVM's loop vectorizer (the reductions
reassociated) makes it as fast as the unrolled one from n = 30 on (3.1 against 4.0 us at
n = 38).  It is compiled once a process (``embed.native``) and called by name.
"""

from __future__ import annotations

import llvmlite.ir as ir

NAME = "embed_ldlt"
UNROLL_MAX = 24       # Program.ldl_solve unrolls up to this size (faster there), calls beyond
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


def module():
    """The IR text of ``embed_ldlt`` (LDL^T by columns, eq 15-16 of the embedding: the same
    factorization as ``Program.ldl_solve``, its dot products vectorized)."""
    dbl, i64, ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
    mod = ir.Module(NAME)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, i64, i64]), NAME)
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
        return _loop(b, zero, hi, lambda k, acc: b.fadd(acc, b.fmul(ld(p, k), ld(q, k), flags=_FP),
                                                        flags=_FP), ir.Constant(dbl, 0.0))

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

    def solve(r, _):                  # L y = b, z = D^-1 y, L^T x = z (by rows of L)
        x = b.gep(B, [b.mul(r, n)], inbounds=True, source_etype=dbl)
        _loop(b, zero, n, lambda i, _: st(b.fsub(ld(x, i), dot(row(i), x, i)), x, i))
        _loop(b, zero, n, lambda i, _: st(b.fdiv(ld(x, i), ld(row(i), i)), x, i))

        def back(i, _):
            ri, xi = row(i), ld(x, i)
            _loop(b, zero, i, lambda k, _: st(b.fsub(ld(x, k), b.fmul(ld(ri, k), xi, flags=_FP),
                                                     flags=_FP), x, k))
        _loop(b, zero, n, back, down=True)

    _loop(b, zero, nrhs, solve)
    b.ret_void()
    return str(mod)
