"""The compiled-terms path's linear algebra in a program's registers (gillespie2005 eq 11-16):
the reduced system (T^T A_u T) udot_ind = -T^T (b + A_u g) (``reduced``) and the partition of
the speeds by pivoted Gram-Schmidt (``partitioned``), straight-line for a few speeds and a call
of the looped ``embed.codegen.reduction`` / ``embed.codegen.pivoting`` beyond; used by
``embed.modes.terms_program``."""

from __future__ import annotations

from ..codegen import reduction
from ..embedding.partition import TIE


def reduced(prog, v, perm, D, g):
    """(udot_ind, the dependent rows of A_p T and of r0) from the unconstrained terms
    v = [b..., A_u by rows...] (registers) in the partition's order perm = [ind..., dep...]:
    A_p T = A_p[:, ind] + sum_k A_p[:, dep_k] D_k (T = [I; D]), r0 = b_p + A_p [0; g], and
    (T^T A_p T) udot_ind = -T^T r0 (eq 13-16), by LDL^T (``Program.ldl_solve``).  Straight-line
    up to ``reduction.LOOP_MIN`` independent speeds; from there a call of the looped
    ``embed_reduce``, the same operations in the same order (``Program.reduced``)."""
    n, m = len(perm), len(g)
    n_i = n - m
    if n_i >= reduction.LOOP_MIN:
        return prog.reduced(v, perm, D, g)
    b, Au = v[:n], v[n:]
    fn = prog.const(float(n))
    bp = [prog.gather(b, perm[i]) for i in range(n)]
    rowidx = [prog.mul(perm[i], fn) for i in range(n)]
    Ap = [[prog.gather(Au, prog.add(rowidx[i], perm[j])) for j in range(n)] for i in range(n)]
    MT = [[prog.dot([Ap[r][n_i + k] for k in range(m)], [D[k][j] for k in range(m)], Ap[r][j])
           for j in range(n_i)] for r in range(n)]           # A_p T
    A = [[prog.dot([D[k][i] for k in range(m)], [MT[n_i + k][j] for k in range(m)], MT[i][j])
          if j <= i else None for j in range(n_i)] for i in range(n_i)]   # T^T A_p T
    r0 = [prog.dot([Ap[r][n_i + k] for k in range(m)], g, bp[r]) for r in range(n)]
    rhs = [prog.unary("neg", prog.dot([D[k][i] for k in range(m)],
                                      [r0[n_i + k] for k in range(m)], r0[i]))
           for i in range(n_i)]
    udi, = prog.ldl_solve(A, [rhs])
    return udi, MT[n_i:], r0[n_i:]


def partitioned(prog, B, n):
    """(|diag R|, dep ascending, perm = [ind..., dep...], iperm) of the partition of the
    speeds (eq 11) for the registers B (m rows of n speeds): modified Gram-Schmidt with column
    pivoting on B's columns, later speeds first, ties within ``TIE`` to the first
    (``partition.partition``'s choice).  Straight-line below ``reduction.LOOP_MIN`` speeds;
    from there a call of the looped ``embed_partition``, the same operations in the same
    order (``Program.pivoted``)."""
    m, n_i = len(B), n - len(B)
    if n >= reduction.LOOP_MIN:
        return prog.pivoted(B, n, TIE)
    zero, one = prog.const(0.0), prog.const(1.0)
    cols = [[B[k][n - 1 - j] for k in range(m)] for j in range(n)]
    chosen, diag, piv = [zero] * n, [], []
    for _ in range(m):
        norms = [prog.select(chosen[j], prog.const(-1.0), prog.dot(c, c))
                 for j, c in enumerate(cols)]
        best, at = prog.argmax(norms, TIE)
        d = prog.unary("sqrt", best)
        e = [prog.div(prog.gather([c[k] for c in cols], at), d) for k in range(m)]
        cols = [[prog.sub(c[k], prog.mul(prog.dot(e, c), e[k])) for k in range(m)]
                for c in cols]
        chosen = [prog.binary("max", chosen[j], prog.compare("eq", prog.const(j), at))
                  for j in range(n)]
        diag.append(d)
        piv.append(prog.sub(prog.const(n - 1), at))
    dep = _sorted(prog, piv)
    perm = []
    for k in range(n_i):                 # the k-th speed not in dep
        j = prog.const(k)
        for d in dep:
            j = prog.add(j, prog.sub(one, prog.compare("gt", d, j)))
        perm.append(j)
    perm += dep
    iperm = []
    for j in range(n):
        rj = prog.const(j)
        below = [prog.compare("gt", rj, d) for d in dep]
        at_dep = [prog.compare("eq", rj, d) for d in dep]
        rank = prog.dot(at_dep, [prog.const(n_i + r) for r in range(m)])
        iperm.append(prog.select(_sum(prog, at_dep), rank,
                                 prog.sub(rj, _sum(prog, below))))
    return diag, dep, perm, iperm


def _sum(prog, regs):
    acc = prog.const(0.0)
    for r in regs:
        acc = prog.add(acc, r)
    return acc


def _sorted(prog, regs):
    """The registers' values in ascending order (a sorting network, a few registers)."""
    regs = list(regs)
    for i in range(len(regs)):
        for j in range(len(regs) - 1 - i):
            a, b = regs[j], regs[j + 1]
            regs[j], regs[j + 1] = prog.binary("min", a, b), prog.binary("max", a, b)
    return regs


def _norm1(prog, rows, cols):
    """max_j sum_i |rows[i][j]| (registers)."""
    acc = prog.const(0.0)
    for j in range(cols):
        col = prog.const(0.0)
        for r in rows:
            col = prog.add(col, prog.unary("fabs", r[j]))
        acc = prog.binary("max", acc, col)
    return acc
