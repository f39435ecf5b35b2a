"""Compile a mode's equations to numeric functions (the step where sympy/symengine stops).

A compiled mode is one function of the flat argument vector ``[t, h, x..., p...]``
(x = [q, u_ind], p the parameter vector) returning ``[x(t+h)..., monitors(x(t+h))...,
sum |x_i(t+h)|]``: a classical Runge-Kutta step composed symbolically into a single
call, followed by the monitors (full speeds, contact forces, outputs, largest
constraint residual, kappa(B1), switching conditions, multipliers) at the new state
(``modes.MonitorLayout``).  With 0 < h < step it is the step's continuous extension used
to locate events.  The last entry is inf or nan exactly when the new state is not finite.
The right-hand side alone (eq 2 and 16) is compiled on first use, for the adaptive
solver.  The compiled modes themselves (``CompiledMode``, ``LinearMode``) and the RK4
scheme live in ``embed.modes``; they are re-exported here.  See docs/design.md, "Data flow".
"""

from __future__ import annotations

import math
import operator

import numpy as np
import symengine as se

from .errors import CompilationError
from .model import TIME
from .modes import (CompiledMode, Layout, LinearMode, MonitorLayout,  # noqa: F401 - re-exported
                    _SymbolicMode, rk4_scheme, rk4_stepwise)

H = se.Symbol("h_step")
COMPOSE_OPS = 400   # monitors up to this many operations go into the composed RK4 step;
                    # beyond, they are a second function (multipliers pushed through the
                    # composition took minutes to compile for the triple slider-crank)

# symengine's "lambda" backend builds a tree of compiled C++ closures: measured here for
# the disk's RK4 step, 0.1-0.3 ms to build and 1.9 us a call, against 4-5 ms and 1.2 us
# for "llvm".  Building fast is what makes on-line embedding fit in a 1 ms step.  Only
# "llvm" functions pickle, so the background worker compiles with "llvm".
BACKEND = "lambda"


class Compiled:
    """A compiled function of one flat argument vector, returning a flat array.

    Called through symengine's ``unsafe_real`` after checking the argument's length and
    type here: its ordinary call validates and reshapes in Python, which measured 4 us a
    call warm and 10-50 us in a step that finds the caches cold (the event steps of a
    1 kHz real-time master), against 1-3 us."""

    __slots__ = ("fn", "n_in", "n_out", "unsafe_real")

    def __init__(self, fn, n_in, n_out):
        self.fn, self.n_in, self.n_out = fn, n_in, n_out
        self.unsafe_real = fn.unsafe_real

    def __call__(self, args):
        if type(args) is not np.ndarray or args.dtype != np.float64 or not args.flags.c_contiguous:
            args = np.ascontiguousarray(args, dtype=np.float64)
        if args.shape != (self.n_in,):
            raise CompilationError(f"compiled function called with {args.shape} arguments, "
                                   f"expects {self.n_in}")
        out = np.empty(self.n_out)
        self.unsafe_real(args, out)
        return out

    def __reduce__(self):            # LLVM functions pickle (the background worker's answers)
        return (Compiled, (self.fn, self.n_in, self.n_out))


def lambdify(args, exprs, what, backend=None, opt_level=None, cse=True):
    """symengine Lambdify, with common-subexpression elimination unless ``cse`` is False
    (``exprs`` a flat list)."""
    kw = {"opt_level": opt_level} if opt_level is not None and backend == "llvm" else {}
    try:
        fn = se.Lambdify(args, exprs, real=True, backend=backend or BACKEND, cse=cse, **kw)
    except Exception as exc:  # symengine raises RuntimeError/TypeError variants
        raise CompilationError(f"could not compile {what}: {exc}") from exc
    return Compiled(fn, len(args), len(exprs))


# ----------------------------------------------------------- a few expressions, no compile
def _sign(x):
    return math.copysign(1.0, x) if x else 0.0


def _inv(x):
    return 1.0 / x


_FUNCTIONS = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "sinh": math.sinh,
              "cosh": math.cosh, "tanh": math.tanh, "asin": math.asin, "acos": math.acos,
              "atan": math.atan, "log": math.log, "sign": _sign, "Abs": abs}


class Tape:
    """A few expressions (symengine) of a few arguments as a flat program of plain-float
    operations: (function, i, j, k) sets register k to function(r[i], r[j]) (j < 0: one
    argument).  For small functions shipped to the stepping process at run time (a fence's
    jet): loading an LLVM function costs 0.3-0.45 ms in a step that finds the caches cold,
    whatever its size, and compiling it 1-3 ms in the worker; a tape of 20 operations pickles
    in a few hundred bytes and runs in a few microseconds.  Same interface as ``Compiled``.
    Any failing operation (log of a negative number, say) makes every output nan."""

    __slots__ = ("n_in", "n_out", "regs", "prog", "outs")

    def __init__(self, args, exprs):
        reps, reduced = se.cse(list(exprs))
        consts, prog, slot = [], [], {}

        def const(v):
            consts.append(float(v))
            return -len(consts)            # negative: placeholder, numbered after the args

        def emit(e):
            if e in slot:
                return slot[e]
            if e.is_Number or e in (se.E, se.pi):
                k = slot[e] = const(e)
                return k
            if e.is_Symbol:
                raise CompilationError(f"symbol {e} is not an argument of the tape")
            name = type(e).__name__
            a = [emit(x) for x in e.args]
            if name in ("Add", "Mul"):
                fn = operator.add if name == "Add" else operator.mul
                k = a[0]
                for b in a[1:]:
                    prog.append([fn, k, b, None])
                    k = prog[-1]
                slot[e] = k
                return k
            if name == "Pow":
                b, x = e.args
                if b == se.E:
                    prog.append([math.exp, a[1], None, None])
                elif x == -1:
                    prog.append([_inv, a[0], None, None])
                elif x == se.Rational(1, 2):
                    prog.append([math.sqrt, a[0], None, None])
                elif x.is_Integer:
                    prog.append([operator.pow, a[0], a[1], None])
                else:
                    prog.append([math.pow, a[0], a[1], None])
            elif name in _FUNCTIONS and len(a) == 1:
                prog.append([_FUNCTIONS[name], a[0], None, None])
            else:
                raise CompilationError(f"{name} ({e}) has no tape operation")
            slot[e] = prog[-1]
            return prog[-1]

        for i, x in enumerate(args):
            slot[x] = ("arg", i)
        for sym, e in reps:
            slot[sym] = emit(e)
        outs = [emit(e) for e in reduced]
        # registers: arguments, constants, then one per operation
        n_in, n_c = len(args), len(consts)
        for i, ins in enumerate(prog):
            ins[3] = n_in + n_c + i

        def reg(k):
            if isinstance(k, tuple):
                return k[1]
            if isinstance(k, list):
                return k[3]
            return n_in + (-k - 1) if k < 0 else k
        self.prog = tuple((f, reg(i), -1 if j is None else reg(j), k) for f, i, j, k in prog)
        self.outs = tuple(reg(k) for k in outs)
        self.regs = [0.0] * n_in + consts + [0.0] * len(prog)
        self.n_in, self.n_out = n_in, len(self.outs)

    def unsafe_real(self, args, out):
        r = self.regs
        r[:self.n_in] = args.tolist()
        try:
            for f, i, j, k in self.prog:
                r[k] = f(r[i]) if j < 0 else f(r[i], r[j])
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


def mode_parts(model, eqs, params, outputs, residuals, guards, kappa=se.Integer(1),
               compose_ops=None):
    """Everything needed to compile a mode, as picklable symengine objects.
    ``kappa``: kappa(B1) as an expression of (t, q), a monitor so that watching it for
    re-selection (gillespie2005 Sec 5.4) costs no evaluation of its own.

    "explicit" (eq 16 solved symbolically): one function, the composed RK4 step.
    "linear": S z = s and qdot compiled as functions of x, the monitors of (x, z); z is
    solved numerically at each evaluation (no symbolic inverse of a large matrix).
    """
    ind = tuple(eqs.emb.ind)
    x = list(model.q) + [model.u[i] for i in ind]
    mon = (list(eqs.u_full) + list(eqs.forces) + list(outputs) + [max_abs(residuals), kappa]
           + list(guards) + list(eqs.multipliers))
    parts = {"x": x, "ind": ind, "dep": tuple(eqs.emb.dep), "params": list(params),
             "sizes": (model.n, len(eqs.forces), len(outputs), len(guards), len(eqs.multipliers))}
    if eqs.solution is not None:
        f = list(eqs.qdot) + list(eqs.udot_ind)
        parts.update(kind="explicit", args=[TIME, H] + x + list(params), f=f, mon=mon,
                     compose=se.count_ops(*mon) <= (compose_ops or COMPOSE_OPS))
    else:
        nz = len(eqs.z)
        parts.update(kind="linear", z=list(eqs.z), n_ud=len(ind),
                     sys=[eqs.S[i, j] for i in range(nz) for j in range(nz)]
                     + [eqs.s[i] for i in range(nz)] + list(eqs.qdot), mon=mon)
    return parts


def compile_parts(parts, key, backend=None):
    """The compiled functions of a mode's parts (what the background worker returns)."""
    if parts["kind"] == "explicit":
        if parts["compose"]:
            return (lambdify(parts["args"], _rk4_compose(parts["x"], parts["f"], parts["mon"]),
                             f"the RK4 step of mode {key}", backend),)
        step = lambdify(parts["args"], _rk4_compose(parts["x"], parts["f"], []),
                        f"the RK4 step of mode {key}", backend)
        mon = lambdify(parts["args"], parts["mon"], f"the monitors of mode {key}", backend)
        return (step, None, mon)
    ax = [TIME] + parts["x"] + parts["params"]
    axz = [TIME] + parts["x"] + parts["z"] + parts["params"]
    return (lambdify(ax, parts["sys"], f"the equations of mode {key}", backend),
            lambdify(axz, parts["mon"], f"the monitors of mode {key}", backend))


def make_mode(parts, key, fns=None, backend=None):
    """A compiled mode from its parts, or from the metadata and functions the background
    worker compiled (``embed.worker``)."""
    fns = fns if fns is not None else compile_parts(parts, key, backend)
    meta = dict(parts)
    meta.setdefault("nx", len(parts["x"]) if "x" in parts else None)
    if meta["kind"] == "linear":
        meta.setdefault("nz", len(parts["z"]) if "z" in parts else None)
    return (CompiledMode if meta["kind"] == "explicit" else LinearMode)(meta, key, fns)


class _Vector(list):
    """A list of expressions with the vector operations ``modes.rk4_scheme`` uses."""

    def __add__(self, other):
        return _Vector(a + b for a, b in zip(self, other))

    def __rmul__(self, c):
        return _Vector(c * a for a in self)


def _rk4_compose(x, f, mon):
    """The classical RK4 step (``modes.rk4_scheme``) composed symbolically: x(t+h), then mon
    and sum |x_i| at the result, as expressions of (t, h, x, p)."""
    x = _Vector(x)

    def stage(t, xs):
        if t is TIME and xs is x:
            return _Vector(f)
        sub = {xi: xs_i for xi, xs_i in zip(x, xs)}
        sub[TIME] = t
        return _Vector(e.subs(sub) for e in f)

    xn = list(rk4_scheme(stage, TIME, x, H))
    sub = {xi: xni for xi, xni in zip(x, xn)}
    sub[TIME] = TIME + H
    return xn + [e.subs(sub) for e in mon] + [sum((se.Abs(v) for v in xn), se.Integer(0))]
