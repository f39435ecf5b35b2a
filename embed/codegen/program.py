"""Straight-line programs: a mode's whole step as one list of floating-point operations.

A ``Program`` is built from symengine expressions (after common-subexpression elimination) and
from linear algebra written out as operations (the unrolled LDL^T solve of the reduced mass
matrix, eq 15-16), so that intermediate results stay shared and nothing is expanded: its length
grows like the operations it performs, and so does the work to compile it (``embed.codegen.native``).
Registers 0 .. n_in - 1 hold the arguments; every operation writes one new register.
"""

from __future__ import annotations

import math

import symengine as se

from ..base.errors import CompilationError
from . import ldlt

# operations of one argument, by symengine function name (the names the LLVM code uses)
UNARY = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
         "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "log": "log",
         "exp": "exp", "Abs": "fabs", "sign": "sign"}
BINARY = {"atan2": "atan2"}
FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b if b else math.nan}


def arity(sub):
    """(arguments, outputs) of a called program (program, outputs) or compiled function."""
    return (sub[0].n_in, len(sub[1])) if isinstance(sub, tuple) else (sub.n_in, sub.n_out)


class Memo:
    """Two remembered evaluations of the program ``sub`` = (program, outputs), kept by the
    compiled module (``embed.codegen.native``): each the arguments ``sub`` reads (``reads``: their
    positions) and its first ``size`` outputs, bit for bit.  An RK4 step's first stage is
    then the last step's final one, where nothing changed in between (first same as last)."""

    def __init__(self, sub, size):
        self.sub, self.size = sub, size
        live = sub[0].live(sub[1])
        self.reads = [i for i in range(sub[0].n_in) if live[i]]

    @property
    def slot(self):
        """Doubles a remembered evaluation takes: a valid flag, the arguments, the outputs."""
        return 1 + len(self.reads) + self.size


_CALLS = ("call", "mcall", "remember", "ldlt", "reduce", "partition")  # read the registers b
_UNSHARED = ("const",) + _CALLS           # by value (``const``), or a call each


class Program:
    """A straight-line program of float operations on registers.

    ``ops[k]`` = (name, a, b) writes register ``n_in + k``: "const" (a the value), one of
    add, sub, mul, div, pow, max, min, atan2 (registers a, b), neg, sqrt and the ``UNARY``
    functions (register a), "gather" (element int(b) of ``arrays[a]``), "call" (runs
    ``subs[a]`` on the registers b; a tuple), "result" (output b of the call in register a),
    "gt" and "eq" (1.0 where a > b, a == b, else 0.0), "select" (register b[0] where a is
    nonzero, else b[1]: the choices of a pivot search, ``argmax``) and "ldlt" (a = (k,
    nrhs, exact): the k x k system of the registers b = A's lower triangle by rows, then the
    right-hand sides, solved by a looped LDL^T, ``embed.codegen.ldlt``: in the unrolled order if
    exact), "reduce" (a = (n, m, exact): the reduced system of the registers b and its
    solution, ``reduced``) and "partition" (a = (m, n, 1 - tie): ``pivoted``).
    Constants are folded and shared; x + 0, x * 1, x * 0 emit nothing; an operation of the
    same registers is computed once (``_op``).

    A memo (``memo``: a ``Memo``) remembers, for the whole compiled module, two evaluations
    of one called program: "mcall" (a call, ``call(..., memo=True)``) skips the call where the
    arguments it reads equal, bit for bit, a remembered evaluation's, and "remember" (a, b =
    its arguments, then the values) keeps one.
    """

    def __init__(self, n_in):
        self.n_in = n_in
        self.ops = []
        self._seen = {}       # (name, a, b) -> its register (``_op``)
        self._consts = {}
        self._value = {}      # register -> its constant value, for folding
        self.arrays = []      # register lists that ``gather`` indexes
        self._arrays = {}
        self.subs = []        # programs that ``call`` runs: (program, outputs)
        self.exports = {}     # name -> index in subs: called on its own too (embed.codegen.native)
        self.memo = None      # the module's ``Memo`` (a program that ``mcall`` and ``remember``)

    # ------------------------------------------------------------ operations
    def _op(self, name, a, b=None):
        """The register of (name, a, b): a new one, or the one computing the same operation
        of the same registers already (value numbering: the sin q_i of each spliced
        constraint template computed once); calls, memo stores and solves are each new."""
        key = None if name in _UNSHARED else (name, a, b)
        r = self._seen.get(key)
        if r is None:
            self.ops.append((name, a, b))
            r = self.n_in + len(self.ops) - 1
            if key is not None:
                self._seen[key] = r
        return r

    def const(self, v):
        v = float(v)
        key = (v, math.copysign(1.0, v))
        r = self._consts.get(key)
        if r is None:
            r = self._consts[key] = self._op("const", v)
            self._value[r] = v
        return r

    def binary(self, name, a, b):
        va, vb = self._value.get(a), self._value.get(b)
        if va is not None and vb is not None and name in FOLD:
            return self.const(FOLD[name](va, vb))
        if name == "add":
            if va == 0.0:
                return b
            if vb == 0.0:
                return a
        elif name == "sub":
            if vb == 0.0:
                return a
            if va == 0.0 and math.copysign(1.0, va) < 0:    # -0 - b = -b; +0 - 0 is +0
                return self.unary("neg", b)
        elif name == "mul":
            if va == 0.0 or vb == 0.0:
                return self.const(0.0)
            if va == 1.0:
                return b
            if vb == 1.0:
                return a
            if va == -1.0:
                return self.unary("neg", b)
            if vb == -1.0:
                return self.unary("neg", a)
        elif name == "div" and vb == 1.0:
            return a
        return self._op(name, a, b)

    def unary(self, name, a):
        va = self._value.get(a)
        if va is not None and name == "neg":
            return self.const(-va)
        return self._op(name, a)

    def live(self, outs):
        """For each register, whether the outputs ``outs`` depend on it: the operations that
        compute nothing used (the upper triangle of a symmetric matrix that LDL^T never reads,
        say) are not compiled."""
        live = [False] * (self.n_in + len(self.ops))
        for r in outs:
            live[r] = True
        n_in = self.n_in
        for k in range(len(self.ops) - 1, -1, -1):
            op, a, b = self.ops[k]
            if op == "remember":               # an effect: always compiled
                live[n_in + k] = True
            if not live[n_in + k] or op == "const":
                continue
            if op in _CALLS:
                for r in b:
                    live[r] = True
            elif op == "result":
                live[a] = True
            elif op == "select":
                live[a] = live[b[0]] = live[b[1]] = True
            elif op == "gather":
                live[b] = True
                for r in self.arrays[a]:
                    live[r] = True
            else:
                live[a] = True
                if b is not None:
                    live[b] = True
        return live

    def gather(self, regs, idx):
        """regs[int(idx)]: the element that a run-time index (register ``idx``, holding an
        integer) chooses; a permutation given as data (the partition, eq 11)."""
        key = tuple(regs)
        aid = self._arrays.get(key)
        if aid is None:
            aid = self._arrays[key] = len(self.arrays)
            self.arrays.append(key)
        return self._op("gather", aid, idx)

    def call(self, sub, args, memo=False):
        """The output registers of the program ``sub`` = (program, outputs) run on the
        registers ``args``: compiled once as a function of its own however often it is called
        (an RK4 stage: the compile work and its growth with size are a fifth).  ``sub`` may
        also be a function compiled before (``native.NativeFunction``: its ``name``, ``n_in``,
        ``n_out``), called by name: one copy of its code for every program that calls it.
        ``memo``: the first outputs (``Memo.size``) come from the module's memo where it
        holds ``args`` (``sub`` must be the memo's), and the call is skipped."""
        sid = next((i for i, s in enumerate(self.subs) if s is sub), None)
        if sid is None:
            sid = len(self.subs)
            self.subs.append(sub)
        n_in, n_out = arity(sub)
        if len(args) != n_in:
            raise CompilationError(f"call with {len(args)} arguments, expects {n_in}")
        if memo and (self.memo is None or self.memo.sub is not sub):
            raise CompilationError("a remembered call of a program that is not the memo's")
        token = self._op("mcall" if memo else "call", sid, tuple(args))
        return [self._op("result", token, j) for j in range(n_out)]

    def remember(self, args, values):
        """Keep ``values`` (registers: the memo's program's first outputs) as its evaluation
        at the registers ``args`` in the module's memo (``Memo``), over the evaluation that
        this function's "mcall" did not find (the older one)."""
        self._op("remember", 0, tuple(args) + tuple(values))

    def compare(self, name, a, b):
        """1.0 where a > b (``name`` "gt") or a == b ("eq"), else 0.0 (registers)."""
        va, vb = self._value.get(a), self._value.get(b)
        if va is not None and vb is not None:
            return self.const(float(va > vb if name == "gt" else va == vb))
        return self._op(name, a, b)

    def select(self, c, x, y):
        """Register x where register c is nonzero, else y."""
        vc = self._value.get(c)
        if vc is not None or x == y:
            return x if vc or x == y else y
        return self._op("select", c, (x, y))

    def argmax(self, xs, tie=0.0):
        """(x_k, k) for the first k whose x_k >= (1 - tie) max(xs) (registers): a pivot
        search where near-ties go to the first (``embedding._pivoted_gram_schmidt``); a nan
        among xs makes both meaningless (the caller checks what they lead to)."""
        top = xs[0]
        for x in xs[1:]:
            top = self.binary("max", top, x)
        thr = self.mul(top, self.const(1.0 - tie))
        val, at = xs[-1], self.const(len(xs) - 1)
        for j in reversed(range(len(xs))):
            below = self.compare("gt", thr, xs[j])
            val, at = self.select(below, val, xs[j]), self.select(below, at, self.const(j))
        return val, at

    def add(self, a, b):
        return self.binary("add", a, b)

    def sub(self, a, b):
        return self.binary("sub", a, b)

    def mul(self, a, b):
        return self.binary("mul", a, b)

    def div(self, a, b):
        return self.binary("div", a, b)

    def dot(self, xs, ys, start=None):
        """start + sum x_i y_i (registers)."""
        acc = self.const(0.0) if start is None else start
        for x, y in zip(xs, ys):
            acc = self.add(acc, self.mul(x, y))
        return acc

    # ------------------------------------------------------------ expressions
    def emit(self, exprs, env, cse=True):
        """Registers holding ``exprs`` (symengine), whose symbols ``env`` maps to registers;
        common subexpressions are computed once: symengine's cse, or (``cse`` False) only
        the equal subtrees, in time linear in the expressions (cse's grows faster: 0.6 s for
        the 40-link chain's S, which then has a quarter fewer operations)."""
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
