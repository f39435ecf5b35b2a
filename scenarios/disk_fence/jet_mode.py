"""One announced profile's fence mode on the family's symbolic embedding (``JetMode``): the
right-hand side and monitors of the fence of any profile, called with the profile's jet at
every RK4 stage.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from embed.codegen.lambda_order import LambdaNative
from embed.codegen.native import NativeFunction
from embed.modes.functions import Tape
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
    c = c_function(fn)
    if c is not None:
        return functools.partial(c, a.ctypes.data + 8 * ao, o.ctypes.data + 8 * oo)
    return functools.partial(fn.unsafe_real, a[ao:], o[oo:oo + fn.n_out])


def c_function(fn):
    """The C function (ctypes) of ``fn``'s loaded object code (``NativeFunction``,
    ``LambdaNative``), or None: no object code (a Tape), or not loaded yet."""
    native = fn.native if isinstance(fn, LambdaNative) else fn
    return getattr(native, "_f", None) if isinstance(native, NativeFunction) else None


def bindable(fn):
    """Whether ``raw_call`` binds ``fn`` for good now: its object code is loaded, or it is no
    object code (a Tape); a NativeFunction still loading would be bound to ``unsafe_real``."""
    native = fn.native if isinstance(fn, LambdaNative) else fn
    return not isinstance(native, NativeFunction) or c_function(fn) is not None


class JetMode(Layout):
    """One announced profile's fence mode, on the family's symbolic embedding
    (``profile_family_modes``): the right-hand side and monitors are called with the
    profile's jet at s = q4 - L of the state they are evaluated at, so the classical RK4
    step runs stage by stage (as ``modes.rk4_stepwise``, in buffers of its own): the same
    minimal ODE as the profile embedded on its own, without compiling anything of it.
    The calls go to the C functions with the buffers' addresses bound (``raw_call``), made at
    the first step (the jet may still be loading when the mode is made) and not pickled."""

    path = "symbolic"
    I_Q = 1 + 3        # q4's place in the buffer [t, x, ...]: s = q4 - L

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
        self.k = np.zeros((4, self.nx))        # the RK4 stages' rates
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
        self.s[0] = b[self.I_Q] - b[self.i_L]          # s = q4 - L
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

    def c_stages(self):
        """What fmu_src/runtime/loader/fast_step.c's ``staged`` needs to run ``rk4`` in C, to
        the bit (the FMU's communication steps on the fence without Python, issue 30): the
        addresses of the jet (or the jet itself, a ``Tape``: fast_step.c runs it), the
        right-hand side and the monitors, a copy of the buffer (L_f in it), where the jet goes
        in it, q4's place and L's; None while one of them is not loaded object code."""
        f, mon, jet = (c_function(fn) for fn in self.fns)
        tape = self.fns[2] if isinstance(self.fns[2], Tape) and self.fns[2].n_in == 1 else None
        if f is None or mon is None or (jet is None and tape is None):
            return None
        f, mon = (ctypes.cast(c, ctypes.c_void_p).value for c in (f, mon))
        jet = tape if jet is None else ctypes.cast(jet, ctypes.c_void_p).value
        return jet, f, mon, self.buf.copy(), self.n_in - 1 - N_JET, self.I_Q, self.i_L

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|], as compile.rk4_stepwise: the operations of
        the stages as they were written with ``_at`` (the same bits), inlined with the stages'
        rows made once: the step is the fence's every step and twice its contact step, where
        its Python was a third of the step (issue 30, tails).  fast_step.c's ``staged`` does
        the same operations in the same order (the final combination written out, not BLAS's
        ``W @ k``, whose order of sums is its own)."""
        b, bx, s, iL, iq = self.buf, self.bx, self.s, self.i_L, self.I_Q
        b[self.o_p:self.o_p + p.size] = p
        jet, f, mon = self._calls or self.calls()
        xn = x
        if h != 0.0:
            k0, k1, k2, k3 = self._rows
            mul = np.multiply
            h2, t2 = h / 2, t + h / 2
            bx[:] = x
            b[0] = t
            s[0] = b[iq] - b[iL]                # s = q4 - L (``_at``)
            jet()
            f[0]()
            mul(k0, h2, out=bx)
            bx += x
            b[0] = t2
            s[0] = b[iq] - b[iL]
            jet()
            f[1]()
            mul(k1, h2, out=bx)
            bx += x
            s[0] = b[iq] - b[iL]
            jet()
            f[2]()
            mul(k2, h, out=bx)
            bx += x
            b[0] = t + h
            s[0] = b[iq] - b[iL]
            jet()
            f[3]()
            xn = x + (h / 6) * (k0 + 2.0 * k1 + 2.0 * k2 + k3)
        nx = self.nx
        out = np.empty(nx + self.n_mon + 1)
        out[:nx] = xn
        bx[:] = xn
        b[0] = t + h
        s[0] = b[iq] - b[iL]
        jet()
        mon()
        out[nx:-1] = self.m
        total = 0.0
        for v in out[:nx].tolist():        # in order, as fast_step.c (numpy's sum pairs them)
            total += abs(v)
        out[-1] = total
        return out
