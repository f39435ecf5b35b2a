"""Compiled modes: one protocol (rhs, monitors, rk4 step), one monitor layout, one RK4 scheme.

A compiled mode is one mode of the automaton (constraint set, partition, laws) as numeric
functions of x = [q, u_ind] (gillespie2005 eq 11-16; docs/design.md, "Data flow": the compiled
numeric step, cached per constraint set and partition).  Every implementation follows
``CompiledModeProtocol``:

- ``rhs(t, x, p)``: xdot = [qdot, udot_ind] (eq 2 and 16);
- ``monitors(t, x, p)``: the monitor vector at x, laid out by ``MonitorLayout``;
- ``rk4(t, h, x, p)``: one classical RK4 step of length h > 0 (``rk4_scheme``) and what the
  integrators need at its end: [x(t+h)..., monitors(x(t+h))..., sum |x_i(t+h)|] (the last
  entry is inf or nan exactly when the new state is not finite);
- ``output_at(t, x, p)``: the same vector at x itself, without a step.

Implementations: ``CompiledMode`` (eq 16 solved symbolically, the RK4 step composed into
one compiled call), ``LinearMode`` (S z = s solved numerically at each stage), here;
``NumericMode`` (the compiled-terms path, Sec 5.5) in ``embed.modes.numeric``; a scenario's own
(disk_fence's ``JetMode``) by subclassing ``Layout``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..base.errors import CompilationError
from ..base.record import Record
from ..codegen.native import Buffer


def rk4_scheme(f, t, x, h):
    """The classical fourth-order Runge-Kutta step x(t) -> x(t + h), the one scheme of every
    path: numeric arrays stage by stage, or symengine vectors (``compile``, composed into one
    expression).

    Parameters
    ----------
    f : callable
        ``f(t, x)``: the right-hand side.
    t, x, h :
        Time, state and step length (numbers and arrays, or expressions and vectors that
        support ``+`` and multiplication by a scalar).

    Returns
    -------
    x + h/6 (k1 + 2 k2 + 2 k3 + k4)
    """
    k1 = f(t, x)
    k2 = f(t + h / 2, x + h / 2 * k1)
    k3 = f(t + h / 2, x + h / 2 * k2)
    k4 = f(t + h, x + h * k3)
    return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class MonitorLayout(Record):
    """Where each quantity sits in a mode's monitor vector, the same on every path.

    Parameters
    ----------
    n : int
        Full speeds u (first n entries).
    forces : int
        Declared force symbols (contact forces, eq 15-16).
    outputs : int
        The automaton's outputs.
    guards : int
        The mode's switching conditions (eq 18; falling through 0 = fires).
    multipliers : int
        One per active constraint (Sec 5.4).

    After the outputs: the largest constraint residual (|B u + C|, |Phi|), then kappa(B1).
    """

    FIELDS = ("n", "forces", "outputs", "guards", "multipliers")
    FROZEN = True

    def __init__(self, n: int, forces: int, outputs: int, guards: int, multipliers: int):
        self.__dict__.update(n=n, forces=forces, outputs=outputs, guards=guards,
                             multipliers=multipliers)

    @property
    def sl_u(self):
        return slice(0, self.n)

    @property
    def sl_forces(self):
        return slice(self.n, self.n + self.forces)

    @property
    def sl_outputs(self):
        return slice(self.n + self.forces, self.i_res)

    @property
    def i_res(self):
        return self.n + self.forces + self.outputs

    @property
    def i_kappa(self):
        return self.i_res + 1

    @property
    def sl_guards(self):
        return slice(self.i_res + 2, self.i_res + 2 + self.guards)

    @property
    def sl_lambda(self):
        return slice(self.i_res + 2 + self.guards, self.n_mon)

    @property
    def n_mon(self):
        return self.i_res + 2 + self.guards + self.multipliers


class Layout:
    """A compiled mode's monitor layout (``MonitorLayout``) as attributes of the mode itself
    (``sl_u``, ``sl_forces``, ``sl_outputs``, ``i_res``, ``i_kappa``, ``sl_guards``,
    ``sl_lambda``, ``n_mon``; read in the stepping loop, so plain attributes), and the
    protocol's ``output_at`` for modes that have ``monitors``."""

    def __init__(self, n, k, n_out, n_guards, m):
        layout = self.layout = MonitorLayout(n, k, n_out, n_guards, m)
        self.sizes = (n, k, n_out, n_guards, m)
        self.sl_u, self.sl_forces, self.sl_outputs = layout.sl_u, layout.sl_forces, \
            layout.sl_outputs
        self.i_res, self.i_kappa = layout.i_res, layout.i_kappa
        self.sl_guards, self.sl_lambda, self.n_mon = layout.sl_guards, layout.sl_lambda, \
            layout.n_mon

    def output_at(self, t, x, p):
        """[x..., monitors(x)..., sum |x_i|]: the integrators' output vector at x itself."""
        return np.concatenate((x, self.monitors(t, x, p), [np.sum(np.abs(x))]))


class CompiledModeProtocol(Protocol):
    """What the simulator and the integrators use of a compiled mode."""

    key: tuple          # (mode id, active constraints, dep)
    path: str           # "symbolic" or "numeric"
    n: int
    nx: int
    ind: tuple
    dep: tuple
    layout: MonitorLayout

    def rhs(self, t, x, p): ...

    def monitors(self, t, x, p): ...

    def rk4(self, t, h, x, p): ...

    def output_at(self, t, x, p): ...


def rk4_stepwise(mode, t, h, x, p):
    """``rk4`` of a mode whose right-hand side involves a numeric solve: ``rk4_scheme`` stage
    by stage, then the monitors at the new state (the same output as a composed step)."""
    if h == 0.0:
        return mode.output_at(t, x, p)
    xn = rk4_scheme(lambda tt, xx: mode.rhs(tt, xx, p), t, x, h)
    return np.concatenate((xn, mode.monitors(t + h, xn, p), [np.sum(np.abs(xn))]))


class _SymbolicMode(Layout):
    """What every mode of the symbolic path knows: its key, partition and monitor layout."""

    path = "symbolic"

    def __init__(self, meta, key):
        Layout.__init__(self, *meta["sizes"])
        self.key = key
        self.n = meta["sizes"][0]
        self.ind, self.dep = tuple(meta["ind"]), tuple(meta["dep"])
        self.nx = meta["nx"]


class CompiledMode(_SymbolicMode):
    """Symbolic path: the compiled functions of one mode (constraint set, partition, laws).

    ``fns[0]`` is the composed RK4 step of the flat argument [t, h, x..., p...]; evaluated at
    h = 0 it gives [x, monitors(x), sum |x_i|] (how small modes get their monitors: one
    function, one load).  Larger modes have their monitors apart (``fns[2]``)."""

    def __init__(self, meta, key, fns):
        _SymbolicMode.__init__(self, meta, key)
        self._args, self._f = meta.get("args"), meta.get("f")
        self._step = fns[0]
        self._rhs = fns[1] if len(fns) > 1 else None
        self._mon = fns[2] if len(fns) > 2 else None    # monitors apart from the step
        self._inb = None         # the argument buffer (``native.Buffer``), made by ``_load``

    _tail = np.zeros(0)      # arguments after p (a program mode's flag, a partition)

    def _argument_buffer(self, size):
        """A new argument buffer of ``size`` entries, the tail (after p) written."""
        b = Buffer(size)
        b.array[size - self._tail.size:] = self._tail
        return b

    def _load(self, t, h, x, p):
        """The argument vector [t, h, x..., p..., tail...] (one buffer, kept)."""
        nt = self._tail.size
        size = 2 + self.nx + p.size + nt
        if self._inb is None or self._inb.array.size != size:
            self._inb = self._argument_buffer(size)
        b = self._inb.array
        b[0] = t
        b[1] = h
        b[2:2 + self.nx] = x
        b[2 + self.nx:size - nt] = p
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

    def output_at(self, t, x, p):
        """[x..., monitors(x)..., sum |x_i|]: the composed step at h = 0, one call."""
        return self.rk4(t, 0.0, x, p)

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
            from .functions import lambdify    # compiled on first use (the adaptive solver)
            self._rhs = lambdify(self._args, self._f, f"the right-hand side of mode {self.key}")
        out = np.empty(self.nx)
        self._rhs.unsafe_real(self._load(t, 0.0, x, p), out)
        return out


class LinearMode(_SymbolicMode):
    """Symbolic path for larger modes: compiled S(x), s(x), qdot(x) and monitors(x, z);
    z = [udot_ind, forces] solved numerically (LU) at each evaluation; RK4 stage by stage."""

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


class ProgramMode(CompiledMode):
    """Symbolic path for larger modes: the whole RK4 step, with eq 15-16 solved at every
    stage by an unrolled LDL^T, and the monitors at its end, as one compiled straight-line
    program (``programs.linear_program``, ``embed.codegen.native``): one call a step, like
    ``CompiledMode``'s composed step."""

    correct = 1.0      # the step's Newton correction of Phi(q) (``programs.newton_program``)

    def __init__(self, meta, key, fns):
        CompiledMode.__init__(self, meta, key, fns)
        self._parts = meta if "sys" in meta else None
        # the compiled entries called on addresses read once (``__getattr__``, at the first
        # call), with outputs kept (copied out): numpy's ``.ctypes.data`` is costly a call,
        # most in a step that finds it cold (an event step; docs/design.md, "One compiled call
        # a step")
        # (the final stage alone writes xdot after the monitors: ``programs.rk4_program``)
        self._y, self._m = Buffer(self.nx + self.n_mon + 1), Buffer(self.n_mon + self.nx)

    _ENTRIES = ("_call", "_mon_entry", "_enter")   # the step's; "enter": a terms program's

    def __getstate__(self):
        """Pickled (a cache of compiled modes, issue 30) without the entry points, addresses
        of this process: read from the step, loaded from its object code
        (``NativeFunction.__reduce__``), when first called (``__getattr__``)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._ENTRIES}

    def __getattr__(self, name):
        """The entry points, read (and the step placed, if it was unpickled: 0.1-0.3 ms) at
        their first use, then kept: a start places the modes it steps, not every mode of
        the library (issue 30)."""
        if name in self._ENTRIES and "_step" in self.__dict__:
            entries = self._step.entries
            self._call, self._mon_entry = self._step._f, entries["monitors"]
            self._enter = entries.get("enter")
            return self.__dict__[name]
        raise AttributeError(name)

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|] for one RK4 step of length h: one call."""
        self._load(t, h, x, p)
        self._call(self._inb.at, self._y.at)
        return self._y.array.copy()

    def monitors(self, t, x, p):
        """The monitors at x: the step's final stage alone (``programs.rk4_program``), called
        on the arguments [t, x..., rest...] (the step's, with t written over h)."""
        b = self._load(t, 0.0, x, p)
        b[1] = t
        self._mon_entry(self._inb.at + 8, self._m.at)
        return self._m.array[:self.n_mon].copy()

    output_at = Layout.output_at

    def uncorrected(self):
        """This mode without the step's Newton correction (a copy sharing the compiled
        function: the configuration projection turned off, issue 15)."""
        mode = object.__new__(type(self))
        mode.__dict__.update(self.__dict__)
        mode.correct = 0.0
        mode._inb = None
        return mode

    _tail = np.ones(1)       # the correction's flag, last

    def _load(self, t, h, x, p):
        b = CompiledMode._load(self, t, h, x, p)
        b[-1] = self.correct if h else 0.0     # at h = 0 (monitors at x): x itself
        return b

    def rhs(self, t, x, p):
        """xdot = [qdot, udot_ind] (eq 2 and 16), compiled on first use (the adaptive solver)."""
        if self._rhs is None:
            self.compile_rhs()
        return CompiledMode.rhs(self, t, x, p)

    def compile_rhs(self):
        """Compile the right-hand side from the mode's parts (as at its first use), unless
        it is; its parts are no longer needed then (``library.picklable`` ships it so)."""
        if self._rhs is None:
            if self._parts is None:
                raise CompilationError(f"mode {self.key} came from the background worker without "
                                       "its right-hand side (ask for it with rhs=True)")
            from .programs import linear_program
            from .driven_program import driven_program
            from ..codegen.native import compile_program
            make = driven_program if self._parts["kind"] == "driven" else linear_program
            prog, outs = make(self._parts, rhs_only=True)
            self._rhs = compile_program(prog, outs, f"the right-hand side of mode {self.key}")
