"""Compile a mode's equations to numeric functions (the step where sympy/symengine stops).

A compiled mode is one function of the flat argument vector ``[t, h, x..., p...]``
(x = [q, u_ind], p the parameter vector) returning ``[x(t+h)..., monitors(x(t+h))...,
sum |x_i(t+h)|]``: a classical Runge-Kutta step composed symbolically into a single
call, followed by the monitors (full speeds, contact forces, outputs, largest
constraint residual, kappa(B1), switching conditions, multipliers) at the new state.  With
h = 0 it returns the monitors at x; with 0 < h < step it is the step's continuous
extension used to locate events.  The last entry is inf or nan exactly when the new
state is not finite.  The right-hand side alone (eq 2 and 16) is compiled on first
use, for the adaptive solver.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import symengine as se

from .errors import CompilationError
from .model import TIME

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

class Layout:
    """Slices of a mode's monitor vector, the same on the symbolic and the numeric path:
    u (n full speeds), forces (k), outputs, residual (1), kappa(B1) (1), guards,
    multipliers (m)."""

    def __init__(self, n, k, n_out, n_guards, m):
        self.sizes = (n, k, n_out, n_guards, m)
        self.sl_u = slice(0, n)
        self.sl_forces = slice(n, n + k)
        self.sl_outputs = slice(n + k, n + k + n_out)
        self.i_res = n + k + n_out
        self.i_kappa = self.i_res + 1
        self.sl_guards = slice(self.i_res + 2, self.i_res + 2 + n_guards)
        self.sl_lambda = slice(self.sl_guards.stop, self.sl_guards.stop + m)
        self.n_mon = self.sl_lambda.stop


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


class _SymbolicMode(Layout):
    """What every compiled mode knows: its key, partition and monitor layout."""

    path = "symbolic"

    def __init__(self, meta, key):
        Layout.__init__(self, *meta["sizes"])
        self.key = key
        self.n = meta["sizes"][0]
        self.ind, self.dep = tuple(meta["ind"]), tuple(meta["dep"])
        self.nx = meta["nx"]


class CompiledMode(_SymbolicMode):
    """Symbolic path: the compiled functions of one mode (constraint set, partition, laws)."""

    def __init__(self, meta, key, fns):
        _SymbolicMode.__init__(self, meta, key)
        self._args, self._f = meta.get("args"), meta.get("f")
        self._step = fns[0]
        self._rhs = fns[1] if len(fns) > 1 else None
        self._mon = fns[2] if len(fns) > 2 else None    # monitors apart from the step
        self._buf = np.zeros(0)

    def _load(self, t, h, x, p):
        b = self._buf
        if b.size != 2 + self.nx + p.size:
            b = self._buf = np.zeros(2 + self.nx + p.size)
        b[0] = t
        b[1] = h
        b[2:2 + self.nx] = x
        b[2 + self.nx:] = p
        return b

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|] for one RK4 step of length h."""
        out = np.empty(self.nx + self.n_mon + 1)
        if self._mon is None:
            self._step.unsafe_real(self._load(t, h, x, p), out)
            return out
        y = np.empty(self.nx + 1)
        self._step.unsafe_real(self._load(t, h, x, p), y)
        out[:self.nx] = y[:self.nx]
        out[-1] = y[-1]
        self._mon.unsafe_real(self._load(t + h, 0.0, y[:self.nx], p), out[self.nx:-1])
        return out

    def monitors(self, t, x, p):
        if self._mon is None:
            return self.rk4(t, 0.0, x, p)[self.nx:-1]
        out = np.empty(self.n_mon)
        self._mon.unsafe_real(self._load(t, 0.0, x, p), out)
        return out

    def set_rhs(self, fn):
        """The right-hand side compiled elsewhere (the background worker)."""
        self._rhs = fn

    def rhs(self, t, x, p):
        if self._rhs is None:
            if self._f is None:
                raise CompilationError(f"mode {self.key} came from the background worker without "
                                       "its right-hand side (ask for it with rhs=True)")
            self._rhs = lambdify(self._args, self._f, f"the right-hand side of mode {self.key}")
        out = np.empty(self.nx)
        self._rhs.unsafe_real(self._load(t, 0.0, x, p), out)
        return out


class LinearMode(_SymbolicMode):
    """Symbolic path for larger modes: compiled S(x), s(x), qdot(x) and monitors(x, z);
    z = [udot_ind, forces] solved numerically (LU) at each evaluation; RK4 in Python."""

    def __init__(self, meta, key, fns):
        _SymbolicMode.__init__(self, meta, key)
        self.nz = meta["nz"]
        self.n_ud = meta["n_ud"]
        self._sys, self._mon = fns

    def _solve(self, t, x, p):
        nz = self.nz
        v = self._sys(np.concatenate(([t], x, p)))
        S = v[:nz * nz].reshape(nz, nz)
        z = np.linalg.solve(S, v[nz * nz:nz * nz + nz]) if nz else np.zeros(0)
        return z, v[nz * nz + nz:nz * nz + nz + self.n]

    def rhs(self, t, x, p):
        z, qdot = self._solve(t, x, p)
        return np.concatenate((qdot, z[:self.n_ud]))

    def monitors(self, t, x, p):
        z, _ = self._solve(t, x, p)
        return self._mon(np.concatenate(([t], x, z, p)))

    def rk4(self, t, h, x, p):
        return rk4_stepwise(self, t, h, x, p)


def rk4_stepwise(mode, t, h, x, p):
    """Classical RK4 step evaluated stage by stage (modes whose right-hand side involves a
    numeric solve), then the monitors: the same output as a composed step."""
    if h == 0.0:
        xn = x
    else:
        k1 = mode.rhs(t, x, p)
        k2 = mode.rhs(t + h / 2, x + h / 2 * k1, p)
        k3 = mode.rhs(t + h / 2, x + h / 2 * k2, p)
        k4 = mode.rhs(t + h, x + h * k3, p)
        xn = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.concatenate((xn, mode.monitors(t + h, xn, p), [np.sum(np.abs(xn))]))


def _rk4_compose(x, f, mon):
    """Classical RK4 step x -> x + h/6 (k1 + 2 k2 + 2 k3 + k4), then mon and sum |x_i| at the result."""
    def at(shift, tshift):
        sub = {xi: xi + shift[i] for i, xi in enumerate(x)}
        sub[TIME] = TIME + tshift
        return [e.subs(sub) for e in f]

    half = H / 2
    k1 = f
    k2 = at([half * k for k in k1], half)
    k3 = at([half * k for k in k2], half)
    k4 = at([H * k for k in k3], H)
    xn = [xi + H / 6 * (a + 2 * b + 2 * c + d) for xi, a, b, c, d in zip(x, k1, k2, k3, k4)]
    sub = {xi: xni for xi, xni in zip(x, xn)}
    sub[TIME] = TIME + H
    return xn + [e.subs(sub) for e in mon] + [sum((se.Abs(v) for v in xn), se.Integer(0))]
