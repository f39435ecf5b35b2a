"""Hybrid simulator: forward dynamics solver + event locator + reset maps (gillespie2005 Sec 5).

Integrates the embedded minimal ODE of the active mode, locates switching
conditions inside each step on the integrator's continuous extension, applies
the reset maps in time order (several per communication step if need be) and
re-embeds on each mode change from a cache keyed by constraint set and
partition.  Numeric only: the symbolic work is done by ``embedding`` and
``compile`` the first time a mode is visited.

State: time ``t``, ``x`` = [q, u_ind] of the active mode and ``mon``, the
compiled mode's monitor vector at x (its first n entries are the full speeds).
Neither array is ever modified in place, so references to them are snapshots.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import symengine as se

from .automaton import Automaton, Jump
from .compile import CompiledMode, lambdify
from .constraints import ConstraintSet
from .embedding import ModeEquations, condition_number, embed, partition
from .errors import (EventLocationError, InputError, IntegrationError, ModelDefinitionError,
                     ZenoError)
from .integrators import make_integrator
from .model import TIME

EVENT_TOL = 1e-12     # width of the bracket around a located event time (s)
ZENO_LIMIT = 100      # events at one instant before the automaton is declared Zeno


class Context:
    """What a reset map sees at an event: the state, forces, outputs and a probe of other modes."""

    def __init__(self, sim, guard=None):
        self.sim = sim
        self.guard = guard
        self.t = sim.t
        self.q = np.array(sim.q)
        self.u = np.array(sim.u)
        self.mode = sim.mode
        self.discrete = dict(sim.discrete)
        self.forces = sim.forces_now()
        self.outputs = sim.outputs_now()

    def forces_in(self, mode_id, **discrete):
        """Contact forces the mode ``mode_id`` would need at this state (admissibility checks)."""
        return self.sim.forces_at(mode_id, {**self.discrete, **discrete}, self.t, self.q, self.u)

    def param(self, name):
        return self.sim.param(name)


class Simulator:
    """Steps a hybrid automaton in time; the numeric heart that the FMU wraps."""

    def __init__(self, automaton: Automaton, params: dict, *, solver="rk4", h_max=1e-3,
                 rtol=1e-8, cache=None):
        self.aut = automaton
        m = self.model = automaton.model
        self.dnames = list(automaton.discrete)
        self.psyms = list(m.params) + list(m.inputs) + [se.Symbol(k) for k in self.dnames]
        self.pnames = [str(s) for s in self.psyms]
        self.np_, self.ni = len(m.params), len(m.inputs)
        missing = [str(s) for s in m.params if str(s) not in params]
        if missing:
            raise InputError(f"parameters {missing} have no value")
        self.pvec = np.zeros(len(self.psyms))
        for i, s in enumerate(m.params):
            self.pvec[i] = float(params[str(s)])
        self.integrator = make_integrator(solver, h_max, rtol)
        # shared by the simulators of one scenario: re-entering a mode costs nothing
        self.cache = cache if cache is not None else {}
        for k in ("emb", "mode", "rows", "exprs"):
            self.cache.setdefault(k, {})
        self.outputs = list(automaton.outputs)
        ex = self.cache["exprs"]
        if not ex:   # switching conditions and outputs in the model's symbols, converted once
            ex["out"] = [m.sym(e) for e in automaton.outputs.values()]
            ex["guards"] = {k: [m.sym(g.expr) * (-g.direction) for g in md.guards]
                            for k, md in automaton.modes.items()}
        self._out_exprs, self._guard_exprs = ex["out"], ex["guards"]
        self.t = 0.0
        self.x = np.zeros(m.n)       # before the first mode: x holds q and mon holds u
        self.mon = np.zeros(m.n)
        self.mode = None
        self.discrete = dict(automaton.discrete)
        self.dep = ()
        self.armed = ()
        self.enabled = ()
        self.event_count = 0
        self.last_event_time = 0.0
        self.events = []          # (t, guard, from mode, to mode)
        self.same_instant = 0
        self.embed_times = []     # wall seconds of each cold embedding + compile
        self.cm = None
        self._dirty = True        # inputs or state changed since the monitors were computed
        self._cp = None

    # ---------------------------------------------------------------- state views
    @property
    def q(self):
        return self.x[:self.model.n]

    @property
    def u(self):
        return self.mon[:self.model.n]

    def param(self, name):
        return float(self.pvec[self.pnames.index(name)])

    def set_inputs(self, values: dict):
        for i, s in enumerate(self.model.inputs):
            if str(s) in values:
                v = float(values[str(s)])
                if not math.isfinite(v):
                    raise InputError(f"input {s} = {v} is not finite; keeping its previous value")
                self.pvec[self.np_ + i] = v
        self._dirty = True

    def start(self, t0, q0, u0):
        """Initial reset map (eq 20): choose the first mode and embed it."""
        self.t = float(t0)
        self.x = np.array(q0, dtype=float)
        self.mon = np.array(u0, dtype=float)
        self._sync_discrete()
        self._apply(self.aut.initial(Context(self)))

    # ------------------------------------------------------------- embedding
    def _sync_discrete(self):
        o = self.np_ + self.ni
        for i, k in enumerate(self.dnames):
            self.pvec[o + i] = float(self.discrete[k])

    def _B_numeric(self, cset, t, q):
        rows = []
        for c in cset.items:
            fn = self.cache["rows"].get(c.name)
            if fn is None:
                args = [TIME] + list(self.model.q) + list(self.psyms)
                fn = lambdify(args, list(c.B), f"constraint {c.name!r}")
                self.cache["rows"][c.name] = fn
            rows.append(fn(np.concatenate(([t], q, self.pvec))))
        return np.array(rows, dtype=float).reshape(len(cset), self.model.n)

    def constraint_set(self, mode):
        try:
            return ConstraintSet([self.aut.constraints[c] for c in mode.constraints])
        except KeyError as exc:
            raise ModelDefinitionError(f"mode {mode.name!r} names unknown constraint {exc}") from None

    def compiled(self, mode_id, dep):
        """Compiled mode from the cache, embedding and compiling it on first use (eq 11-16)."""
        mode = self.aut.modes[mode_id]
        key = (mode_id, mode.constraints, tuple(dep))
        cm = self.cache["mode"].get(key)
        if cm is not None:
            return cm
        t0 = time.perf_counter()
        cset = self.constraint_set(mode)
        ekey = (cset.key, tuple(dep))
        emb = self.cache["emb"].get(ekey)
        if emb is None:
            emb = self.cache["emb"][ekey] = embed(self.model, cset, tuple(dep))
        eqs = ModeEquations(self.model, emb, dict(mode.laws))
        sub = dict(zip(self.model.forces, eqs.forces))
        sub.update(emb.u_sub)
        outs = [e.subs(sub) for e in self._out_exprs]
        guards = [e.subs(sub) for e in self._guard_exprs[mode_id]]
        res = []
        for c in cset.items:
            res.append(sum((b * uf for b, uf in zip(c.B, eqs.u_full)), c.C))
            if c.holonomic:
                res.append(c.phi)
        cm = CompiledMode(self.model, eqs, self.psyms, outs, res, guards, key)
        self.cache["mode"][key] = cm
        self.embed_times.append(time.perf_counter() - t0)
        return cm

    def _partition(self, mode_id, t, q):
        cset = self.constraint_set(self.aut.modes[mode_id])
        if len(cset) == 0:
            return ()
        return partition(self._B_numeric(cset, t, q), cset.key)

    def condition_number(self):
        """Condition number of the dependent block of B at the current state (Sec 5.4)."""
        cset = self.constraint_set(self.aut.modes[self.mode])
        if len(cset) == 0:
            return 1.0
        return condition_number(self._B_numeric(cset, self.t, self.q), self.dep)

    # --------------------------------------------------------------- probes
    def forces_at(self, mode_id, discrete, t, q, u):
        """Contact forces in mode ``mode_id`` at (t, q, u) with the given discrete values."""
        saved = self.discrete
        self.discrete = dict(discrete)
        self._sync_discrete()
        try:
            dep = self._partition(mode_id, t, q)
            cm = self.compiled(mode_id, dep)
            mon = cm.monitors(t, np.concatenate((q, u[list(cm.ind)])), self.pvec)
        finally:
            self.discrete = saved
            self._sync_discrete()
        return dict(zip(map(str, self.model.forces), mon[cm.sl_forces].tolist()))

    def forces_now(self):
        if self.cm is None:
            return {}
        return dict(zip(map(str, self.model.forces), self.mon[self.cm.sl_forces].tolist()))

    def outputs_now(self):
        if self.cm is None:
            return {}
        return dict(zip(self.outputs, self.mon[self.cm.sl_outputs].tolist()))

    def residual(self):
        """Largest residual of the active constraints (|B u + C| and |Phi|) at the current state."""
        return 0.0 if self.cm is None else float(self.mon[self.cm.i_res])

    # --------------------------------------------------------------- events
    def _apply(self, jump: Jump):
        """Enter jump.mode with the reset state, re-embedding (from cache) if needed."""
        q = np.array(self.q if jump.q is None else jump.q, dtype=float)
        u = np.array(self.u if jump.u is None else jump.u, dtype=float)
        self.discrete = {**self.discrete, **{k: float(v) for k, v in jump.discrete.items()}}
        self._sync_discrete()
        self.mode = jump.mode
        self.dep = self._partition(jump.mode, self.t, q)
        self.cm = self.compiled(jump.mode, self.dep)
        self.x = np.concatenate((q, u[list(self.cm.ind)]))
        self.mon = self.cm.monitors(self.t, self.x, self.pvec)
        mode = self.aut.modes[self.mode]
        self.enabled = tuple(g.enabled is None or bool(g.enabled(self.discrete)) for g in mode.guards)
        self.armed = tuple(bool(g > 0) for g in self.mon[self.cm.sl_guards])
        self._dirty = False

    def _handle(self, gi):
        mode = self.aut.modes[self.mode]
        guard = mode.guards[gi]
        before = self.mode
        if self.events and self.t - self.last_event_time <= EVENT_TOL:
            self.same_instant += 1
            if self.same_instant > ZENO_LIMIT:
                raise ZenoError(
                    f"{self.same_instant} events at t = {self.t:.12g} s (last: {guard.name!r} in "
                    f"mode {mode.name!r}): Zeno behaviour and no persistent mode to switch to")
        else:
            self.same_instant = 0
        self._apply(self.aut.transition(Context(self, guard.name), guard.name))
        self.event_count += 1
        self.last_event_time = self.t
        self.events.append((float(self.t), guard.name, before, self.mode))

    def _due(self, g):
        """Index of the first armed, enabled switching condition that is <= 0 in g, or None."""
        for i, (v, a, e) in enumerate(zip(g, self.armed, self.enabled)):
            if a and e and v <= 0:
                return i
        return None

    def _locate(self, gi, x0, p, h):
        """Earliest tau in (0, h] where guard gi falls to <= 0, bracketed to EVENT_TOL (Illinois)."""
        integ, cm, t0 = self.integrator, self.cm, self.t
        o = cm.nx + cm.sl_guards.start + gi
        g = lambda tau: integ.partial(cm, t0, x0, p, tau)[o]  # noqa: E731
        a, b = 0.0, h
        ga, gb = self.mon[cm.sl_guards][gi], g(h)
        side = 0
        for _ in range(200):
            if b - a <= EVENT_TOL:
                return b
            c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
            if not (a < c < b):
                c = 0.5 * (a + b)
            c = min(max(c, a + 0.25 * EVENT_TOL), b - 0.25 * EVENT_TOL)
            gc = g(c)
            if gc > 0:
                a, ga = c, gc
                if side == -1:
                    gb *= 0.5
                side = -1
            else:
                b, gb = c, gc
                if side == 1:
                    ga *= 0.5
                side = 1
        raise EventLocationError(
            f"switching condition {self.aut.modes[self.mode].guards[gi].name!r} not located "
            f"near t = {t0:.9g} s")

    def _accept(self, y):
        cm = self.cm
        if not math.isfinite(y[-1]):
            raise IntegrationError(f"non-finite state at t = {self.t:.9g} s in mode {cm.key}; "
                                   "check inputs and parameters")
        self.x = y[:cm.nx]
        self.mon = y[cm.nx:-1]

    # ---------------------------------------------------------------- advance
    def _checkpoint(self):
        """References to the current state (the engine never mutates these in place)."""
        self._cp = (self.t, self.x, self.mon, self.mode, self.discrete, self.dep, self.armed,
                    self.enabled, self.event_count, self.last_event_time, len(self.events),
                    self.same_instant, self.cm, self.integrator.get_state())

    def rollback(self):
        """Back to the state at the start of the last ``advance`` (the last good state)."""
        if self._cp is None:
            return
        (self.t, self.x, self.mon, self.mode, self.discrete, self.dep, self.armed, self.enabled,
         self.event_count, self.last_event_time, ne, self.same_instant, self.cm, integ) = self._cp
        del self.events[ne:]
        self.integrator.set_state(integ)
        self._sync_discrete()
        self._dirty = True

    def advance(self, t_end):
        """Integrate to t_end, handling every event on the way, in time order."""
        self._checkpoint()
        if self._dirty:     # inputs changed at this communication point: a condition may be due now
            self.mon = self.cm.monitors(self.t, self.x, self.pvec)
            self._dirty = False
            while (gi := self._due(self.mon[self.cm.sl_guards])) is not None:
                self._handle(gi)
        integ, p = self.integrator, self.pvec
        while t_end - self.t > EVENT_TOL:
            cm, x0 = self.cm, self.x
            h, y = integ.step(cm, self.t, x0, p, t_end - self.t)
            gs = cm.nx + cm.sl_guards.start
            gi = self._due(y[gs:gs + cm.sl_guards.stop - cm.sl_guards.start])
            if gi is None:
                self._accept(y)
                self.t += h
                if not all(self.armed):
                    self.armed = tuple(a or bool(v > 0) for a, v in zip(self.armed, self.mon[cm.sl_guards]))
                continue
            g_end = y[gs:gs + cm.sl_guards.stop - cm.sl_guards.start]
            hits = [i for i, (v, a, e) in enumerate(zip(g_end, self.armed, self.enabled))
                    if a and e and v <= 0]
            tau, gi = min((self._locate(i, x0, p, h), i) for i in hits)
            self._accept(integ.partial(cm, self.t, x0, p, tau))
            self.t += tau
            self._handle(gi)
            while (gi := self._due(self.mon[self.cm.sl_guards])) is not None:
                self._handle(gi)

    # ------------------------------------------------------------------ state
    def get_state(self):
        """Everything that decides the future, as plain Python/numpy values."""
        return copy.deepcopy({
            "t": self.t, "x": self.x, "mon": self.mon, "mode": self.mode,
            "discrete": self.discrete, "dep": self.dep, "armed": self.armed,
            "enabled": self.enabled, "event_count": self.event_count,
            "last_event_time": self.last_event_time, "events": self.events,
            "same_instant": self.same_instant, "pvec": self.pvec,
            "integrator": self.integrator.get_state(),
        })

    def set_state(self, s):
        s = copy.deepcopy(s)
        self.t = float(s["t"])
        self.mode = int(s["mode"])
        self.discrete = {k: float(v) for k, v in s["discrete"].items()}
        self.dep = tuple(int(i) for i in s["dep"])
        self.cm = self.compiled(self.mode, self.dep)
        self.x = np.array(s["x"], dtype=float)
        self.mon = np.array(s["mon"], dtype=float)
        self.armed = tuple(bool(a) for a in s["armed"])
        self.enabled = tuple(bool(a) for a in s["enabled"])
        self.event_count = int(s["event_count"])
        self.last_event_time = float(s["last_event_time"])
        self.events = [tuple(e) for e in s["events"]]
        self.same_instant = int(s["same_instant"])
        self.pvec = np.array(s["pvec"], dtype=float)
        self.integrator.set_state(s["integrator"])
        self._cp = None
        self._dirty = False
