"""Straight-line programs: a mode's whole step as one list of floating-point operations.

A ``Program`` is built from symengine expressions (after common-subexpression elimination) and
from linear algebra written out as operations (the unrolled LDL^T solve of the reduced mass
matrix, eq 15-16), so that intermediate results stay shared and nothing is expanded: its length
grows like the operations it performs, and so does the work to compile it (``embed.codegen.native``).
Registers 0 .. n_in - 1 hold the arguments; every operation writes one new register.
"""

from __future__ import annotations

from ..base.lazy import symengine as se

from ..base.errors import CompilationError
from . import ldlt
from .registers import BINARY, UNARY, Registers, arity  # noqa: F401  (arity: importable here)


class Program(Registers):
    """A straight-line program of float operations on registers (``Registers``: the
    operations, their folding and sharing, calls and the memo), written from symengine
    expressions (``emit``) and from linear algebra as operations: the LDL^T solve
    (``ldl_solve``), Cramer's rule (``solve_small``), the reduced system (``reduced``) and the
    partition (``pivoted``) of eq 11-16."""

    # ------------------------------------------------------------ expressions
    def emit(self, exprs, env, cse=True):
        """Registers holding ``exprs`` (symengine), whose symbols ``env`` maps to registers;
        common subexpressions are computed once: symengine's cse, or (``cse`` False) only
        the equal subtrees, in time linear in the expressions (cse's time grows faster, for
        fewer operations: docs/design.md, facts)."""
        reps, reduced = se.cse(list(exprs)) if cse else ((), list(exprs))
        memo = dict(env)
        for sym, e in reps:
            memo[sym] = self._expr(e, memo)
        return [self._expr(e, memo) for e in reduced]

    def _expr(self, e, memo):
        r = memo.get(e)
        if r is not None:
            return r
        if e.is_Number or e in (se.E, se.pi):
            try:
                return self.const(float(e))
            except (TypeError, RuntimeError) as exc:
                raise CompilationError(f"{e} is no real number") from exc
        if e.is_Symbol:
            raise CompilationError(f"symbol {e} is not an argument of the program")
        name = type(e).__name__
        args = e.args
        if name == "Add":
            r = self._expr(args[0], memo)
            for x in args[1:]:
                if isinstance(x, se.Mul) and x.args[0] == -1:
                    r = self.sub(r, self._expr(se.Mul(*x.args[1:]), memo))
                else:
                    r = self.add(r, self._expr(x, memo))
        elif name == "Mul":
            r = self._expr(args[0], memo)
            for x in args[1:]:
                if isinstance(x, se.Pow) and x.args[1] == -1:
                    r = self.div(r, self._expr(x.args[0], memo))
                else:
                    r = self.mul(r, self._expr(x, memo))
        elif name == "Pow":
            r = self._pow(args[0], args[1], memo)
        elif name in UNARY and len(args) == 1:
            r = self.unary(UNARY[name], self._expr(args[0], memo))
        elif name in BINARY and len(args) == 2:
            r = self.binary(BINARY[name], self._expr(args[0], memo), self._expr(args[1], memo))
        elif name in ("Max", "Min"):
            op = name.lower()
            r = self._expr(args[0], memo)
            for x in args[1:]:
                r = self.binary(op, r, self._expr(x, memo))
        else:
            raise CompilationError(f"{name} ({e}) has no straight-line operation")
        memo[e] = r
        return r

    def _pow(self, base, ex, memo):
        if base == se.E:
            return self.unary("exp", self._expr(ex, memo))
        b = self._expr(base, memo)
        if ex.is_Integer and abs(int(ex)) <= 16:
            k = abs(int(ex))
            r, sq = None, b
            while k:                                   # binary powering
                if k & 1:
                    r = sq if r is None else self.mul(r, sq)
                k >>= 1
                if k:
                    sq = self.mul(sq, sq)
            r = self.const(1.0) if r is None else r
            return self.div(self.const(1.0), r) if int(ex) < 0 else r
        if ex == se.Rational(1, 2):
            return self.unary("sqrt", b)
        if ex == se.Rational(-1, 2):
            return self.div(self.const(1.0), self.unary("sqrt", b))
        return self.binary("pow", b, self._expr(ex, memo))

    # ------------------------------------------------------------ linear algebra
    def ldl_solve(self, A, rhs):
        """x with A x = b for each column b of ``rhs``, A symmetric and definite, or
        quasi-definite (its lower triangle read; registers), by LDL^T with no pivoting: the
        reduced mass matrix D^T M D of eq 15 is definite, so every pivot is nonzero.  Unrolled
        up to ``ldlt.UNROLL_MAX`` unknowns; beyond, a call of a looped one that every program
        shares (``embed.codegen.ldlt``: a few kilobytes of code, where this one grows like n^3), up to
        ``ldlt.EXACT_MAX`` in this solve's order (the same results, bit for bit)."""
        n = len(A)
        if n > ldlt.UNROLL_MAX:
            token = self._op("ldlt", (n, len(rhs), n <= ldlt.EXACT_MAX),
                             tuple(A[i][j] for i in range(n) for j in range(i + 1))
                             + tuple(r for b in rhs for r in b))
            return [[self._op("result", token, c * n + i) for i in range(n)]
                    for c in range(len(rhs))]
        L = [[None] * n for _ in range(n)]
        diag, dinv = [], []
        for j in range(n):
            v = [self.mul(L[j][k], diag[k]) for k in range(j)]       # L_jk d_k
            diag.append(self.sub(A[j][j], self.dot(L[j][:j], v)))
            dinv.append(self.div(self.const(1.0), diag[j]))
            for i in range(j + 1, n):
                L[i][j] = self.mul(self.sub(A[i][j], self.dot(L[i][:j], v)), dinv[j])
        out = []
        for b in rhs:
            y = []
            for i in range(n):
                y.append(self.sub(b[i], self.dot(L[i][:i], y)))
            x = [None] * n
            for i in reversed(range(n)):
                x[i] = self.sub(self.mul(y[i], dinv[i]),
                                self.dot([L[k][i] for k in range(i + 1, n)], x[i + 1:]))
            out.append(x)
        return out

    def reduced(self, v, perm, D, g):
        """(udot_ind, the dependent rows of A_p T, those of r0) of the reduced system
        (T^T A_u T) udot_ind = -T^T (b + A_u g), eq 13-16, by a call of the looped
        ``embed.codegen.reduction`` (the straight-line code's results) and of the looped LDL^T
        solve (``ldl_solve``'s beyond ``ldlt.UNROLL_MAX``).  Registers: v = [b..., A_u by
        rows...], perm = [ind..., dep...] (holding integers), D (m rows), g (m)."""
        n, m = len(perm), len(g)
        n_i = n - m
        token = self._op("reduce", (n, m, n_i <= ldlt.EXACT_MAX),
                         tuple(v) + tuple(perm) + tuple(r for row in D for r in row) + tuple(g))
        out = [self._op("result", token, i) for i in range(n_i + m * n_i + m)]
        return out[:n_i], [out[n_i + k * n_i:n_i + (k + 1) * n_i] for k in range(m)], \
            out[n_i + m * n_i:]

    def pivoted(self, B, n, tie):
        """(|diag R|, dep ascending, perm = [ind..., dep...], iperm) of the partition of the
        speeds (eq 11) by pivoted Gram-Schmidt on the registers B (m rows of n), later speeds
        first, ties within ``tie`` to the first: a call of the looped ``embed.codegen.pivoting``."""
        m = len(B)
        token = self._op("partition", (m, n, 1.0 - tie), tuple(r for row in B for r in row))
        out = [self._op("result", token, i) for i in range(2 * m + 2 * n)]
        return out[:m], out[m:2 * m], out[2 * m:2 * m + n], out[2 * m + n:]

    def solve_small(self, A, b):
        """x with A x = b for a general k x k system, k <= 3, by Cramer's rule (no pivot)."""
        k = len(A)
        if k == 0:
            return []
        if k > 3:
            raise CompilationError(f"{k} x {k} force block: at most 3 x 3 in a straight line")
        det = self.det(A)
        inv = self.div(self.const(1.0), det)
        x = []
        for j in range(k):
            Aj = [[b[i] if c == j else A[i][c] for c in range(k)] for i in range(k)]
            x.append(self.mul(self.det(Aj), inv))
        return x

    def det(self, A):
        k = len(A)
        if k == 1:
            return A[0][0]
        if k == 2:
            return self.sub(self.mul(A[0][0], A[1][1]), self.mul(A[0][1], A[1][0]))
        acc = self.const(0.0)
        for c in range(k):
            minor = [[A[i][j] for j in range(k) if j != c] for i in range(1, k)]
            term = self.mul(A[0][c], self.det(minor))
            acc = self.sub(acc, term) if c % 2 else self.add(acc, term)
        return acc
