"""Hybrid simulator: forward dynamics solver + event locator + reset maps (gillespie2005 Sec 5).

Integrates the embedded minimal ODE of the active mode, locates switching
conditions inside each step on the integrator's continuous extension, applies
the reset maps in time order (several per communication step if need be) and
re-embeds on each mode change from a cache keyed by constraint set and
partition.  Numeric only: the symbolic work is done by ``embedding`` and
``compile`` the first time a mode is visited.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import symengine as se

from .automaton import Automaton, Jump
from .compile import CompiledMode, lambdify
from .constraints import ConstraintSet
from .embedding import ModeEquations, condition_number, embed, partition
from .errors import EventLocationError, InputError, ModelDefinitionError, ZenoError
from .integrators import check_finite, make_integrator
from .model import TIME

EVENT_TOL = 1e-12     # width of the bracket around a located event time (s)
ZENO_LIMIT = 100      # events at one instant before the automaton is declared Zeno


class Context:
    """What a reset map sees at an event: the state, forces, outputs and a probe of other modes."""

    def __init__(self, sim, guard=None):
        self.sim = sim
        self.guard = guard
        self.t = sim.t
        self.q = sim.q.copy()
        self.u = sim.u.copy()
        self.mode = sim.mode
        self.discrete = dict(sim.discrete)
        self.forces = sim.forces_now()
        self.outputs = sim.outputs_now()

    def forces_in(self, mode_id, **discrete):
        """Contact forces the mode ``mode_id`` would need at this state (admissibility checks)."""
        d = {**self.discrete, **discrete}
        return self.sim.forces_at(mode_id, d, self.t, self.q, self.u)


class Simulator:
    """Steps a hybrid automaton in time; the numeric heart that the FMU wraps."""

    def __init__(self, automaton: Automaton, params: dict, *, solver="rk4", h_max=1e-3,
                 rtol=1e-8, cache=None):
        self.aut = automaton
        m = automaton.model
        self.model = m
        self.dnames = list(automaton.discrete)
        self.dsyms = [se.Symbol(k) for k in self.dnames]
        self.psyms = list(m.params) + list(m.inputs) + self.dsyms
        self.np_, self.ni = len(m.params), len(m.inputs)
        missing = [str(s) for s in m.params if str(s) not in params]
        if missing:
            raise InputError(f"parameters {missing} have no value")
        self.pvec = np.zeros(len(self.psyms))
        for i, s in enumerate(m.params):
            self.pvec[i] = float(params[str(s)])
        self.integrator = make_integrator(solver, h_max, rtol)
        # shared across simulators of the same automaton: re-entering a mode costs nothing
        self.cache = cache if cache is not None else {}
        self.cache.setdefault("emb", {})
        self.cache.setdefault("mode", {})
        self.cache.setdefault("rows", {})
        self.outputs = list(automaton.outputs)
        # switching conditions and outputs in the model's symbols, converted once
        self._out_exprs = [m.sym(e) for e in automaton.outputs.values()]
        self._guard_exprs = {k: [m.sym(g.expr) * (-g.direction) for g in md.guards]
                             for k, md in automaton.modes.items()}
        self.t = 0.0
        self.q = np.zeros(m.n)
        self.u = np.zeros(m.n)
        self.mode = None
        self.discrete = dict(automaton.discrete)
        self.dep = ()
        self.armed = ()
        self.event_count = 0
        self.last_event_time = 0.0
        self.events = []          # (t, guard, from mode, to mode)
        self.same_instant = 0
        self.embed_times = []     # wall seconds of each cold embedding + compile
        self.cm = None
        self.x = None
        self.mon = None

    # ---------------------------------------------------------------- setup
    def set_inputs(self, values: dict):
        for i, s in enumerate(self.model.inputs):
            if str(s) in values:
                v = float(values[str(s)])
                if not np.isfinite(v):
                    raise InputError(f"input {s} = {v} is not finite; keeping its previous value")
                self.pvec[self.np_ + i] = v

    def start(self, t0, q0, u0):
        """Initial reset map (eq 20): choose the first mode and embed it."""
        self.t = float(t0)
        self.q = np.array(q0, dtype=float)
        self.u = np.array(u0, dtype=float)
        self._sync_discrete()
        jump = self.aut.initial(Context(self))
        self._apply(jump)

    # ------------------------------------------------------------- embedding
    def _sync_discrete(self):
        for i, k in enumerate(self.dnames):
            self.pvec[self.np_ + self.ni + i] = float(self.discrete[k])

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

    def compiled(self, mode_id, dep):
        """Compiled mode from the cache, embedding and compiling it on first use."""
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
            emb = embed(self.model, cset, tuple(dep))
            self.cache["emb"][ekey] = emb
        eqs = ModeEquations(self.model, emb, dict(mode.laws))
        fsub = dict(zip(self.model.forces, eqs.forces))
        usub = dict(emb.u_sub)
        mon = [e.subs(fsub).subs(usub) for e in self._out_exprs + self._guard_exprs[mode_id]]
        res = []
        for c in cset.items:
            res.append(sum((b * uf for b, uf in zip(c.B, eqs.u_full)), c.C))
            if c.holonomic:
                res.append(c.phi)
        cm = CompiledMode(self.model, eqs, self.psyms, mon, res, key)
        self.cache["mode"][key] = cm
        self.embed_times.append(time.perf_counter() - t0)
        return cm

    def constraint_set(self, mode):
        try:
            return ConstraintSet([self.aut.constraints[c] for c in mode.constraints])
        except KeyError as exc:
            raise ModelDefinitionError(f"mode {mode.name!r} names unknown constraint {exc}") from None

    def _partition(self, mode_id, t, q):
        cset = self.constraint_set(self.aut.modes[mode_id])
        if len(cset) == 0:
            return ()
        B = self._B_numeric(cset, t, q)
        return partition(B, cset.key)

    def condition_number(self):
        cset = self.constraint_set(self.aut.modes[self.mode])
        if len(cset) == 0:
            return 1.0
        return condition_number(self._B_numeric(cset, self.t, self.q), self.dep)

    # --------------------------------------------------------------- probes
    def forces_at(self, mode_id, discrete, t, q, u):
        saved = dict(self.discrete)
        self.discrete = dict(discrete)
        self._sync_discrete()
        try:
            dep = self._partition(mode_id, t, q)
            cm = self.compiled(mode_id, dep)
            x = np.concatenate((q, u[list(cm.ind)]))
            mon = cm.monitors(t, x, self.pvec)
        finally:
            self.discrete = saved
            self._sync_discrete()
        n = self.model.n
        return {str(f): mon[n + i] for i, f in enumerate(self.model.forces)}

    def forces_now(self):
        if self.mon is None:
            return {}
        n = self.model.n
        return {str(f): float(self.mon[n + i]) for i, f in enumerate(self.model.forces)}

    def outputs_now(self):
        if self.mon is None:
            return {}
        o = self.model.n + len(self.model.forces)
        return {k: float(self.mon[o + i]) for i, k in enumerate(self.outputs)}

    def guard_values(self, mon=None):
        mon = self.mon if mon is None else mon
        o = self.model.n + len(self.model.forces) + len(self.outputs)
        return mon[o:o + len(self.aut.modes[self.mode].guards)]

    def residual(self):
        if self.cm is None or self.cm.n_res == 0:
            return 0.0
        return float(np.max(np.abs(self.mon[-self.cm.n_res:])))

    # --------------------------------------------------------------- events
    def _apply(self, jump: Jump):
        """Enter jump.mode with the reset state, re-embedding (from cache) if needed."""
        if jump.q is not None:
            self.q = np.array(jump.q, dtype=float)
        if jump.u is not None:
            self.u = np.array(jump.u, dtype=float)
        self.discrete = {**self.discrete, **{k: float(v) for k, v in jump.discrete.items()}}
        self._sync_discrete()
        self.mode = jump.mode
        self.dep = self._partition(jump.mode, self.t, self.q)
        self.cm = self.compiled(jump.mode, self.dep)
        self.x = np.concatenate((self.q, self.u[list(self.cm.ind)]))
        self._refresh()
        self.armed = tuple(bool(g > 0) for g in self.guard_values())

    def _refresh(self):
        """Monitors at the current state with the current inputs; full u from them."""
        self.mon = self.cm.monitors(self.t, self.x, self.pvec)
        n = self.model.n
        self.q = self.x[:n].copy()
        self.u = self.mon[:n].copy()

    def _enabled(self):
        mode = self.aut.modes[self.mode]
        return [g.enabled is None or bool(g.enabled(self.discrete)) for g in mode.guards]

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
        jump = self.aut.transition(Context(self, guard.name), guard.name)
        self._apply(jump)
        self.event_count += 1
        self.last_event_time = self.t
        self.events.append((float(self.t), guard.name, before, self.mode))

    def _locate(self, gi, x0, p, h):
        """Earliest tau in (0, h] where guard gi falls to <= 0, bracketed to EVENT_TOL (Illinois)."""
        integ, cm, t0 = self.integrator, self.cm, self.t
        o = self.model.n + len(self.model.forces) + len(self.outputs) + gi
        g = lambda tau: integ.partial(cm, t0, x0, p, tau)[1][o]  # noqa: E731
        a, b = 0.0, h
        ga, gb = self.guard_values(self.mon)[gi], g(h)
        side = 0
        for _ in range(200):
            if b - a <= EVENT_TOL:
                return b
            c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
            if not (a < c < b):
                c = 0.5 * (a + b)
            # keep progress on both ends
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

    # ---------------------------------------------------------------- advance
    def _checkpoint(self):
        """References to the current state (the engine never mutates these in place)."""
        self._cp = (self.t, self.x, self.mon, self.q, self.u, self.mode, self.discrete, self.dep,
                    self.armed, self.event_count, self.last_event_time, len(self.events),
                    self.same_instant, self.cm, self.integrator.get_state())

    def rollback(self):
        """Back to the state at the start of the last ``advance`` (the last good state)."""
        cp = getattr(self, "_cp", None)
        if cp is None:
            return
        (self.t, self.x, self.mon, self.q, self.u, self.mode, self.discrete, self.dep, self.armed,
         self.event_count, self.last_event_time, ne, self.same_instant, self.cm, integ) = cp
        del self.events[ne:]
        self.integrator.set_state(integ)
        self._sync_discrete()

    def advance(self, t_end):
        """Integrate to t_end, handling every event on the way, in time order."""
        self._checkpoint()
        self._refresh()   # inputs may have changed at this communication point
        while True:
            fired = self._due_now()
            if fired is None:
                break
            self._handle(fired)
        while t_end - self.t > EVENT_TOL:
            p = self.pvec
            x0 = self.x
            h, x1, mon1 = self.integrator.step(self.cm, self.t, x0, p, t_end - self.t)
            check_finite(x1, self.t + h, self.cm.key)
            g1 = self.guard_values(mon1)
            en = self._enabled()
            hit = [i for i in range(len(g1)) if en[i] and self.armed[i] and g1[i] <= 0]
            if hit:
                taus = [(self._locate(i, x0, p, h), i) for i in hit]
                tau, gi = min(taus)
                x1, mon1 = self.integrator.partial(self.cm, self.t, x0, p, tau)
                self.t += tau
                self.x, self.mon = x1, mon1
                n = self.model.n
                self.q, self.u = x1[:n].copy(), mon1[:n].copy()
                self._handle(gi)
                while True:
                    fired = self._due_now()
                    if fired is None:
                        break
                    self._handle(fired)
                continue
            self.t += h
            self.x, self.mon = x1, mon1
            if not all(self.armed):
                self.armed = tuple(a or bool(g > 0) for a, g in zip(self.armed, g1))
        n = self.model.n
        self.q, self.u = self.x[:n].copy(), self.mon[:n].copy()

    def _due_now(self):
        """An armed, enabled switching condition already <= 0 (inputs changed at a communication point)."""
        g = self.guard_values()
        en = self._enabled()
        for i in range(len(g)):
            if en[i] and self.armed[i] and g[i] <= 0:
                return i
        return None

    # ------------------------------------------------------------------ state
    def get_state(self):
        """Everything that decides the future, as plain Python/numpy values."""
        return copy.deepcopy({
            "t": self.t, "x": self.x, "mon": self.mon, "q": self.q, "u": self.u,
            "mode": self.mode, "discrete": self.discrete, "dep": self.dep, "armed": self.armed,
            "event_count": self.event_count, "last_event_time": self.last_event_time,
            "events": self.events, "same_instant": self.same_instant, "pvec": self.pvec,
            "integrator": self.integrator.get_state(),
        })

    def set_state(self, s):
        s = copy.deepcopy(s)
        self.t = s["t"]
        self.mode = s["mode"]
        self.discrete = {k: float(v) for k, v in s["discrete"].items()}
        self.dep = tuple(int(i) for i in s["dep"])
        self.cm = self.compiled(self.mode, self.dep)
        self.x, self.mon, self.q, self.u = (np.array(s[k], dtype=float) for k in ("x", "mon", "q", "u"))
        self.armed = tuple(s["armed"])
        self.event_count = s["event_count"]
        self.last_event_time = s["last_event_time"]
        self.events = [tuple(e) for e in s["events"]]
        self.same_instant = s["same_instant"]
        self.pvec = np.array(s["pvec"], dtype=float)
        self.integrator.set_state(s["integrator"])
        self._cp = None
