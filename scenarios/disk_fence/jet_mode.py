"""One announced profile's fence mode on the family's symbolic embedding (``JetMode``): the
right-hand side and monitors of the fence of any profile, called with the profile's jet at
every RK4 stage.
"""

from __future__ import annotations

import numpy as np
import symengine as se

from embed.modes.modes import Layout

JET = tuple(se.Symbol(f"fence_h{k}") for k in range(4))    # d^k h / ds^k at s = q4 - L
LF_JET = se.Symbol("fence_Lf")


class JetMode(Layout):
    """One announced profile's fence mode, on the family's symbolic embedding
    (``profile_family_modes``): the right-hand side and monitors are called with the
    profile's jet at s = q4 - L of the state they are evaluated at, so the classical RK4
    step runs stage by stage (as ``modes.rk4_stepwise``, in buffers of its own): the same
    minimal ODE as the profile embedded on its own, without compiling anything of it."""

    path = "symbolic"
    _W = np.array([1.0, 2.0, 2.0, 1.0])

    def __init__(self, key, meta, f, mon, jet, L_f, i_L):
        Layout.__init__(self, *meta["sizes"])
        self.key, self.n, self.nx = key, meta["sizes"][0], meta["nx"]
        self.ind, self.dep = tuple(meta["ind"]), tuple(meta["dep"])
        self.f, self.mon, self.jet = f.unsafe_real, mon.unsafe_real, jet.unsafe_real
        self.buf = b = np.zeros(f.n_in)        # [t, x, p, JET, L_f]
        b[-1] = L_f
        self.o_p = 1 + self.nx
        self.i_L = self.o_p + i_L
        self.bx, self.bj = b[1:self.o_p], b[f.n_in - 1 - len(JET):f.n_in - 1]
        self.s = np.zeros(1)
        self.k = np.zeros((4, self.nx))

    def _at(self, t):
        """The buffer's state (bx) at time t, with its jet."""
        b = self.buf
        b[0] = t
        self.s[0] = b[1 + 3] - b[self.i_L]            # s = q4 - L
        self.jet(self.s, self.bj)
        return b

    def _p(self, p):
        self.buf[self.o_p:self.o_p + p.size] = p

    def _call(self, fn, n, t, x, p):
        self._p(p)
        self.bx[:] = x
        out = np.empty(n)
        fn(self._at(t), out)
        return out

    def rhs(self, t, x, p):
        return self._call(self.f, self.nx, t, x, p)

    def monitors(self, t, x, p):
        return self._call(self.mon, self.n_mon, t, x, p)

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|], as compile.rk4_stepwise."""
        self._p(p)
        bx, k, f = self.bx, self.k, self.f
        xn = x
        if h != 0.0:
            bx[:] = x
            f(self._at(t), k[0])
            np.multiply(k[0], h / 2, out=bx)
            bx += x
            f(self._at(t + h / 2), k[1])
            np.multiply(k[1], h / 2, out=bx)
            bx += x
            f(self._at(t + h / 2), k[2])
            np.multiply(k[2], h, out=bx)
            bx += x
            f(self._at(t + h), k[3])
            xn = x + (h / 6) * (self._W @ k)
        nx = self.nx
        out = np.empty(nx + self.n_mon + 1)
        out[:nx] = xn
        bx[:] = xn
        self.mon(self._at(t + h), out[nx:-1])
        out[-1] = np.abs(xn).sum()
        return out
