"""A function of symengine's "lambda" backend as a straight-line program, bit for bit.

symengine's ``Lambdify(..., backend="lambda", cse=True)`` (``LambdaRealDoubleVisitor``,
symengine/lambda_double.h) builds a tree of C++ closures from the live expressions: the
common subexpressions of ``SymEngine::cse`` (``se.cse`` calls the same function on the same
objects: the same replacements, in the same order), then each reduced output.  Its closures
do, for each node:

- Add: ``t = coef; for (term, c) in dict: t = t + term * c`` (the dict in the order the live
  expression iterates it: Python's ``args`` iterate the same map, coefficient first when it
  is nonzero);
- Mul: ``t = coef; for (base, exp) in dict: t = t * pow(base, exp)`` (``std::pow`` for every
  factor, exponent 1 and base E included);
- Pow: ``exp(e)`` for base E, else ``pow(b, e)`` (no sqrt: pow(x, 0.5) is not sqrt(x) at -0
  and -inf);
- Integer, Rational, constants: the double the visitor converts them to (``mp_get_d``,
  ``eval_double``), read here by evaluating the constant through the visitor itself;
- sin, cos, ..., Abs: the C library's function (``std::abs``: fabs);
- Max, Min: ``r = a0; r = std::max(r, a_i)`` (``r < a_i ? a_i : r``: a nan a_i is skipped);
- sign: ``x == 0 ? 0.0 : (x < 0 ? -1.0 : 1.0)`` (nan gives 1.0, -0 gives +0);
- atan2(num, den).

``program_of`` writes those operations, in that order, into a ``Program`` (no folding: x + 0
is not x at x = -0), which ``native.compile_program`` compiles with no fast-math flag (IEEE
order, no fused multiply-add): the same bits as the closures for every argument vector
(``tests/test_lambda_native.py``).  Multiplying by a coefficient 1 (exact) is left out.
Anything else (Piecewise, relations, ...) raises ``CompilationError``: such a function stays
the lambda backend's.
"""

from __future__ import annotations

import numpy as np

from ..base.errors import CompilationError
from .program import Program

_UNARY = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
          "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "log": "log",
          "Abs": "fabs"}
_CONSTS = {}          # a constant -> the double symengine's visitor converts it to
_DUMMY = []          # the constant function's argument (symengine imported where translating)


def visitor_value(c):
    """The double that the lambda visitor computes for the number or constant ``c``
    (``mp_get_d`` of an Integer or Rational, ``eval_double`` of pi or E): read from the
    visitor itself, once per constant."""
    v = _CONSTS.get(c)
    if v is None:
        import symengine as se
        if not _DUMMY:
            _DUMMY.append(se.Symbol("_lambda_order_dummy"))
        try:
            fn = se.Lambdify(_DUMMY[:1], [c], real=True, backend="lambda", cse=False)
            out = np.empty(1)
            fn.unsafe_real(np.zeros(1), out)
        except Exception as exc:  # noqa: BLE001 - symengine raises RuntimeError variants
            raise CompilationError(f"{c} is no real constant of the lambda visitor: "
                                   f"{exc}") from exc
        v = _CONSTS[c] = float(out[0])
    return v


class _Writer:
    """Writes expressions into ``prog`` as the lambda visitor's closures compute them."""

    def __init__(self, prog, args):
        self.p = prog
        self.inputs = {a: i for i, a in enumerate(args)}
        self.cse = {}                   # replacement symbol -> register

    def const(self, c):
        return self.p.const(visitor_value(c))

    def op(self, name, a, b=None):
        return self.p._op(name, a, b)   # no folding: each operation as the closure does it

    def expr(self, e):
        """No memo by expression: two equal expressions may iterate their terms in two
        orders (and the visitor sums each in its own); the program's value numbering shares
        what is computed alike."""
        import symengine as se
        if e.is_Symbol:                 # the visitor looks in the inputs first, then cse's
            i = self.inputs.get(e)
            if i is None:
                i = self.cse.get(e)
            if i is None:
                raise CompilationError(f"symbol {e} is not an argument of the function")
            return i
        if e.is_Number or (not e.args and not e.free_symbols):
            return self.const(e)
        name, args = type(e).__name__, e.args
        if name == "Add":
            return self._add(args)
        if name == "Mul":
            return self._mul(args)
        if name == "Pow":
            base, ex = args
            if base == se.E:
                return self.op("exp", self.expr(ex))
            return self.op("pow", self.expr(base), self.expr(ex))
        if name in _UNARY and len(args) == 1:
            return self.op(_UNARY[name], self.expr(args[0]))
        if name == "sign" and len(args) == 1:
            x = self.expr(args[0])
            zero = self.p.const(0.0)
            s = self.op("select", self.op("gt", zero, x), (self.p.const(-1.0), self.p.const(1.0)))
            return self.op("select", self.op("eq", x, zero), (zero, s))
        if name in ("Max", "Min"):      # std::max(r, a) = r < a ? a : r; min: a < r ? a : r
            regs = [self.expr(a) for a in args]
            r = regs[0]
            for a in regs[1:]:
                c = self.op("gt", a, r) if name == "Max" else self.op("gt", r, a)
                r = self.op("select", c, (a, r))
            return r
        if name == "atan2" and len(args) == 2:
            return self.op("atan2", self.expr(args[0]), self.expr(args[1]))
        raise CompilationError(f"{name} ({e}) has no bit-exact straight-line operation")

    def _add(self, args):
        terms = list(args)
        r = self.const(terms.pop(0)) if terms[0].is_Number else self.p.const(0.0)
        for t in terms:
            coef, term = _split_coef(t)
            x = self.expr(term)
            if coef is not None:
                x = self.op("mul", x, self.const(coef))
            r = self.op("add", r, x)
        return r

    def _mul(self, args):
        import symengine as se
        factors = list(args)
        r = self.const(factors.pop(0)) if factors[0].is_Number else None
        for f in factors:
            base, ex = (f.args if type(f).__name__ == "Pow" else (f, se.Integer(1)))
            x = self.op("pow", self.expr(base), self.expr(ex))
            r = x if r is None else self.op("mul", r, x)     # 1.0 * x is x: left out
        return r


def _split_coef(t):
    """(coefficient or None for 1, term) of an Add's argument: the (key, value) of its dict
    (a key is never a number and its own coefficient is 1)."""
    import symengine as se
    if type(t).__name__ == "Mul":
        a = t.args
        if a[0].is_Number:
            rest = a[1:]
            return a[0], (rest[0] if len(rest) == 1 else se.Mul(*rest))
    return None, t


def program_of(args, exprs, cse=True):
    """(program, output registers) computing ``exprs`` of the symbols ``args`` as
    ``se.Lambdify(args, exprs, backend="lambda", cse=cse)`` does, operation for operation."""
    import symengine as se
    if not all(getattr(a, "is_Symbol", False) for a in args):
        raise CompilationError("a lambda function of arguments that are not symbols")
    prog = Program(len(args))
    w = _Writer(prog, args)
    if any(isinstance(e, (str, bytes)) for e in exprs):     # expressions, never text to parse
        raise CompilationError("a lambda function of text; give expressions")
    exprs = [se.sympify(e) for e in exprs]
    reps, reduced = se.cse(exprs) if cse else ((), exprs)
    for sym, e in reps:
        if sym in w.inputs:
            raise CompilationError(f"cse symbol {sym} is also an argument")
        w.cse[sym] = w.expr(e)
    return prog, [w.expr(e) for e in reduced]


class LambdaNative:
    """A lambda function's translation (``NativeFunction``) called as cheaply as symengine's
    ``unsafe_real``: the argument array's address read once while the caller passes the same
    array (a mode's kept argument buffer), the outputs written into a buffer of its own and
    copied out.  numpy's ``.ctypes.data`` costs about 2 us a call on these machines, twice a
    call: more than a small function's whole work (``benchmarks/bench_lambda_native.py``).
    Same interface as ``embed.modes.functions.Compiled``; pickles as object code."""

    __slots__ = ("native", "n_in", "n_out", "_f", "_arg", "_at", "_out")

    def __init__(self, native):
        from .native import Buffer
        self.native, self.n_in, self.n_out = native, native.n_in, native.n_out
        # read at the first call: a function unpickled inside ``native.deferred_loads`` is
        # loaded later, by the loader thread
        self._f = None
        self._arg, self._at = None, 0       # the last argument array (kept: its id stays its)
        self._out = Buffer(max(native.n_out, 1))

    def unsafe_real(self, args, out):
        if self._f is None:
            self._f = self.native._f
        if args is not self._arg:
            if not (args.flags.c_contiguous and args.dtype == np.float64):
                args = np.ascontiguousarray(args, dtype=np.float64)
            self._arg, self._at = args, args.ctypes.data
        self._f(self._at, self._out.at)
        out[:] = self._out.array[:self.n_out]

    def __call__(self, args):
        return self.native(args)

    def __reduce__(self):
        return (LambdaNative, (self.native,))


def native_of(args, exprs, what, cse=True):
    """The function (``LambdaNative``: object code) computing what the lambda backend's
    ``Lambdify`` computes."""
    from .native import compile_program
    prog, outs = program_of(args, exprs, cse)
    return LambdaNative(compile_program(prog, outs, what))
