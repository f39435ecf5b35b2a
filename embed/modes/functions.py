"""Compiled functions of one flat argument vector, and two expressions the modes are made of.

``lambdify`` compiles symengine expressions (``Compiled``: symengine's Lambdify called through
``unsafe_real``; a "lambda" one pickles as its bit-exact object code, ``embed.codegen.
lambda_order``); ``Tape`` runs a few expressions as a straight-line program in plain floats
(small functions shipped at run time); ``max_abs`` and ``norm1`` build the residual and
kappa(B1) expressions of a mode's monitors (``embed.modes.compile.mode_parts``).
"""

from __future__ import annotations

import math
import operator

import numpy as np
from ..base.lazy import symengine as se

from ..base.errors import CompilationError
from ..codegen.program import Program

# symengine's "lambda" backend builds a tree of compiled C++ closures: for the disk's RK4
# step it builds many times faster than "llvm" and calls a little slower (docs/design.md,
# facts).  Building fast is what makes on-line embedding fit in a 1 ms step.  The background
# worker compiles with "llvm" (its functions pickle as they are); a "lambda" function pickles
# only by being translated and compiled then (``Compiled.native``: shipped object code).
BACKEND = "lambda"


class Compiled:
    """A compiled function of one flat argument vector, returning a flat array.

    Called through symengine's ``unsafe_real`` after checking the argument's length and
    type here: its ordinary call validates and reshapes in Python, which costs several times
    the unsafe call, most in a step that finds the caches cold (the event steps of a 1 kHz
    real-time master; docs/design.md, facts)."""

    __slots__ = ("fn", "n_in", "n_out", "unsafe_real", "source", "_native")

    def __init__(self, fn, n_in, n_out, source=None):
        self.fn, self.n_in, self.n_out = fn, n_in, n_out
        self.unsafe_real = fn.unsafe_real
        # a "lambda" function's (args, exprs, what, cse): translated when pickled (``native``)
        self.source, self._native = source, None

    def __call__(self, args):
        if type(args) is not np.ndarray or args.dtype != np.float64 or not args.flags.c_contiguous:
            args = np.ascontiguousarray(args, dtype=np.float64)
        if args.shape != (self.n_in,):
            raise CompilationError(f"compiled function called with {args.shape} arguments, "
                                   f"expects {self.n_in}")
        out = np.empty(self.n_out)
        self.unsafe_real(args, out)
        return out

    def native(self):
        """This "lambda" function as object code computing the same bits for every argument
        vector (``embed.codegen.lambda_order.LambdaNative``), compiled once; CompilationError
        where an expression has no bit-exact translation."""
        if self._native is None:
            from ..codegen.lambda_order import native_of
            args, exprs, what, cse = self.source
            try:
                self._native = native_of(args, exprs, what, cse)
            except CompilationError as exc:
                self._native = exc
        if isinstance(self._native, Exception):
            raise self._native
        return self._native

    def __reduce__(self):
        """LLVM functions pickle as their object code (``embed.codegen.llvm_object``: the
        machine code symengine compiled, loaded without symengine; the background worker's
        answers, the shipped libraries), else as themselves; a "lambda"
        function, which does not, as its bit-exact translation (``native``: object code
        shipped in the FMU, issue 30), or not at all where it has none."""
        if self.source is None:
            from ..codegen.llvm_object import native_of_llvm
            native = native_of_llvm(self.fn, self.n_in, self.n_out)
            if native is not None:         # its object code, loaded without symengine
                return native.__reduce__()
            return (Compiled, (self.fn, self.n_in, self.n_out))
        try:
            return self.native().__reduce__()
        except CompilationError as exc:
            raise TypeError(f"{self.source[2]} does not pickle: {exc}") from exc


def lambdify(args, exprs, what, backend=None, opt_level=None, cse=True):
    """symengine Lambdify, with common-subexpression elimination unless ``cse`` is False
    (``exprs`` a flat list)."""
    kw = {"opt_level": opt_level} if opt_level is not None and backend == "llvm" else {}
    args, exprs = list(args), list(exprs)
    try:
        fn = se.Lambdify(args, exprs, real=True, backend=backend or BACKEND, cse=cse, **kw)
    except Exception as exc:  # symengine raises RuntimeError/TypeError variants
        raise CompilationError(f"could not compile {what}: {exc}") from exc
    source = (tuple(args), tuple(exprs), what, cse) if (backend or BACKEND) == "lambda" else None
    return Compiled(fn, len(args), len(exprs), source)


# ----------------------------------------------------------- a few expressions, no compile
def _sign(x):
    return math.copysign(1.0, x) if x else 0.0


def _max(x, y):                    # nan in either argument gives nan, as the LLVM code does
    return x if x != x or x > y else y


def _min(x, y):
    return x if x != x or x < y else y


# a program's operations (``embed.codegen.program``) as plain-float functions
_TAPE_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "div": operator.truediv, "pow": math.pow, "neg": operator.neg, "sqrt": math.sqrt,
             "fabs": abs, "sign": _sign, "max": _max, "min": _min, "atan2": math.atan2,
             **{k: getattr(math, k) for k in ("sin", "cos", "tan", "asin", "acos", "atan",
                                              "sinh", "cosh", "tanh", "log", "exp")}}
_TAPE_FNS = tuple(_TAPE_OPS.values())              # a tape's instructions number them
_TAPE_NUMBER = {op: o for o, op in enumerate(_TAPE_OPS)}
TAPE_OPERATIONS = tuple(_TAPE_OPS)     # by number (fmu_src/runtime/loader/fast_step.c's enum)


class Tape:
    """A few expressions (symengine) of a few arguments as a straight-line program
    (``embed.codegen.program``) run in plain floats: (function, i, j, k) sets register k to
    function(r[i], r[j]) (j < 0: one argument).  For small functions shipped to the stepping
    process at run time (a fence's jet): loading an LLVM function is costly in a step that
    finds the caches cold, whatever its size, and so is compiling it in the worker; a tape of
    20 operations pickles in a few hundred bytes and runs at once (docs/design.md, facts).  Same
    interface as ``Compiled``.  Any failing operation (log of a negative number, say) makes
    every output nan.

    An instruction is (o, i, j, k) with o the function's number in ``_TAPE_FNS``: a tuple of
    ints only, which the cyclic collector stops tracking.  A run keeps every fence's tape (a
    fence announced again is ready at once); as (function, i, j, k) tuples, a soak's tapes
    made one full collection longer than a step's budget (docs/design.md)."""

    __slots__ = ("n_in", "n_out", "regs", "prog", "outs")

    def __init__(self, args, exprs):
        prog = Program(len(args))
        outs = prog.emit(list(exprs), {a: i for i, a in enumerate(args)})
        n_in = prog.n_in
        self.regs = [0.0] * (n_in + len(prog.ops))
        code = []
        for k, (op, a, b) in enumerate(prog.ops):
            if op == "const":
                self.regs[n_in + k] = a
            elif op in _TAPE_OPS:
                code.append((_TAPE_NUMBER[op], a, -1 if b is None else b, n_in + k))
            else:
                raise CompilationError(f"operation {op} has no tape function")
        self.prog, self.outs = tuple(code), tuple(outs)
        self.n_in, self.n_out = n_in, len(outs)

    def unsafe_real(self, args, out):
        r = self.regs
        r[:self.n_in] = args.tolist()
        try:
            fns = _TAPE_FNS
            for o, i, j, k in self.prog:
                r[k] = fns[o](r[i]) if j < 0 else fns[o](r[i], r[j])
            out[:] = [r[k] for k in self.outs]
        except (ValueError, ZeroDivisionError, OverflowError):
            out[:] = math.nan

    def __call__(self, args):
        out = np.empty(self.n_out)
        self.unsafe_real(np.asarray(args, dtype=float).reshape(-1), out)
        return out


def max_abs(residuals):
    """max_i |r_i| as one expression (0 when there is none)."""
    if not residuals:
        return se.Integer(0)
    return se.Max(*[se.Abs(r) for r in residuals]) if len(residuals) > 1 else se.Abs(residuals[0])


def norm1(rows):
    """||M||_1 = max_j sum_i |M_ij| as one expression (M given as a list of rows)."""
    cols = [sum((se.Abs(r[j]) for r in rows), se.Integer(0)) for j in range(len(rows[0]))]
    return se.Max(*cols) if len(cols) > 1 else cols[0]
