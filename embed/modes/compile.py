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
scheme live in ``embed.modes.modes``; they are re-exported here.  See docs/design.md, "Data flow".
"""

from __future__ import annotations

import math
import operator

import numpy as np
import symengine as se

from ..model.constraints import phi_and_gradient
from ..base.errors import CompilationError
from ..model.model import TIME
from .driven import DrivenMode, compile_driven
from .modes import (CompiledMode, Layout, LinearMode, MonitorLayout,  # noqa: F401 - re-exported
                    ProgramMode, _SymbolicMode, rk4_scheme, rk4_stepwise)
from ..codegen.native import (OPT_FAST, OPT_RUN, RUN_MAX_OPS, NativeFunction, compile_program,
                     largest_function)
from ..codegen.program import Memo, Program

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


class Tape:
    """A few expressions (symengine) of a few arguments as a straight-line program
    (``embed.codegen.program``) run in plain floats: (function, i, j, k) sets register k to
    function(r[i], r[j]) (j < 0: one argument).  For small functions shipped to the stepping
    process at run time (a fence's jet): loading an LLVM function costs 0.3-0.45 ms in a step
    that finds the caches cold, whatever its size, and compiling it 1-3 ms in the worker; a
    tape of 20 operations pickles in a few hundred bytes and runs in a few microseconds.  Same
    interface as ``Compiled``.  Any failing operation (log of a negative number, say) makes
    every output nan.

    An instruction is (o, i, j, k) with o the function's number in ``_TAPE_FNS``: a tuple of
    ints only, which the cyclic collector stops tracking.  A run keeps every fence's tape (a
    fence announced again is ready at once); as (function, i, j, k) tuples, the 86,000
    instructions of 94 fences made one full collection take 50-60 ms of a step."""

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
    phi = [phi_and_gradient(model, c) for c in eqs.emb.cset.items if c.holonomic]
    parts = {"x": x, "ind": ind, "dep": tuple(eqs.emb.dep), "params": list(params), "phi": phi,
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
    """The compiled functions of a mode's parts (what the background worker returns): a
    "linear" mode is one straight-line program (``linear_program``) compiled by LLVM (codegen
    level 1 when entered on the symbolic path, which compiles in the step anyway, so that the
    steps after it are fast; for the worker, ``backend="llvm"``, by size: a large program
    without cse at level 0 first, ``embed.background.worker`` sends level 1 after it), or, where the
    program has an
    operation LLVM is not given, S and s for ``LinearMode``."""
    if parts["kind"] == "driven":
        return compile_driven(parts, key, backend)
    if parts["kind"] == "explicit":
        if parts["compose"]:
            return (lambdify(parts["args"], _rk4_compose(parts["x"], parts["f"], parts["mon"]),
                             f"the RK4 step of mode {key}", backend),)
        step = lambdify(parts["args"], _rk4_compose(parts["x"], parts["f"], []),
                        f"the RK4 step of mode {key}", backend)
        mon = lambdify(parts["args"], parts["mon"], f"the monitors of mode {key}", backend)
        return (step, None, mon)
    what = f"the RK4 step of mode {key}"
    try:
        if backend == "llvm":     # the worker: a large program fast first (no cse, level 0)
            prog, outs = linear_program(parts, cse=False)
            if largest_function(prog, outs) > RUN_MAX_OPS:
                return (compile_program(prog, outs, what, OPT_FAST),)
        prog, outs = linear_program(parts)
        return (compile_program(prog, outs, what, OPT_RUN),)
    except CompilationError:
        pass
    ax = [TIME] + parts["x"] + parts["params"]
    axz = [TIME] + parts["x"] + parts["z"] + parts["params"]
    return (lambdify(ax, parts["sys"], f"the equations of mode {key}", backend),
            lambdify(axz, parts["mon"], f"the monitors of mode {key}", backend))


def make_mode(parts, key, fns=None, backend=None):
    """A compiled mode from its parts, or from the metadata and functions the background
    worker compiled (``embed.background.worker``)."""
    fns = fns if fns is not None else compile_parts(parts, key, backend)
    meta = dict(parts)
    meta.setdefault("nx", len(parts["x"]) if "x" in parts else None)
    if meta["kind"] == "linear":
        meta.setdefault("nz", len(parts["z"]) if "z" in parts else None)
    if meta["kind"] == "explicit":
        return CompiledMode(meta, key, fns)
    if meta["kind"] == "driven" and not isinstance(fns[0], NativeFunction):
        return DrivenMode(meta, key, fns)
    return (ProgramMode if isinstance(fns[0], NativeFunction) else LinearMode)(meta, key, fns)


def _template(args, exprs, cse=True):
    """``exprs`` of ``args`` as a program of its own, to be spliced in (``_splice``) once for
    each stage: common subexpressions eliminated once, not at every stage."""
    prog = Program(len(args))
    return prog, prog.emit(exprs, {a: i for i, a in enumerate(args)}, cse)


def _splice(prog, template, regs):
    """Append ``template`` = (program, outputs) to ``prog`` with its arguments in ``regs``;
    returns the registers of its outputs."""
    tp, outs = template
    if len(regs) != tp.n_in:
        raise CompilationError(f"template of {tp.n_in} arguments given {len(regs)}")
    where = list(regs) + [None] * len(tp.ops)
    n_in = tp.n_in
    for k, (op, a, b) in enumerate(tp.ops):
        if op == "const":
            r = prog.const(a)
        elif b is None:
            r = prog.unary(op, where[a])
        else:
            r = prog.binary(op, where[a], where[b])
        where[n_in + k] = r
    return [where[o] for o in outs]


def rk4_program(nx, n_rest, stage, final, correct=None):
    """The classical RK4 step (``modes.rk4_scheme``) as a program calling ``stage`` four times
    and ``final`` once, each a program of [t, x..., rest...] compiled once as a function of
    its own (``Program.call``; ``stage`` returns xdot first, then what ``final`` may take
    from it by calling it too): arguments [t, h, x..., rest...], outputs [x(t+h)...,
    final(t+h, x(t+h))..., sum |x_i(t+h)|] (the composed step's layout, ``CompiledMode``).
    ``final``'s last nx outputs are xdot at its arguments (the stage it calls), which the
    step remembers (``program.Memo``): the next step's first stage, if it starts there with
    the same arguments, is not evaluated again (first same as last; the result is the same
    to the bit), nor that of a step from the state an event entered
    (``TermsProgramMode.enter``).
    ``correct``, a program of the same arguments returning x, is applied to x(t+h) first
    (``newton_program``)."""
    prog = Program(2 + nx + n_rest)
    prog.memo = Memo(stage, nx)
    t, h = 0, 1
    xr, rest = list(range(2, 2 + nx)), list(range(2 + nx, 2 + nx + n_rest))

    def f(tt, xs, memo=False):  # the stage's first nx outputs are xdot (then its extras)
        return prog.call(stage, [tt] + xs + rest, memo)[:nx]

    half = prog.mul(h, prog.const(0.5))
    th, t1 = prog.add(t, half), prog.add(t, h)
    k1 = f(t, xr, memo=True)
    k2 = f(th, [prog.add(a, prog.mul(half, b)) for a, b in zip(xr, k1)])
    k3 = f(th, [prog.add(a, prog.mul(half, b)) for a, b in zip(xr, k2)])
    k4 = f(t1, [prog.add(a, prog.mul(h, b)) for a, b in zip(xr, k3)])
    sixth = prog.div(h, prog.const(6.0))
    two = prog.const(2.0)
    xn = [prog.add(xr[i], prog.mul(sixth, prog.add(prog.add(k1[i], k4[i]),
                                                  prog.mul(two, prog.add(k2[i], k3[i])))))
          for i in range(nx)]
    if correct is not None:
        xn = prog.call(correct, [t1] + xn + rest)
    mon = prog.call(final, [t1] + xn + rest)
    prog.remember([t1] + xn + rest, mon[-nx:])
    mon = mon[:-nx]
    prog.exports["monitors"] = prog.subs.index(final)      # the monitors alone, at x
    total = prog.const(0.0)
    for r in xn:
        total = prog.add(total, prog.unary("fabs", r))
    return prog, xn + mon + [total]


def newton_program(q, nx, params, n_rest, phi_rows):
    """One Newton step toward Phi(q) = 0 with a fresh chart (haug_pavesic2023 eq 13-14,
    U = Phi_q^T, B = (Phi_q U)^-1): q <- q - flag Phi_q^T (Phi_q Phi_q^T)^-1 Phi(q), the
    speeds unchanged (the dependent ones follow from the embedding at the new q, eq 12), as a
    program of [t, x..., rest...] (x = [q, u_ind], ``nx`` long) whose ``rest`` begins with the parameters ``params`` and
    ends with the flag (1: correct, 0: not); ``phi_rows``: [Phi, Phi_q...] of each holonomic
    constraint (``constraints.phi_and_gradient``).  After an RK4 step |Phi| is about the
    step's local error: one step takes it to roundoff, so the Newton iteration of
    ``embed.hybrid.projection`` (eq 13-16, held chart) is left with nothing to do in most steps."""
    n, mh = len(q), len(phi_rows)
    if mh > 3:
        raise CompilationError(f"{mh} configuration constraints: the step's correction holds 3")
    tmpl = _template([TIME] + list(q) + list(params), [e for row in phi_rows for e in row])
    prog = Program(1 + nx + n_rest)
    v = _splice(prog, tmpl, [0] + list(range(1, 1 + n))
                + list(range(1 + nx, 1 + nx + len(params))))
    rows = [v[k * (n + 1):(k + 1) * (n + 1)] for k in range(mh)]
    G, r = [row[1:] for row in rows], [row[0] for row in rows]
    y = prog.solve_small([[prog.dot(G[i], G[j]) for j in range(mh)] for i in range(mh)], r)
    flag = prog.n_in - 1
    xq = [prog.sub(1 + i, prog.mul(flag, prog.dot([G[k][i] for k in range(mh)], y)))
          for i in range(n)]
    return prog, xq + list(range(1 + n, 1 + nx))


def rhs_program(nx, n_rest, stage):
    """xdot = stage(t, x) as a program of [t, h, x..., rest...] (the step's arguments)."""
    prog = Program(2 + nx + n_rest)
    return prog, prog.call(stage, [0] + list(range(2, 2 + nx + n_rest)))[:nx]


def linear_program(parts, rhs_only=False, cse=True):
    """A "linear" mode's RK4 step as one straight-line program (eq 15-16 solved inside it,
    ``rk4_program``); ``rhs_only``: xdot at (t, x) alone (the adaptive solver's right-hand
    side, eq 2 and 16).  At each stage S z = s is solved for z = [udot_ind, free forces]:
    S's udot_ind block is the reduced mass matrix T^T M T of eq 15 (negative definite:
    unrolled LDL^T, no pivoting), the forces by their Schur complement (at most 3, Cramer's
    rule).  ``cse``: as in ``Program.emit``."""
    x, params, z = parts["x"], parts["params"], parts["z"]
    nx, nz, n_ud, n = len(x), len(z), parts["n_ud"], parts["sizes"][0]
    k = nz - n_ud
    if k > 3:
        raise CompilationError(f"{k} free forces: the straight-line program solves at most 3")
    sys_t = _template([TIME] + x + params, parts["sys"], cse)
    mon_t = _template([TIME] + x + z + params, parts["mon"], cse)

    def solve(prog):
        """z at the program's arguments [t, x..., p...]; and qdot."""
        v = _splice(prog, sys_t, list(range(prog.n_in - 1)))     # the flag is not read
        S = [v[i * nz:(i + 1) * nz] for i in range(nz)]
        s, qdot = v[nz * nz:nz * nz + nz], v[nz * nz + nz:nz * nz + nz + n]
        A = [row[:n_ud] for row in S[:n_ud]]
        cols = prog.ldl_solve(A, [s[:n_ud]] + [[S[i][n_ud + j] for i in range(n_ud)]
                                                for j in range(k)])
        xs_, xb = cols[0], cols[1:]
        if not k:
            return qdot, xs_
        # Schur complement of A: (S22 - S21 A^-1 S12) f = s2 - S21 A^-1 s1
        S21 = [row[:n_ud] for row in S[n_ud:]]
        sch = [[prog.sub(S[n_ud + i][n_ud + j], prog.dot(S21[i], xb[j])) for j in range(k)]
               for i in range(k)]
        f = prog.solve_small(sch, [prog.sub(s[n_ud + i], prog.dot(S21[i], xs_))
                                   for i in range(k)])
        udi = [prog.sub(xs_[i], prog.dot([xb[j][i] for j in range(k)], f)) for i in range(n_ud)]
        return qdot, udi + f

    n_rest = len(params) + 1               # the parameters, then the correction's flag
    stage = Program(1 + nx + n_rest)
    qdot, zs = solve(stage)
    stage = (stage, qdot + zs)                   # xdot = [qdot, udot_ind], then the forces
    if rhs_only:
        return rhs_program(nx, n_rest, stage)
    final = Program(1 + nx + n_rest)             # the monitors: the stage called, then
    args = list(range(final.n_in))               # the monitors' expressions of z (and
    v = final.call(stage, args)                  # xdot, for the next step: ``rk4_program``)
    mon = _splice(final, mon_t, args[:1 + nx] + v[n:] + args[1 + nx:-1])
    correct = newton_program(x[:n], nx, params, n_rest, parts["phi"]) if parts["phi"] else None
    return rk4_program(nx, n_rest, stage, (final, mon + v[:nx]), correct)


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
