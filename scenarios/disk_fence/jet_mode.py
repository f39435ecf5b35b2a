"""One announced profile's fence mode on the family's symbolic embedding (``JetMode``): the
right-hand side and monitors of the fence of any profile, called with the profile's jet at
every RK4 stage.
"""

from __future__ import annotations

import functools

import numpy as np

from embed.codegen.lambda_order import LambdaNative
from embed.codegen.native import NativeFunction
from embed.modes.modes import Layout

N_JET = 4       # the jet's length: h and three derivatives at s = q4 - L (``symbolic.JET``)


def __getattr__(name):
    """JET and LF_JET, the symbols ``symbolic`` makes (imported at their first use: this
    module is imported without symengine, issue 30)."""
    if name in ("JET", "LF_JET"):
        import importlib
        return getattr(importlib.import_module(__package__ + ".symbolic"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def raw_call(fn, args, out):
    """``fn.unsafe_real(args, out)`` as a call of no arguments, for arrays that stay where they
    are (a mode's own buffers; ``args``, ``out``: float64 arrays, or (array, offset) for the
    array from that element on): the C function itself with the two addresses bound, read
    once, where ``fn`` is object code (``NativeFunction``, ``LambdaNative``) and loaded; else
    ``unsafe_real`` on the arrays.  The same function at the same arguments: the same bits.
    numpy's ``.ctypes.data``, read twice a call by ``NativeFunction.unsafe_real``, costs 3 us
    (tens where an event step finds the caches cold: docs/design.md, facts), as much as a
    fence's jet itself; an RK4 step on a fence makes a dozen such calls."""
    (a, ao), (o, oo) = (x if isinstance(x, tuple) else (x, 0) for x in (args, out))
    native = fn.native if isinstance(fn, LambdaNative) else fn
    c = getattr(native, "_f", None) if isinstance(native, NativeFunction) else None
    if c is not None:
        return functools.partial(c, a.ctypes.data + 8 * ao, o.ctypes.data + 8 * oo)
    return functools.partial(fn.unsafe_real, a[ao:], o[oo:oo + fn.n_out])


def bindable(fn):
    """Whether ``raw_call`` binds ``fn`` for good now: its object code is loaded, or it is no
    object code (a Tape); a NativeFunction still loading would be bound to ``unsafe_real``."""
    native = fn.native if isinstance(fn, LambdaNative) else fn
    return not isinstance(native, NativeFunction) or getattr(native, "_f", None) is not None


class JetMode(Layout):
    """One announced profile's fence mode, on the family's symbolic embedding
    (``profile_family_modes``): the right-hand side and monitors are called with the
    profile's jet at s = q4 - L of the state they are evaluated at, so the classical RK4
    step runs stage by stage (as ``modes.rk4_stepwise``, in buffers of its own): the same
    minimal ODE as the profile embedded on its own, without compiling anything of it.
    The calls go to the C functions with the buffers' addresses bound (``raw_call``), made at
    the first step (the jet may still be loading when the mode is made) and not pickled."""

    path = "symbolic"
    _W = np.array([1.0, 2.0, 2.0, 1.0])

    def __init__(self, key, meta, f, mon, jet, L_f, i_L):
        Layout.__init__(self, *meta["sizes"])
        self.key, self.n, self.nx = key, meta["sizes"][0], meta["nx"]
        self.ind, self.dep = tuple(meta["ind"]), tuple(meta["dep"])
        self.fns = (f, mon, jet)
        self.n_in = f.n_in
        self.buf = b = np.zeros(f.n_in)        # [t, x, p, JET, L_f]
        b[-1] = L_f
        self.o_p = 1 + self.nx
        self.i_L = self.o_p + i_L
        self.s = np.zeros(1)                   # s = q4 - L
        self.k = np.zeros((4, self.nx))        # the RK4 stages (numpy's: W @ k as before)
        self.m = np.zeros(self.n_mon)          # the monitors
        self._views()

    def _views(self):
        self.bx = self.buf[1:self.o_p]
        self._calls = None
        self._rows = tuple(self.k)                 # the stages' rows, made once

    def __getstate__(self):
        """Without the C functions bound to this process's addresses, nor the view of the
        buffer (a copy's is of its own buffer)."""
        state = dict(self.__dict__)
        del state["bx"], state["_calls"], state["_rows"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._views()

    def calls(self):
        """(jet, rhs into each RK4 stage's row, monitors), each a call of no arguments."""
        if self._calls is None:
            f, mon, jet = self.fns
            j0 = self.n_in - 1 - N_JET
            self._calls = (raw_call(jet, self.s, (self.buf, j0)),
                           tuple(raw_call(f, self.buf, self.k[i]) for i in range(4)),
                           raw_call(mon, self.buf, self.m))
        return self._calls

    def bind(self):
        """``calls()`` made now if every function is loaded (``bindable``): by the loader
        thread's ``prepare_profile``, off the stepping path; at the disk's first contact
        with the fence they were 0.09 ms of a step of 0.9-1.2 ms (issue 30, tails)."""
        if all(bindable(f) for f in self.fns):
            self.calls()

    def _at(self, t, jet):
        """The buffer's state (bx) at time t, with its jet (``jet``: ``calls()[0]``)."""
        b = self.buf
        b[0] = t
        self.s[0] = b[1 + 3] - b[self.i_L]            # s = q4 - L
        jet()

    def _p(self, p):
        self.buf[self.o_p:self.o_p + p.size] = p

    def rhs(self, t, x, p):
        self._p(p)
        self.bx[:] = x
        jet, f, _ = self.calls()
        self._at(t, jet)
        f[0]()
        return self.k[0].copy()

    def monitors(self, t, x, p):
        self._p(p)
        self.bx[:] = x
        jet, _, mon = self.calls()
        self._at(t, jet)
        mon()
        return self.m.copy()

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|], as compile.rk4_stepwise: the operations of
        the stages as they were written with ``_at`` (the same bits), inlined with the stages'
        rows made once: the step is the fence's every step and twice its contact step, where
        its Python was a third of the step (issue 30, tails)."""
        b, bx, s, iL = self.buf, self.bx, self.s, self.i_L
        b[self.o_p:self.o_p + p.size] = p
        jet, f, mon = self._calls or self.calls()
        xn = x
        if h != 0.0:
            k0, k1, k2, _ = self._rows
            mul = np.multiply
            h2, t2 = h / 2, t + h / 2
            bx[:] = x
            b[0] = t
            s[0] = b[4] - b[iL]                # s = q4 - L (``_at``)
            jet()
            f[0]()
            mul(k0, h2, out=bx)
            bx += x
            b[0] = t2
            s[0] = b[4] - b[iL]
            jet()
            f[1]()
            mul(k1, h2, out=bx)
            bx += x
            s[0] = b[4] - b[iL]
            jet()
            f[2]()
            mul(k2, h, out=bx)
            bx += x
            b[0] = t + h
            s[0] = b[4] - b[iL]
            jet()
            f[3]()
            xn = x + (h / 6) * (self._W @ self.k)
        nx = self.nx
        out = np.empty(nx + self.n_mon + 1)
        out[:nx] = xn
        bx[:] = xn
        b[0] = t + h
        s[0] = b[4] - b[iL]
        jet()
        mon()
        out[nx:-1] = self.m
        out[-1] = np.abs(xn).sum()
        return out
