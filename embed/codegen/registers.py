"""A straight-line program's registers and the operations that write them: constants folded
and shared, each operation of the same registers computed once, calls of other programs, the
memo of a remembered call, and which registers the outputs need (``live``).
``embed.codegen.program.Program`` writes expressions and linear algebra with these."""

from __future__ import annotations

import math

from ..base.errors import CompilationError

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


class Registers:
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
        search where near-ties go to the first (``partition._pivoted_gram_schmidt``); a nan
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
