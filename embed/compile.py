"""Compile a mode's equations to numeric functions (the step where sympy/symengine stops).

A compiled mode is one function of the flat argument vector ``[t, h, x..., p...]``
(x = [q, u_ind], p the parameter vector) returning ``[x(t+h)..., monitors(x(t+h))...,
sum |x_i(t+h)|]``: a classical Runge-Kutta step composed symbolically into a single
call, followed by the monitors (full speeds, contact forces, outputs, largest
constraint residual, switching conditions) at the new state.  With h = 0 it
returns the monitors at x; with 0 < h < step it is the step's continuous
extension used to locate events.  The last entry is inf or nan exactly when the
new state is not finite.  The right-hand side alone (eq 2 and 16) is compiled on
first use, for the adaptive solver.
"""

from __future__ import annotations

import numpy as np
import symengine as se

from .errors import CompilationError
from .model import TIME

H = se.Symbol("h_step")

# symengine's "lambda" backend builds a tree of compiled C++ closures: measured here for
# the disk's RK4 step, 0.1-0.3 ms to build and 1.9 us a call, against 4-5 ms and 1.2 us
# for "llvm".  Building fast is what makes on-line embedding fit in a 1 ms step.
BACKEND = "lambda"


def lambdify(args, exprs, what, backend=None):
    """symengine Lambdify with common-subexpression elimination."""
    try:
        return se.Lambdify(args, exprs, real=True, backend=backend or BACKEND, cse=True)
    except Exception as exc:  # symengine raises RuntimeError/TypeError variants
        raise CompilationError(f"could not compile {what}: {exc}") from exc


class CompiledMode:
    """Numeric functions of one mode (one constraint set, partition and force laws).

    ``layout`` gives the slices of the monitor vector: u (n full speeds), forces,
    outputs, residual (1), guards.
    """

    def __init__(self, model, eqs, params, outputs, residuals, guards, key):
        self.key = key
        self.n = model.n
        self.ind = eqs.emb.ind
        self.dep = eqs.emb.dep
        x = list(model.q) + [model.u[i] for i in self.ind]
        self.nx = len(x)
        f = list(eqs.qdot) + list(eqs.udot_ind)
        res = se.Max(*[se.Abs(r) for r in residuals]) if len(residuals) > 1 else (
            se.Abs(residuals[0]) if residuals else se.Integer(0))
        mon = list(eqs.u_full) + list(eqs.forces) + list(outputs) + [res] + list(guards)
        n, k, o = self.n, len(eqs.forces), len(outputs)
        self.sl_u = slice(0, n)
        self.sl_forces = slice(n, n + k)
        self.sl_outputs = slice(n + k, n + k + o)
        self.i_res = n + k + o
        self.sl_guards = slice(n + k + o + 1, n + k + o + 1 + len(guards))
        self.n_mon = len(mon)
        self._args = [TIME, H] + x + list(params)
        self._f = f
        self._rhs = None
        self._step = lambdify(self._args, _rk4_compose(x, f, mon), f"the RK4 step of mode {key}")
        self._buf = np.zeros(len(self._args))

    def _load(self, t, h, x, p):
        b = self._buf
        b[0] = t
        b[1] = h
        b[2:2 + self.nx] = x
        b[2 + self.nx:] = p
        return b

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|] for one RK4 step of length h."""
        out = np.empty(self.nx + self.n_mon + 1)
        self._step.unsafe_real(self._load(t, h, x, p), out)
        return out

    def monitors(self, t, x, p):
        return self.rk4(t, 0.0, x, p)[self.nx:-1]

    def rhs(self, t, x, p):
        if self._rhs is None:
            self._rhs = lambdify(self._args, self._f, f"the right-hand side of mode {self.key}")
        out = np.empty(self.nx)
        self._rhs.unsafe_real(self._load(t, 0.0, x, p), out)
        return out


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
