"""The reduced system of the embedding as a looped function that compiled programs call.

gillespie2005 eq 13-16 with T = [I; D] in the partition's order (perm = [ind..., dep...]):
the terms F + F* = b + A_u udot of the unconstrained model, permuted (A_p = P A_u P^T, b_p),
reduce to (T^T A_u T) udot_ind = -T^T (b + A_u g), with g = [0; g_dep] the dependent
accelerations' offset.  ``embed_reduce(v, perm, D, g, A, rhs, MTd, r0d, n, m)``:

- v = [b..., A_u (by rows)...] (n + n^2, the unconstrained terms' outputs, read in place),
  perm (n doubles holding integers), D (m x n_i by rows), g (m);
- A (n_i x n_i by rows): its lower triangle T^T A_u T, rhs (n_i): -T^T r0, with
  r0 = b_p + A_p g; MTd (m x n_i): the dependent rows of A_p T; r0d (m): r0's dependent rows
  (what the multipliers take, Sec 5.4).

Each value is computed by the operations, in the order, of the straight-line code it replaces
(``terms_algebra.reduced``: A_p T = A_p[:, ind] + sum_k A_p[:, dep_k] D_k, then T^T (A_p T),
each sum from its first term on), nothing reassociated or fused: the same results, bit for
bit.  That code is O(n^2 m) operations: 11,000 of the 40-link chain's point pin stage, 130 KB
of machine code that a step switching into the mode reads cold (a third of its cost); this one
is a few kilobytes, shared by every program and warm whichever mode steps.  Compiled once a
process (``embed.codegen.native``) and called by name.
"""

from __future__ import annotations

from ..base.lazy import LazyModule

ir = LazyModule("llvmlite.ir")   # imported when a helper is built: not at an FMU's start

from .ldlt import _loop

NAME = "embed_reduce"
LOOP_MIN = 9          # the reduced system from this many independent speeds on: a call of this
                      # (where ``Program.ldl_solve`` calls its looped solve too)


def module():
    """The IR text of ``embed_reduce`` (the module docstring)."""
    dbl, i64, ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
    mod = ir.Module(NAME)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr] * 8 + [i64, i64]), NAME)
    v, perm, D, g, A, rhs, MTd, r0d, n, m = fn.args
    for a in fn.args[:8]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(i64, 0)
    ni = b.sub(n, m)
    p = b.alloca(i64, n)                  # the permutation as integers

    def ld(q, k, t=dbl):
        return b.load(b.gep(q, [k], inbounds=True, source_etype=t), typ=t)

    def st(x, q, k, t=dbl):
        b.store(x, b.gep(q, [k], inbounds=True, source_etype=t))

    _loop(b, zero, n, lambda j, _: st(b.fptosi(ld(perm, j), i64), p, j, i64))
    Au = b.gep(v, [n], inbounds=True, source_etype=dbl)

    def ap(r, j):
        """A_p[r][j] = A_u[perm r][perm j]"""
        return ld(Au, b.add(b.mul(ld(p, r, i64), n), ld(p, j, i64)))

    def mt(r, j):
        """(A_p T)[r][j] = A_p[r][j] + sum_k A_p[r][n_i + k] D[k][j]"""
        return _loop(b, zero, m, lambda k, acc: b.fadd(acc, b.fmul(
            ap(r, b.add(ni, k)), ld(D, b.add(b.mul(k, ni), j)))), ap(r, j))

    def mtd_row(k, _):
        row = b.mul(k, ni)
        _loop(b, zero, ni, lambda j, _: st(mt(b.add(ni, k), j), MTd, b.add(row, j)))

    _loop(b, zero, m, mtd_row)

    def a_row(i, _):              # (T^T A_p T)[i][j], j <= i
        def entry(j, _):
            acc = _loop(b, zero, m, lambda k, acc: b.fadd(acc, b.fmul(
                ld(D, b.add(b.mul(k, ni), i)), ld(MTd, b.add(b.mul(k, ni), j)))), mt(i, j))
            st(acc, A, b.add(b.mul(i, ni), j))
        _loop(b, zero, b.add(i, ir.Constant(i64, 1)), entry)

    _loop(b, zero, ni, a_row)

    def r0(r):
        """b_p[r] + sum_k A_p[r][n_i + k] g[k]"""
        return _loop(b, zero, m, lambda k, acc: b.fadd(acc, b.fmul(ap(r, b.add(ni, k)), ld(g, k))),
                     ld(v, ld(p, r, i64)))

    _loop(b, zero, m, lambda k, _: st(r0(b.add(ni, k)), r0d, k))
    _loop(b, zero, ni, lambda i, _: st(b.fneg(_loop(b, zero, m, lambda k, acc: b.fadd(
        acc, b.fmul(ld(D, b.add(b.mul(k, ni), i)), ld(r0d, k))), r0(i))), rhs, i))
    b.ret_void()
    return str(mod)
