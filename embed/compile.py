"""Compile a mode's equations to numeric functions (the step where sympy/symengine stops).

Each compiled mode offers three functions of one flat argument vector
``[t, h, x..., p...]`` with x = [q, u_ind] and p the parameter vector:

- ``rhs``: xdot = [W u + X, udot_ind] (eq 2 and 16);
- ``rk4``: one classical Runge-Kutta step of length h composed symbolically into a
  single function, followed by the monitors at the new state, so a fixed step costs
  one call; with h < step it is also the step's continuous extension used to
  locate events;
- ``monitors``: full speeds, contact forces, switching conditions, outputs and
  constraint residuals at a state.
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
    """Numeric functions of one mode (one constraint set, partition and force laws)."""

    def __init__(self, model, eqs, params, monitor_exprs, residual_exprs, key):
        self.key = key
        self.n = model.n
        self.ind = eqs.emb.ind
        self.dep = eqs.emb.dep
        self.p = len(self.ind)
        x = list(model.q) + [model.u[i] for i in self.ind]
        self.nx = len(x)
        f = list(eqs.qdot) + list(eqs.udot_ind)
        mon = list(eqs.u_full) + list(eqs.forces) + list(monitor_exprs) + list(residual_exprs)
        self.n_mon = len(mon)
        self.n_res = len(residual_exprs)
        args = [TIME, H] + x + list(params)
        self.nargs = len(args)
        self._args, self._f = args, f
        self._rhs = None         # compiled on first use (only the adaptive solver needs it)
        self._mon = lambdify(args, mon, f"the monitors of mode {key}")
        step = _rk4_compose(x, f, mon)
        self._rk4 = lambdify(args, step, f"the RK4 step of mode {key}")
        self._buf = np.zeros(self.nargs)
        self._xdot = np.zeros(self.nx)
        self._mon_out = np.zeros(self.n_mon)
        self._step_out = np.zeros(self.nx + self.n_mon)

    def _load(self, t, h, x, p):
        b = self._buf
        b[0] = t
        b[1] = h
        b[2:2 + self.nx] = x
        b[2 + self.nx:] = p
        return b

    def rhs(self, t, x, p):
        if self._rhs is None:
            self._rhs = lambdify(self._args, self._f, f"the right-hand side of mode {self.key}")
        out = np.empty(self.nx)
        self._rhs.unsafe_real(self._load(t, 0.0, x, p), out)
        return out

    def monitors(self, t, x, p):
        out = np.empty(self.n_mon)
        self._mon.unsafe_real(self._load(t, 0.0, x, p), out)
        return out

    def rk4(self, t, h, x, p):
        """x(t+h) and the monitors there, as one array [x_new..., mon...]."""
        out = np.empty(self.nx + self.n_mon)
        self._rk4.unsafe_real(self._load(t, h, x, p), out)
        return out


def _rk4_compose(x, f, mon):
    """Classical RK4 step x -> x + h/6 (k1 + 2 k2 + 2 k3 + k4), then mon at the result."""
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
    return xn + [e.subs(sub) for e in mon]
