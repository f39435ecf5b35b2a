"""Compile a mode's equations to numeric functions (the step where sympy/symengine stops).

A compiled mode is one function of the flat argument vector ``[t, h, x..., p...]``
(x = [q, u_ind], p the parameter vector) returning ``[x(t+h)..., monitors(x(t+h))...,
sum |x_i(t+h)|]``: a classical Runge-Kutta step composed symbolically into a single
call, followed by the monitors (full speeds, contact forces, outputs, largest
constraint residual, kappa(B1), switching conditions, multipliers) at the new state
(``modes.MonitorLayout``).  With 0 < h < step it is the step's continuous extension used
to locate events.  The last entry is inf or nan exactly when the new state is not finite.
The right-hand side alone (eq 2 and 16) is compiled on first use, for the adaptive
solver.  The compiled modes themselves (``CompiledMode``, ``LinearMode``, ``ProgramMode``) and
the RK4 scheme live in ``embed.modes.modes``, the compiled functions in
``embed.modes.functions`` and the straight-line programs in ``embed.modes.programs``; this
module forms a mode's parts and makes its compiled mode.  See docs/design.md, "Data flow".
"""

from __future__ import annotations

from ..base.lazy import symengine as se

from ..model.constraints import phi_and_gradient
from ..base.errors import CompilationError
from ..model import symbols
from .driven import DrivenMode, compile_driven
from .modes import CompiledMode, LinearMode, ProgramMode, rk4_scheme
from .functions import lambdify, max_abs
from .programs import linear_program
from ..codegen.native import (OPT_FAST, OPT_RUN, RUN_MAX_OPS, NativeFunction, compile_program,
                     largest_function)

_H = []        # the step's symbol h, made at the first step formed (symengine imported then)


def step_symbol():
    """The symbol h of the composed step's argument vector (t, h, x, p); one object."""
    if not _H:
        _H.append(se.Symbol("h_step"))
    return _H[0]
COMPOSE_OPS = 400   # monitors up to this many operations go into the composed RK4 step;
                    # beyond, they are a second function (multipliers pushed through the
                    # composition took minutes to compile for the triple slider-crank)

def mode_parts(model, eqs, params, outputs, residuals, guards, kappa=None,
               compose_ops=None):
    """Everything needed to compile a mode, as picklable symengine objects.
    ``kappa``: kappa(B1) as an expression of (t, q), a monitor so that watching it for
    re-selection (gillespie2005 Sec 5.4) costs no evaluation of its own.

    "explicit" (eq 16 solved symbolically): one function, the composed RK4 step.
    "linear": S z = s and qdot compiled as functions of x, the monitors of (x, z); z is
    solved numerically at each evaluation (no symbolic inverse of a large matrix).
    """
    if kappa is None:
        kappa = se.Integer(1)
    ind = tuple(eqs.emb.ind)
    x = list(model.q) + [model.u[i] for i in ind]
    mon = (list(eqs.u_full) + list(eqs.forces) + list(outputs) + [max_abs(residuals), kappa]
           + list(guards) + list(eqs.multipliers))
    phi = [phi_and_gradient(model, c) for c in eqs.emb.cset.items if c.holonomic]
    parts = {"x": x, "ind": ind, "dep": tuple(eqs.emb.dep), "params": list(params), "phi": phi,
             "sizes": (model.n, len(eqs.forces), len(outputs), len(guards), len(eqs.multipliers))}
    if eqs.solution is not None:
        f = list(eqs.qdot) + list(eqs.udot_ind)
        parts.update(kind="explicit", args=[symbols.TIME, step_symbol()] + x + list(params),
                     f=f, mon=mon,
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
    ax = [symbols.TIME] + parts["x"] + parts["params"]
    axz = [symbols.TIME] + parts["x"] + parts["z"] + parts["params"]
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
        if t is symbols.TIME and xs is x:
            return _Vector(f)
        sub = {xi: xs_i for xi, xs_i in zip(x, xs)}
        sub[symbols.TIME] = t
        return _Vector(e.subs(sub) for e in f)

    H = step_symbol()
    xn = list(rk4_scheme(stage, symbols.TIME, x, H))
    sub = {xi: xni for xi, xni in zip(x, xn)}
    sub[symbols.TIME] = symbols.TIME + H
    return xn + [e.subs(sub) for e in mon] + [sum((se.Abs(v) for v in xn), se.Integer(0))]
