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
import dataclasses
import functools
import math
import time

import numpy as np
from scipy.linalg.lapack import dgesv
import symengine as se

from .automaton import Automaton, Jump
from .compile import lambdify, make_mode, mode_parts, norm1
from .constraints import ConstraintSet, velocity
from .embedding import EXPLICIT_OPS_OFFLINE, ModeEquations, embed, kappa, partition
from .errors import (ConstraintRankError, EmbedError, EventLocationError, InputError,
                     IntegrationError, ModelDefinitionError, StateError, StepBudgetError,
                     ZenoError)
from .integrators import make_integrator
from .model import TIME
from .numeric import ConstraintTerms, EntryTerms, NumericMode, NumericTerms, lam_symbol

EVENT_TOL = 1e-12     # width of the bracket around a located event time (s)
ZENO_LIMIT = 100      # events at one instant before the automaton is declared Zeno
ZENO_IMPACTS = 5      # impacts in a row, each closer than zeno_dt to the last: accumulating
IMPACT_LOG = 50       # impacts kept in Simulator.impacts (t, guard, q, u before, u after)
PHI_TOL = 1e-12       # configuration constraints are held to this by Newton iteration
PROBE = 1e-7          # s: how far ahead a condition left at zero is looked at (_arm)
PROBE_G = 1e-9        # a condition this close to zero counts as at zero
UNARMED, ARMED, HELD = 0, 1, 2   # how a switching condition is watched (_arm): not until it
                      # is positive; fires at 0; held at zero, fires below -PROBE_G
_LEVEL = {ARMED: 0.0, HELD: -PROBE_G}
RESELECT = 3.0        # re-select the independent speeds when kappa(B1) grows this much
                      # (10 cost accuracy near singular configurations of the slider-crank)
EMBEDDINGS = ("symbolic", "numeric", "background")
_WARMED = []          # the process-wide part of Simulator.warm_up is done
STATE_FIELDS = ("t", "x", "mon", "mode", "discrete", "dep", "armed", "enabled", "event_count",
                "last_event_time", "events", "same_instant", "pvec", "integrator", "active",
                "chart", "kappa0", "counters", "impacts")
MAX_STEPS = 2_000_000  # internal steps one advance may take (slider_crank3 in 100 s
                       # communication steps at h_max = 1 ms takes 1e5); beyond: StepBudgetError


def _max_abs(a):
    """max |a_i| of a short vector in plain floats (numpy's dispatch costs 20-50 us where an
    event step finds the caches cold; the comparisons themselves are nothing)."""
    return max(map(abs, a.tolist()), default=0.0)


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

    @functools.cached_property
    def forces(self):
        """Declared force symbols' values here (by name), formed when a reset map asks."""
        return self.sim.forces_now()

    @functools.cached_property
    def outputs(self):
        return self.sim.outputs_now()

    def forces_in(self, mode_id, **discrete):
        """Contact forces the mode ``mode_id`` would need at this state (admissibility checks)."""
        return self.sim.forces_at(mode_id, {**self.discrete, **discrete}, self.t, self.q, self.u)

    def param(self, name):
        return self.sim.param(name)

    def mass_matrix(self):
        """The unconstrained generalized mass matrix M(q) here (F_r* = -M udot + ...)."""
        return self.sim.numeric_terms().mass(self.t, self.q, self.u, self.sim.pvec)

    def row(self, name):
        """(B, C) of a constraint here, active or not: its velocity is B u + C (eq 7)."""
        n = self.sim.model.n
        bc = self.sim.cterms(name).BC(np.concatenate(([self.t], self.q, self.sim.pvec)))
        return np.array(bc[:n]), float(bc[n])


class Simulator:
    """Steps a hybrid automaton in time; the numeric heart that the FMU wraps."""

    def __init__(self, automaton: Automaton, params: dict, *, solver="rk4", h_max=1e-3,
                 rtol=1e-8, cache=None, embedding="symbolic", compiler=None, zeno_dt=1e-3,
                 precompile=False):
        """``embedding``: "symbolic" (embed and compile on first entry, then cached),
        "numeric" (the compiled-terms path only) or "background" (numeric at once, the
        symbolic path from ``compiler``, a background worker, when its compile is done)."""
        if embedding not in EMBEDDINGS:
            raise InputError(f"embedding {embedding!r} is unknown; use one of {EMBEDDINGS}")
        self.embedding = embedding
        self.compiler = compiler
        self.precompile = precompile
        # this simulator's own view of the automaton: constraints and modes added at run time
        # stay here (the caches they share are keyed by unique names and ids)
        automaton = dataclasses.replace(automaton, constraints=dict(automaton.constraints),
                                        modes=dict(automaton.modes))
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
        # every parameter, also those only the reset maps read (restitution, zone layout, ...)
        self.params = {k: v for k, v in params.items() if isinstance(v, (int, float))}
        self.integrator = make_integrator(solver, h_max, rtol)
        # shared by the simulators of one scenario: re-entering a mode costs nothing
        self.cache = cache if cache is not None else {}
        for k in ("emb", "mode", "numeric", "cterms", "entry", "exprs", "submitted"):
            self.cache.setdefault(k, {})
        self.outputs = list(automaton.outputs)
        ex = self.cache["exprs"]
        if not ex:   # switching conditions and outputs in the model's symbols, converted once
            ex["out"] = [m.sym(e) for e in automaton.outputs.values()]
        self._out_exprs = ex["out"]
        if embedding != "symbolic":
            self.numeric_terms()
        self.t = 0.0
        self.x = np.zeros(m.n)       # before the first mode: x holds q and mon holds u
        self.mon = np.zeros(m.n)
        self.mode = None
        self.active = ()          # names of the active constraints
        self.chart = None         # (U, Binv) of the configuration projection (haug eq 13-16)
        self.kappa0 = 1.0         # kappa(B1) when the independent speeds were selected
        self.reselections = 0
        self.reselect_time = 0.0  # CPU seconds spent re-selecting independent speeds
        self.reselect_compile_time = 0.0   # of reselect_time: first embeddings of a partition
        self.recharts = 0
        self.background_latency = None
        self.last_impulse = {}
        self.impact_count = 0
        self.impacts = []
        self.zeno_count = 0
        self.zeno_dt = float(zeno_dt)
        self._impact_gaps = []
        self._last_impact = None
        self._hol = []
        self._watch = False
        self._starting = False
        self.discrete = dict(automaton.discrete)
        self.dep = ()
        self.armed = ()
        self._rehearsed = None    # (mode, condition) whose event was rehearsed (_rehearse)
        self.enabled = ()
        self.event_count = 0
        self.last_event_time = 0.0
        self.events = []          # (t, guard, from mode, to mode)
        self.same_instant = 0
        self.embed_times = []     # wall seconds of each cold embedding + compile
        self.cm = None
        self._dirty = True        # inputs or state changed since the monitors were computed
        self._rearm = False       # an input changed its value since the last advance
        self._cp = None

    # ---------------------------------------------------------------- state views
    @property
    def q(self):
        return self.x[:self.model.n]

    @property
    def u(self):
        return self.mon[:self.model.n]

    def param(self, name):
        """A parameter, input or discrete variable by name (its current value)."""
        if name in self.pnames:
            return float(self.pvec[self.pnames.index(name)])
        try:
            return float(self.params[name])
        except KeyError:
            raise ModelDefinitionError(f"no parameter {name!r}") from None

    def set_inputs(self, values: dict):
        """Take the inputs in ``values`` (by name), all or none: a non-finite value, or one
        outside the automaton's allowed values for that input, raises InputError naming it
        and nothing is changed."""
        new = {}
        for i, s in enumerate(self.model.inputs):
            name = str(s)
            if name in values:
                try:
                    v = float(values[name])
                except (TypeError, ValueError):
                    raise InputError(f"input {name} = {values[name]!r} is not a number; keeping "
                                     f"{self.pvec[self.np_ + i]!r}") from None
                if not math.isfinite(v):
                    raise InputError(f"input {name} = {v} is not finite; keeping its previous value")
                allowed = self.aut.allowed.get(name)
                if allowed is not None and v not in allowed:
                    raise InputError(f"input {name} = {values[name]!r} is not one of the allowed "
                                     f"values {list(allowed)}; keeping {self.pvec[self.np_ + i]:g}")
                new[self.np_ + i] = v
        for k, v in new.items():
            if v != self.pvec[k]:
                self._rearm = True
            self.pvec[k] = v
        self._dirty = True

    def start(self, t0, q0, u0):
        """Initial reset map (eq 20): choose the first mode and embed it.  With more than one
        mode the unconstrained terms are compiled now too (reset maps need M)."""
        self.t = float(t0)
        self.integrator.restart(self.t)     # the fixed-step grid starts here
        self.x = np.array(q0, dtype=float)
        self.mon = np.array(u0, dtype=float)
        self._sync_discrete()
        if len(self.aut.modes) > 1:
            self.numeric_terms()
            for name in self.aut.constraints:      # each constraint's own terms (Sec 5.5)
                self.cterms(name)
        if self.precompile:
            self.precompile_modes()
        self._starting = True
        try:
            self._apply(self.aut.initial(Context(self)))
        finally:
            self._starting = False

    # ------------------------------------------------------------- embedding
    def _sync_discrete(self):
        o = self.np_ + self.ni
        self.pvec[o:o + len(self.dnames)] = [float(self.discrete[k]) for k in self.dnames]

    def cterms(self, name):
        """A constraint's own compiled terms (B, C, gamma, Phi), built once (Sec 5.5)."""
        ct = self.cache["cterms"].get(name)
        if ct is None:
            c = self.aut.constraints[name]
            ct = self.cache["cterms"][name] = ConstraintTerms(self.model, c, self.psyms)
        return ct

    def _BC(self, cts, t, q):
        """B and C of the constraints ``cts`` (ConstraintTerms) at (t, q): B u + C = 0."""
        tq = np.concatenate(([t], q, self.pvec))
        BC = np.array([ct.BC(tq) for ct in cts]).reshape(len(cts), self.model.n + 1)
        return BC[:, :-1], BC[:, -1]

    def _entry(self, cts, t, q, u):
        """(K, B, [0; -(B u + C)], Phi) of the constraints ``cts`` at (t, q, u)
        (``EntryTerms``): one call where the set's entry terms were compiled at set-up
        (``warm_up``) or by the worker, else assembled from each constraint's own terms and
        the unconstrained mass matrix."""
        et = self.cache["entry"].get(tuple(ct.name for ct in cts))
        if et is not None:
            return et(t, q, u, self.pvec)
        n, m = self.model.n, len(cts)
        B, C = self._BC(cts, t, q)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = self.numeric_terms().mass(t, q, u, self.pvec)
        K[:n, n:] = B.T
        K[n:, :n] = B
        tq = np.concatenate(([t], q, self.pvec))
        phi = [ct.phi(tq)[0] for ct in cts if ct.holonomic]
        return K, B, np.concatenate((np.zeros(n), -(B @ u + C))), np.array(phi)

    def _B_numeric(self, names, t, q):
        return self._BC([self.cterms(c) for c in names], t, q)[0]

    def constraint_set(self, names):
        try:
            return ConstraintSet([self.aut.constraints[c] for c in names])
        except KeyError as exc:
            raise ModelDefinitionError(f"unknown constraint {exc}; known: "
                                       f"{sorted(self.aut.constraints)}") from None

    def add_constraint(self, c):
        """Make a constraint known at run time (it is compiled on its own, Sec 5.5)."""
        if c.name in self.aut.constraints and self.aut.constraints[c.name] is not c:
            raise ModelDefinitionError(f"constraint {c.name!r} exists; give the new one another name")
        self.aut.constraints[c.name] = c
        if self.compiler is not None:
            self.compiler.announce(c)

    def compiled(self, mode_id, dep, active=None):
        """The mode's functions: symbolic (cached, or embedded and compiled now) or numeric."""
        mode = self.aut.modes[mode_id]
        active = tuple(sorted(mode.constraints if active is None else active))
        key = (mode_id, active, tuple(dep))
        cm = self.cache["mode"].get(key)
        if cm is not None:
            return cm
        t0 = time.perf_counter()
        # a constraint known only by its compiled terms (a stub, B empty: a geometry prepared
        # elsewhere) has nothing to embed symbolically: its modes come ready-made (a family's
        # embedding) or run on the numeric path
        stub = any(not self.aut.constraints[c].B for c in active)
        if self.embedding == "symbolic" and not stub:
            cm = self.cache["mode"][key] = make_mode(self.mode_parts(key), key)
        elif self._starting and not stub:
            # the first mode of a background simulator is compiled at set-up, with LLVM
            cm = self.cache["mode"][key] = make_mode(self.mode_parts(key), key, backend="llvm")
        else:
            cm = self.cache["numeric"].get(key)
            if cm is None:
                cset = self.constraint_set(active)
                cm = self.cache["numeric"][key] = NumericMode(
                    self.numeric_terms(), mode, cset, dep, len(self.outputs), key,
                    [self.cterms(c.name) for c in cset.items])
            if self.embedding == "background" and not stub and key not in self.cache["submitted"]:
                self.cache["submitted"][key] = time.perf_counter()
                self.compiler.submit(key, rhs=self.integrator.uses_rhs)
        self.embed_times.append(time.perf_counter() - t0)
        return cm

    def precompile_modes(self, max_partitions=12):
        """Embed and compile (LLVM) every mode of the automaton for every choice of dependent
        speeds, at set-up: mode switches then cost no compile at all (small automata only)."""
        from itertools import combinations
        n = self.model.n
        for mode_id, mode in list(self.aut.modes.items()):
            active = tuple(sorted(mode.constraints))
            deps = list(combinations(range(n), len(active)))
            if len(deps) > max_partitions:
                continue
            for dep in deps:
                key = (mode_id, active, dep)
                if key in self.cache["mode"]:
                    continue
                try:
                    self.cache["mode"][key] = make_mode(self.mode_parts(key, EXPLICIT_OPS_OFFLINE),
                                                        key, backend="llvm")
                except ConstraintRankError:
                    continue          # this choice is singular everywhere

    def warm_up(self):
        """Call, once, what event handling uses, so that the first event of a run does not pay
        first-call costs (measured: 0.2-4 ms each for numpy's and LAPACK's first solve or
        QR, a constraint's compile on first use): every constraint's compiled terms, the
        unconstrained terms, the linear algebra of an event at this model's sizes, and every
        compiled mode's function; and, compiled with LLVM, the entry terms of every mode's
        constraint set (``EntryTerms``)."""
        n = self.model.n
        tq = np.concatenate(([self.t], self.q, self.pvec))
        tqu = np.concatenate(([self.t], self.q, self.u, self.pvec))
        with np.errstate(all="ignore"):
            for name in list(self.aut.constraints):
                ct = self.cterms(name)
                ct.BC(tq)
                ct.gamma(tqu)
                if ct.phi is not None:
                    ct.phi(tq)
            for mode in list(self.aut.modes.values()):
                active = tuple(sorted(mode.constraints))
                if active and active not in self.cache["entry"]:
                    self.cache["entry"][active] = EntryTerms(
                        self.model, self.constraint_set(active), self.psyms, "llvm")
                if active:
                    self._entry([self.cterms(c) for c in active], self.t, self.q, self.u)
            self.numeric_terms().evaluate(self.t, self.q, self.u, self.pvec)
            k = n + max([len(md.constraints) for md in self.aut.modes.values()] + [1]) + 2
            for size in range(1, k + 1):
                a = np.eye(size) + 0.1
                np.linalg.solve(a, np.ones(size))
                np.linalg.inv(a)
                dgesv(a, np.ones(size))
                m = max(1, size // 2)
                B = np.ones((m, size)) + np.eye(m, size)
                partition(B)
                kappa(B, tuple(range(m)))
            if not _WARMED:          # once a process: each LLVM compile keeps its memory
                import pickle
                x = se.Symbol("x")   # unpickling symengine expressions and LLVM functions
                pickle.loads(pickle.dumps([se.sin(x) + 1,
                                           lambdify([x], [se.sin(x)], "x", "llvm")]))
                _WARMED.append(True)
            for cm in list(self.cache["mode"].values()) + list(self.cache["numeric"].values()):
                try:
                    cm.rk4(self.t, 0.0, np.full(cm.nx, 0.5), self.pvec)
                except Exception:  # noqa: BLE001 - a dummy state may be singular for a mode
                    pass

    def mode_parts(self, key, explicit_ops=None, compose_ops=None, mode=None, cset=None):
        """Symbolic embedding of one mode (eq 11-16), ready to compile.  ``explicit_ops``:
        how large a system may be solved symbolically (larger off the stepping path);
        ``compose_ops``: how large monitors may go into the composed RK4 step.  ``mode`` and
        ``cset``: a mode and its constraints that are not the automaton's (a family,
        embedded once for every member)."""
        mode_id, active, dep = key
        mode = mode or self.aut.modes[mode_id]
        cset = cset or self.constraint_set(active)
        ekey = (cset.key, tuple(dep))
        emb = self.cache["emb"].get(ekey)
        if emb is None:
            emb = self.cache["emb"][ekey] = embed(self.model, cset, tuple(dep))
        eqs = ModeEquations(self.model, emb, dict(mode.laws), explicit_ops)
        sub = dict(zip(self.model.forces, eqs.forces))
        sub.update(emb.u_sub)
        outs, guards = self.mode_exprs(mode_id, None if mode_id in self.aut.modes else mode)
        # multipliers named in outputs and switching conditions: lambda_<constraint>
        lam = {lam_symbol(c): v for c, v in zip(cset.key, eqs.multipliers)}
        for e in outs + guards:
            for sym in e.free_symbols:
                if str(sym).startswith("lambda_") and sym not in lam:
                    lam[sym] = se.Integer(0)
        sub.update(lam)
        outs = [e.subs(sub) for e in outs]
        guards = [e.subs(sub) for e in guards]
        res = []
        for c in cset.items:
            res.append(velocity(c, eqs.u_full))
            if c.holonomic:
                res.append(c.phi)
        kap = se.Integer(1)
        moving = list(self.model.q) + [TIME]
        if any(e.has(v) for c in cset.items for e in c.B for v in moving):
            B1inv = emb.B1inv
            kap = norm1([list(c.B) for c in cset.items]) * norm1(
                [[B1inv[i, j] for j in range(B1inv.ncols())] for i in range(B1inv.nrows())])
        return mode_parts(self.model, eqs, self.psyms, outs, res, guards, kap, compose_ops)

    def poll_background(self):
        """Take the background worker's finished compiles; the active mode moves to the
        symbolic path at once (x and the monitors do not change)."""
        if self.compiler is None:
            return
        for key, fns, meta in self.compiler.results():
            cm = make_mode(meta, key, fns)
            self.cache["mode"][key] = cm
            t_sub = self.cache["submitted"].get(key)
            if t_sub is not None:
                self.background_latency = time.perf_counter() - t_sub
            if self.cm is not None and self.cm.key == key:
                self.cm = cm
        for kind, key, obj in self.compiler.extras():
            if kind == "entry":
                self.cache["entry"].setdefault(key, obj)
            elif key in self.cache["mode"]:
                self.cache["mode"][key].set_rhs(obj)

    def _partition(self, names, t, q):
        if not names:
            return ()
        return partition(self._B_numeric(names, t, q), tuple(names))

    def mode_exprs(self, mode_id, mode=None):
        """A mode's outputs (the automaton's, with the mode's overrides) and switching
        conditions (falling through 0 = fires), in the model's symbols; of ``mode`` if given
        (one not in the automaton: not kept)."""
        ex = self.cache["exprs"]
        if mode is not None or mode_id not in ex:
            m, md = self.model, mode or self.aut.modes[mode_id]
            over = {k: m.sym(v) for k, v in md.outputs}
            outs = [over.get(k, e) for k, e in zip(self.outputs, self._out_exprs)]
            both = (outs, [m.sym(g.expr) * (-g.direction) for g in md.guards])
            if mode is not None:
                return both
            ex[mode_id] = both
        return ex[mode_id]

    def numeric_terms(self):
        """The unconstrained terms compiled once (Sec 5.5), built on first use."""
        if "terms" not in self.cache:
            ids = list(self.aut.modes)
            self.cache["terms"] = NumericTerms(
                self.model, self.psyms, {k: self.mode_exprs(k)[0] for k in ids},
                {k: self.mode_exprs(k)[1] for k in ids}, {k: self.aut.modes[k].laws for k in ids},
                {k: self.aut.modes[k].constraints for k in ids})
        return self.cache["terms"]

    def add_mode(self, mode):
        """A mode defined at run time (a geometry announced by the master, say); its
        constraints must be known (``add_constraint``)."""
        if mode.id in self.aut.modes:
            raise ModelDefinitionError(f"mode {mode.id} exists; give the new one another id")
        self.aut.modes[mode.id] = mode
        if "terms" in self.cache:
            outs, guards = self.mode_exprs(mode.id)
            self.cache["terms"].add_mode(mode.id, mode.laws, outs, guards, mode.constraints)
        if self.compiler is not None:
            self.compiler.announce_mode(mode)

    @property
    def mode_number(self):
        """The mode as reported to the outside (Mode.report, else its id)."""
        md = self.aut.modes.get(self.mode)
        return self.mode if md is None or md.report is None else md.report

    def activation_jump(self, names, q, u, tol=1e-12, entry=None):
        """Momentum-consistent velocity jump when constraints become active (mueller eq 5-7).

        Solves [M B^T; B 0] [du; Lambda] = [0; -(B u + C)] over all constraints active after
        the event, persistent ones included: the form of eq 7 that needs no inverse of M, so
        it also holds when the unconstrained M is singular (Euler parameter speeds).  With
        the persistent constraints satisfied before the event this is eq 7 itself; it is
        ANDY's plastic impact map (wang2019 eq 19) for a new contact.  Returns the new full
        speeds and the impulse of each constraint.  ``entry``: ``_entry``'s (K, B, rhs, Phi)
        at (q, u), if known already.
        """
        n = self.model.n
        K, _, rhs, _ = entry if entry is not None else self._entry(
            [self.cterms(c) for c in names], self.t, q, u)
        if _max_abs(rhs) <= tol * max(1.0, _max_abs(u)):
            return u, {}
        _, _, z, info = dgesv(K.T, rhs)     # K is symmetric: its transpose is K, in the
                                            # column order LAPACK takes without a copy
        if info != 0:
            raise ConstraintRankError(
                f"constraints {list(names)} cannot be activated at t = {self.t:.9g} s: "
                "[M B^T; B 0] is singular (redundant constraints)")
        return u + z[:n], dict(zip(names, (-z[n:]).tolist()))

    def constraint_forces(self):
        """Multipliers of the active constraints: F + F* + B^T lambda = 0 (zero where a declared
        force symbol carries the constraint force, see ``forces_now``)."""
        if self.cm is None:
            return {}
        return dict(zip(self.active, self.mon[self.cm.sl_lambda].tolist()))

    # --------------------------------------------------------------- probes
    def forces_at(self, mode_id, discrete, t, q, u):
        """Contact forces in mode ``mode_id`` at (t, q, u) with the given discrete values."""
        saved = self.discrete
        self.discrete = dict(discrete)
        self._sync_discrete()
        try:
            active = tuple(sorted(self.aut.modes[mode_id].constraints))
            dep = self._partition(active, t, q)
            cm = self.compiled(mode_id, dep, active)
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
    def _target(self, jump: Jump):
        """(mode, active constraints, q, u) that ``jump`` enters with: q and u are views of x
        and mon (never changed in place) unless the reset map gives new values."""
        mode = self.aut.modes[jump.mode]
        active = tuple(sorted(mode.constraints if jump.constraints is None else jump.constraints))
        q = self.q if jump.q is None else np.array(jump.q, dtype=float)
        u = self.u if jump.u is None else np.array(jump.u, dtype=float)
        return mode, active, q, u

    def _apply(self, jump: Jump):
        """Enter jump.mode with the reset state, re-embedding (from cache) if needed."""
        before = self.active
        mode, self.active, q, u = self._target(jump)
        self.discrete = {**self.discrete, **{k: float(v) for k, v in jump.discrete.items()}}
        self._sync_discrete()
        self.mode = jump.mode
        self.last_impulse = {}
        # the new constraints at the reset configuration, evaluated once for the projection
        # (haug_pavesic2023 eq 13), the activation jump (mueller eq 7), the partition (eq 11)
        # (kappa(B1) comes with the monitors): an event step evaluates them once
        cts = [self.cterms(c) for c in self.active]
        self._hol = [ct for ct in cts if ct.holonomic]
        self._watch = any(not ct.constant_B for ct in cts)
        self.chart = None
        if cts:
            entry = self._entry(cts, self.t, q, u)
            if self._hol and _max_abs(entry[3]) > PHI_TOL:
                q = self._project_q(q)
                entry = self._entry(cts, self.t, q, u)
            if jump.u is None and set(self.active) - set(before):
                u, self.last_impulse = self.activation_jump(self.active, q, u, entry=entry)
            self.dep = partition(entry[1], self.active)
        else:
            self.dep = ()
        self.cm = self.compiled(jump.mode, self.dep, self.active)
        self.x = np.concatenate((q, u[list(self.cm.ind)]))
        self.mon = self.cm.monitors(self.t, self.x, self.pvec)
        self.kappa0 = float(self.mon[self.cm.i_kappa])
        self.enabled = tuple(g.enabled is None or bool(g.enabled(self.discrete)) for g in mode.guards)
        self.armed = self._arm()
        self._rehearsed = None
        self._dirty = self._rearm = False

    def _arm(self):
        """How each switching condition is watched at entry (``UNARMED``, ``ARMED``, ``HELD``).

        Positive now: armed (fires when it falls to 0).  At zero or just below (-PROBE_G, 0],
        as a located event leaves the condition that fired, often at exactly 0.0: looked at an
        instant later; positive there (a rebound whose next flight may be shorter than a step)
        it is armed, else it is held at zero: it fires if it falls below -PROBE_G, so a
        condition identically zero (switched off by an input) stays silent, but one that runs
        on through its surface is never missed.  Below -PROBE_G: unarmed until positive."""
        g = self.mon[self.cm.sl_guards].tolist()
        near = [-PROBE_G < v <= 0.0 for v in g]
        if not any(near):
            return tuple(ARMED if v > 0 else UNARMED for v in g)
        tau = min(PROBE, self.integrator.h_max / 100)
        later = self.integrator.partial(self.cm, self.t, self.x, self.pvec, tau)
        g2 = later[self.cm.nx + self.cm.sl_guards.start:self.cm.nx + self.cm.sl_guards.stop]
        return tuple(ARMED if a > 0 or (n and b > 0) else HELD if n else UNARMED
                     for a, b, n in zip(g, g2.tolist(), near))

    def _rearm_after_input(self):
        """How each switching condition is watched once an input changed its value: an armed
        one driven below -PROBE_G fires at once (the change made it true); one the input
        brought to zero (a latch opened) is held there, and one held at zero that the input
        drives negative (a latch closed with the tip past it) waits until it is positive."""
        self._rearm = False
        g = self.mon[self.cm.sl_guards].tolist()
        self.armed = tuple(
            ARMED if v > 0 else
            UNARMED if a == UNARMED else
            HELD if v > -PROBE_G else
            a if a == ARMED else UNARMED
            for a, v in zip(self.armed, g))

    def _handle(self, gi):
        """Apply the reset map of switching condition gi; count events and watch for Zeno
        behaviour (ANDY's multi-jump counter): too many events at one instant, or impacts
        accumulating in time, hand over to the automaton's persistent mode (``zeno``)."""
        mode = self.aut.modes[self.mode]
        guard = mode.guards[gi]
        before = self.mode
        if self.events and self.t - self.last_event_time <= EVENT_TOL:
            self.same_instant += 1
        else:
            self.same_instant = 0
        ctx = Context(self, guard.name)
        jump = self.aut.transition(ctx, guard.name)
        if jump.impact:
            self.impact_count += 1
            self.impacts.append((float(self.t), guard.name, np.array(ctx.q), np.array(ctx.u),
                                 None if jump.u is None else np.array(jump.u)))
            del self.impacts[:-IMPACT_LOG]
            gap = self.t - self._last_impact if self._last_impact is not None else np.inf
            # a new list, never changed in place: the step's checkpoint keeps a reference
            self._impact_gaps = (self._impact_gaps + [gap])[-ZENO_IMPACTS:]
            self._last_impact = self.t
        zeno = (self.same_instant > ZENO_LIMIT or
                (jump.impact and len(self._impact_gaps) == ZENO_IMPACTS
                 and max(self._impact_gaps) < self.zeno_dt))
        if zeno:
            if self.aut.zeno is None:
                raise ZenoError(
                    f"Zeno behaviour at t = {self.t:.12g} s ({guard.name!r} in mode {mode.name!r}: "
                    f"{self.same_instant} events at one instant, impacts {ZENO_IMPACTS} in a row "
                    f"less than {self.zeno_dt} s apart) and no persistent mode to switch to")
            jump = self.aut.zeno(ctx, guard.name)
            self._impact_gaps = []
            self.zeno_count += 1
        self._apply(jump)
        self._record("zeno:" + guard.name if zeno else guard.name, before)

    def _record(self, label, before):
        """Count the event just applied (from mode ``before``) and log it."""
        self.event_count += 1
        self.last_event_time = self.t
        self.events.append((float(self.t), label, before, self.mode))

    def _due(self, g, level=0.0):
        """Index of the first watched, enabled switching condition at or below its firing
        level (0 armed, -PROBE_G held; never above ``level``) in g."""
        for i, (v, a, e) in enumerate(zip(g, self.armed, self.enabled)):
            if a and e and v <= min(_LEVEL[a], level):
                return i
        return None

    def _approaching(self, g_prev, g_end):
        """The armed, enabled switching condition that, falling as it fell over the last
        step, crosses zero within the next one (not one already rehearsed), else None."""
        for i, (a, b, armed, on) in enumerate(zip(g_prev, g_end, self.armed, self.enabled)):
            if armed == ARMED and on and 0.0 < b < a and b <= a - b \
                    and self._rehearsed != (self.mode, i):
                return i
        return None

    def _rehearse(self, gi):
        """Evaluate what the event of switching condition gi will need (its reset map, the
        entered constraint set's entry terms, the partition, the new mode's monitors) without
        applying any of it: an event step finds the caches cold and costs 0.4-0.6 ms where it
        costs 0.15-0.2 ms warm; rehearsed one step ahead, that cost is split over two steps.
        Changes no state; a failure here is left for the event itself to report.  Returns
        whether the rehearsal went through."""
        self._rehearsed = (self.mode, gi)
        try:
            name = self.aut.modes[self.mode].guards[gi].name
            jump = self.aut.transition(Context(self, name), name)
            _, active, q, u = self._target(jump)
            dep = ()
            if active:
                entry = self._entry([self.cterms(c) for c in active], self.t, q, u)
                dep = partition(entry[1], active)
            cm = self.cache["mode"].get((jump.mode, active, dep))
            if cm is not None:
                cm.monitors(self.t, np.concatenate((q, u[list(cm.ind)])), self.pvec)
        except Exception:  # noqa: BLE001 - the event reports its own errors
            return False
        return True

    def _locate(self, gi, x0, p, h, gb):
        """Earliest tau in (0, h] where guard gi falls to <= its firing level (0, or -PROBE_G
        when held at zero, see _arm; gb = its value at h), bracketed to EVENT_TOL (Illinois)."""
        integ, cm, t0 = self.integrator, self.cm, self.t
        o = cm.nx + cm.sl_guards.start + gi
        level = _LEVEL[self.armed[gi]]
        g = lambda tau: integ.partial(cm, t0, x0, p, tau)[o] - level  # noqa: E731
        gb -= level
        a, b = 0.0, h
        ga = self.mon[cm.sl_guards][gi] - level
        if ga <= 0:         # armed at zero by a reset map (see _arm): start an instant later
            a = min(PROBE, h / 100)
            ga = g(a)
            if ga <= 0:
                return a
        side = 0
        for _ in range(200):
            if b - a <= EVENT_TOL:
                return b
            c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
            if not (a < c < b):
                c = 0.5 * (a + b)
            c = min(max(c, a + 0.25 * EVENT_TOL), b - 0.25 * EVENT_TOL)
            gc = g(c)
            if gc == 0.0:       # on the crossing itself (else gb = 0 stalls the secant)
                return c
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

    def _project_q(self, q):
        """Dependent coordinates from Phi(q) = 0 (haug_pavesic2023 eq 13-16).

        Newton iteration q <- q - U B Phi(q) along the chart's normal directions U = Phi_q^T,
        with the held inverse B = (Phi_q U)^-1 refreshed by eq 16; a new chart is taken
        when the iteration stops contracting.  Only q changes: the dependent speeds follow
        from the embedding (eq 12) at the new q.
        """
        tq = np.concatenate(([self.t], q, self.pvec))

        def phi(tq):
            v = np.array([ct.phi(tq) for ct in self._hol])
            return v[:, 0], v[:, 1:]

        r, G = phi(tq)
        if _max_abs(r) <= PHI_TOL:
            return q            # the chart is taken when a correction first needs one
        if self.chart is None:
            self._rechart(G)
        n = self.model.n
        it = 0
        while _max_abs(r) > PHI_TOL:
            if it == 12:
                raise IntegrationError(
                    f"configuration constraints {[ct.name for ct in self._hol]} not satisfied "
                    f"(|Phi| = {_max_abs(r):.3g}) at t = {self.t:.9g} s; the configuration "
                    "left the constraint manifold: reduce h_max")
            U, Bh = self.chart
            q = q - U @ (Bh @ r)
            tq[1:1 + n] = q
            r_new, G = phi(tq)
            if it >= 2 and _max_abs(r_new) > 0.1 * _max_abs(r):
                self._rechart(G)
            r = r_new
            it += 1
        U, Bh = self.chart
        GU = G @ U
        Bh = 2 * Bh - Bh @ GU @ Bh                                   # eq 16
        if _max_abs((GU @ Bh - np.eye(len(r))).ravel()) > 0.25:
            self._rechart(G)
        else:
            self.chart = (U, Bh)
        return q

    def _rechart(self, G):
        U = G.T.copy()
        _, _, Bh, info = dgesv(G @ U, np.eye(len(G)))
        if info != 0:
            raise ConstraintRankError(f"configuration constraints {[ct.name for ct in self._hol]}"
                                      f" have a singular Jacobian at t = {self.t:.9g} s")
        self.chart = (U, Bh)
        self.recharts += 1

    def _after_step(self):
        """Hold the configuration constraints and watch the dependent block of B (Sec 5.4)."""
        n = self.model.n
        if self._hol and self.mon[self.cm.i_res] > PHI_TOL:   # the residual includes |Phi|
            q = self.x[:n]
            qp = self._project_q(q)
            if qp is not q:
                self.x = np.concatenate((qp, self.x[n:]))
                self.mon = self.cm.monitors(self.t, self.x, self.pvec)
        if self._watch and self.mon[self.cm.i_kappa] > RESELECT * max(self.kappa0, 1.0):
            self._reselect()        # kappa(B1) is a monitor: watching it costs nothing

    def _reselect(self):
        """New independent speeds by pivoting on B here; re-embed (cache) without stopping."""
        t0 = time.process_time()
        q, u = np.array(self.q), np.array(self.u)
        dep = self._partition(self.active, self.t, q)
        if dep != self.dep:
            self.dep = dep
            n_emb = len(self.embed_times)
            self.cm = self.compiled(self.mode, dep, self.active)
            self.reselect_compile_time += sum(self.embed_times[n_emb:])
            self.x = np.concatenate((q, u[list(self.cm.ind)]))
            self.mon = self.cm.monitors(self.t, self.x, self.pvec)
            self.reselections += 1
        self.kappa0 = float(self.mon[self.cm.i_kappa])
        self.reselect_time += time.process_time() - t0

    def jump_to(self, mode, q=None, u=None, label="reset", **discrete):
        """Enter ``mode`` now with an optional new state (a reset from outside: an event)."""
        before = self.mode
        self._apply(Jump(mode, discrete, q=q, u=u))
        self._record(label, before)

    def set_constraints(self, names, label="constraints"):
        """Activate exactly the constraints ``names`` in the current mode now (an event)."""
        for c in names:
            if c not in self.aut.constraints:
                raise ModelDefinitionError(f"unknown constraint {c!r}; known: "
                                           f"{sorted(self.aut.constraints)}")
        before = self.mode
        self._apply(Jump(self.mode, constraints=tuple(names)))
        self._record(label, before)

    def _accept(self, y):
        cm = self.cm
        self._check_finite(y, "state")
        self.x = y[:cm.nx]
        self.mon = y[cm.nx:-1]

    def _check_finite(self, y, what):
        """IntegrationError unless every entry of y (state and monitors: outputs, forces,
        conditions) is finite: nothing non-finite is ever accepted, so none reaches outputs."""
        # the sum is nan or inf where any entry is (or where it overflows: then look closer)
        if not math.isfinite(sum(y.tolist())) and not all(map(math.isfinite, y.tolist())):
            cm = self.cm
            names = ([str(c) for c in self.model.q] + [str(self.model.u[i]) for i in cm.ind]
                     if len(y) > len(self.mon) else [])
            names += ([str(u) for u in self.model.u] + [str(f) for f in self.model.forces]
                      + list(self.outputs))
            bad = [names[i] if i < len(names) else f"monitor {i}"
                   for i, e in enumerate(y.tolist()) if not math.isfinite(e)]
            raise IntegrationError(
                f"non-finite {what} at t = {self.t:.9g} s in mode {cm.key} ({', '.join(bad[:5])}"
                f"{', ...' if len(bad) > 5 else ''}); check inputs and parameters; the last "
                "good state is kept")

    # ---------------------------------------------------------------- advance
    def _checkpoint(self):
        """References to the current state (the engine never mutates these in place)."""
        self._cp = (self.t, self.x, self.mon, self.mode, self.discrete, self.dep, self.armed,
                    self.enabled, self.event_count, self.last_event_time, len(self.events),
                    self.same_instant, self.cm, self.integrator.get_state(), self.active,
                    self.chart, self.kappa0, self._hol, self._watch, self.impact_count,
                    self.zeno_count, self._impact_gaps, self._last_impact)

    def rollback(self):
        """Back to the state at the start of the last ``advance`` if it failed (the last good
        state; ``advance`` does this itself before it raises); after a successful one, or
        before any, nothing to do: the current state is the last good one."""
        if self._cp is None:
            return
        (self.t, self.x, self.mon, self.mode, self.discrete, self.dep, self.armed, self.enabled,
         self.event_count, self.last_event_time, ne, self.same_instant, self.cm, integ, self.active,
         self.chart, self.kappa0, self._hol, self._watch, self.impact_count, self.zeno_count,
         self._impact_gaps, self._last_impact) = self._cp
        del self.events[ne:]
        self.integrator.set_state(integ)
        self._sync_discrete()
        self._dirty = True

    def advance(self, t_end):
        """Integrate to t_end, handling every event on the way, in time order.  Any EmbedError
        on the way rolls back to the state at the call (the last good state) and is raised."""
        t_end = float(t_end)
        if not (math.isfinite(t_end) and t_end >= self.t - EVENT_TOL):
            raise InputError(f"advance to t_end = {t_end!r} from t = {self.t!r} s: the end "
                             "must be finite and not before the current time")
        n = self.integrator.steps_needed(self.t, t_end)
        if n > MAX_STEPS:
            raise StepBudgetError(
                f"advancing {t_end - self.t:.6g} s from t = {self.t:.9g} s needs at least {n:.3g}"
                f" steps of h_max = {self.integrator.h_max:g} s, more than the budget of "
                f"{MAX_STEPS:.0e} steps per call; take shorter communication steps or a larger "
                "h_max (the state is kept)")
        self._checkpoint()
        try:
            self._advance(t_end)
        except EmbedError:
            self.rollback()
            self._cp = None      # rolled back: the current state is the last good one
            raise
        self._cp = None          # the last good state is this one

    def _advance(self, t_end):
        if self.compiler is not None:
            self.poll_background()
        if self._dirty:     # inputs changed at this communication point: a condition may be due now
            self.mon = self.cm.monitors(self.t, self.x, self.pvec)
            self._check_finite(self.mon, "monitors")
            self._dirty = False
            if self._rearm:
                self._rearm_after_input()
            while (gi := self._due(self.mon[self.cm.sl_guards], -PROBE_G)) is not None:
                self._handle(gi)
        integ, p = self.integrator, self.pvec
        budget = MAX_STEPS
        while t_end - self.t > EVENT_TOL:
            budget -= 1
            if budget < 0:
                raise StepBudgetError(
                    f"{MAX_STEPS:.0e} steps (h_max = {integ.h_max:g} s) did not reach t = "
                    f"{t_end:.9g} s from t = {self._cp[0]:.9g} s: they averaged "
                    f"{(self.t - self._cp[0]) / MAX_STEPS:.3g} s up to t = {self.t:.9g} s; "
                    "check the inputs and rtol (the state is kept)")
            cm, x0 = self.cm, self.x
            h, y = integ.step(cm, self.t, x0, p, t_end - self.t)
            gs = cm.nx + cm.sl_guards.start
            g_end = y[gs:gs + cm.sl_guards.stop - cm.sl_guards.start].tolist()   # plain floats
            if self._due(g_end) is None:
                g_prev = self.mon[cm.sl_guards].tolist()
                self._accept(y)
                self.t = integ.t_next
                if self._hol or self._watch:
                    self._after_step()
                if (gi := self._approaching(g_prev, g_end)) is not None:
                    self._rehearse(gi)
                if not all(a == ARMED for a in self.armed):
                    self.armed = tuple(ARMED if v > 0 else a for a, v in
                                       zip(self.armed, self.mon[cm.sl_guards].tolist()))
                continue
            hits = [i for i, (v, a, e) in enumerate(zip(g_end, self.armed, self.enabled))
                    if a and e and v <= _LEVEL[a]]
            tau, gi = min((self._locate(i, x0, p, h, g_end[i]), i) for i in hits)
            self._accept(integ.partial(cm, self.t, x0, p, tau))
            self.t += tau
            self._handle(gi)
            # a reset map may leave another condition already crossed (not merely at zero)
            while (gi := self._due(self.mon[self.cm.sl_guards], -PROBE_G)) is not None:
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
            "integrator": self.integrator.get_state(), "active": self.active,
            "chart": self.chart, "kappa0": self.kappa0, "path": self.cm.path,
            "counters": [self.reselections, self.recharts],
            "impacts": [self.impact_count, self.zeno_count, self._impact_gaps, self._last_impact],
        })

    def set_state(self, s):
        """Restore a state of ``get_state``: checked whole first (``check_state``), so a
        state that does not fit this simulator raises StateError naming the field and
        changes nothing."""
        s, cm = self.check_state(s)
        self.t = float(s["t"])
        self.mode = int(s["mode"])
        self.discrete = {k: float(v) for k, v in s["discrete"].items()}
        self.dep = tuple(int(i) for i in s["dep"])
        self.active = tuple(s["active"])
        self._hol = [self.cterms(c) for c in self.active if self.aut.constraints[c].holonomic]
        self._watch = any(not self.cterms(c).constant_B for c in self.active)
        self.chart = None if s["chart"] is None else tuple(np.array(a, dtype=float)
                                                           for a in s["chart"])
        self.kappa0 = float(s["kappa0"])
        self.reselections, self.recharts = (int(v) for v in s["counters"])
        self.impact_count, self.zeno_count, gaps, last = s["impacts"]
        self.impact_count, self.zeno_count = int(self.impact_count), int(self.zeno_count)
        self._impact_gaps = [float(g) for g in gaps]
        self._last_impact = None if last is None else float(last)
        self.cm = cm
        self.x = np.array(s["x"], dtype=float)
        self.mon = np.array(s["mon"], dtype=float)
        self.armed = tuple(int(a) for a in s["armed"])
        self.enabled = tuple(bool(a) for a in s["enabled"])
        self.event_count = int(s["event_count"])
        self.last_event_time = float(s["last_event_time"])
        self.events = [tuple(e) for e in s["events"]]
        self.same_instant = int(s["same_instant"])
        self.pvec = np.array(s["pvec"], dtype=float)
        self.integrator.set_state(s["integrator"])
        self._cp = None
        self._dirty = self._rearm = False

    def check_state(self, s):
        """StateError unless ``s`` is a whole, consistent state of this simulator's automaton:
        every field present and of its type, the mode and constraints known, the dependent
        speeds a valid choice for the active constraints, x, mon, pvec, armed and enabled of
        the lengths that mode needs, every number finite.  Returns a copy of s and the compiled
        mode it runs in; nothing of the simulator changes."""
        s = copy.deepcopy(s)

        def bad(field, why):
            return StateError(f"state field {field!r} {why}; the state is refused and the "
                              "simulator keeps its own")

        if not isinstance(s, dict):
            raise StateError(f"a state is a dict of fields, not {type(s).__name__}")
        for k in STATE_FIELDS:
            if k not in s:
                raise bad(k, "is missing")

        def number(field, v, lo=-math.inf, integer=False):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise bad(field, f"= {v!r} is not a number")
            if not (math.isfinite(float(v)) and v >= lo):
                raise bad(field, f"= {v!r} is not finite" + (f" and >= {lo}" if lo > -math.inf
                                                              else ""))
            if integer and float(v) != int(v):
                raise bad(field, f"= {v!r} is not an integer")
            return v

        def vector(field, v, n):
            try:
                a = np.array(v, dtype=float)
            except (TypeError, ValueError):
                raise bad(field, "is not a vector of numbers") from None
            if a.ndim != 1 or len(a) != n:
                raise bad(field, f"has shape {a.shape}; this simulator needs ({n},)")
            if not np.all(np.isfinite(a)):
                raise bad(field, "holds non-finite numbers")
            return a

        n = self.model.n
        number("t", s["t"])
        number("last_event_time", s["last_event_time"])
        number("kappa0", s["kappa0"], 0.0)
        for f in ("event_count", "same_instant"):
            number(f, s[f], 0, integer=True)
        mode = s["mode"]
        if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)) \
                or int(mode) not in self.aut.modes:
            raise bad("mode", f"= {mode!r} is not a mode of this automaton "
                              f"({sorted(self.aut.modes)})")
        guards = self.aut.modes[int(mode)].guards
        disc = s["discrete"]
        if not isinstance(disc, dict) or sorted(disc) != sorted(self.dnames):
            raise bad("discrete", f"must have exactly the discrete variables {self.dnames}")
        for k, v in disc.items():
            number(f"discrete[{k}]", v)
        active = s["active"]
        if not isinstance(active, (list, tuple)) or not all(isinstance(c, str) for c in active):
            raise bad("active", "is not a list of constraint names")
        unknown = [c for c in active if c not in self.aut.constraints]
        if unknown or len(set(active)) != len(active) or list(active) != sorted(active):
            raise bad("active", f"= {list(active)} is not a sorted set of this automaton's "
                                f"constraints ({sorted(self.aut.constraints)})")
        dep = s["dep"]
        if not isinstance(dep, (list, tuple)) or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in dep) \
                or len(dep) != len(active) or len(set(dep)) != len(dep) \
                or not all(0 <= i < n for i in dep):
            raise bad("dep", f"= {dep!r} is not one distinct speed index in 0..{n - 1} per "
                             f"constraint of the field 'active' ({list(active)})")
        pvec = vector("pvec", s["pvec"], len(self.psyms))
        o = self.np_ + self.ni
        if [float(disc[k]) for k in self.dnames] != pvec[o:o + len(self.dnames)].tolist():
            raise bad("pvec", "disagrees with the field 'discrete'")
        for f in ("armed", "enabled"):
            v = s[f]
            if not isinstance(v, (list, tuple)) or len(v) != len(guards):
                raise bad(f, f"must hold one entry per switching condition of mode {mode} "
                             f"({len(guards)})")
        if not all(a in (UNARMED, ARMED, HELD) and not isinstance(a, float) for a in s["armed"]):
            raise bad("armed", f"= {s['armed']!r} holds other than {UNARMED}, {ARMED}, {HELD}")
        if not all(isinstance(a, (bool, np.bool_)) for a in s["enabled"]):
            raise bad("enabled", f"= {s['enabled']!r} holds other than booleans")
        ev = s["events"]
        if not isinstance(ev, (list, tuple)) or not all(
                isinstance(e, (list, tuple)) and len(e) == 4 and isinstance(e[1], str) for e in ev):
            raise bad("events", "is not a list of (t, label, from mode, to mode)")
        for e in ev:
            number("events", e[0])
        integ = s["integrator"]
        if not isinstance(integ, dict):
            raise bad("integrator", "is not a dict")
        for k, v in integ.items():
            number(f"integrator[{k}]", v, 0.0 if k == "h" else -math.inf)
        if "h" in integ and not integ["h"] > 0:
            raise bad("integrator[h]", "must be > 0")
        cnt = s["counters"]
        if not isinstance(cnt, (list, tuple)) or len(cnt) != 2:
            raise bad("counters", "is not [reselections, recharts]")
        for v in cnt:
            number("counters", v, 0, integer=True)
        imp = s["impacts"]
        if not isinstance(imp, (list, tuple)) or len(imp) != 4 \
                or not isinstance(imp[2], (list, tuple)):
            raise bad("impacts", "is not [impact count, Zeno count, gaps, last impact time]")
        number("impacts", imp[0], 0, integer=True)
        number("impacts", imp[1], 0, integer=True)
        for g in imp[2]:         # the gap before a first impact is inf
            if not (isinstance(g, (int, float, np.floating)) and g >= 0 and not math.isnan(g)):
                raise bad("impacts", f"holds a gap {g!r}")
        if imp[3] is not None:
            number("impacts", imp[3])
        hol = [c for c in active if self.aut.constraints[c].holonomic]
        chart = s["chart"]
        if chart is not None:
            if not isinstance(chart, (list, tuple)) or len(chart) != 2:
                raise bad("chart", "is not None or (U, B)")
            try:
                U, Bh = (np.array(a, dtype=float) for a in chart)
            except (TypeError, ValueError):
                raise bad("chart", "is not a pair of matrices") from None
            if U.shape != (n, len(hol)) or Bh.shape != (len(hol), len(hol)) \
                    or not (np.all(np.isfinite(U)) and np.all(np.isfinite(Bh))):
                raise bad("chart", f"must be finite matrices of shapes ({n}, {len(hol)}) and "
                                   f"({len(hol)}, {len(hol)})")
        if not isinstance(s.get("path"), (str, type(None))):
            raise bad("path", f"= {s.get('path')!r} is not a path name")
        try:
            cm = self.compiled(int(mode), tuple(int(i) for i in dep), tuple(active))
            if s.get("path") == "numeric" and cm.path != "numeric":
                cm = self.cache["numeric"][cm.key]   # replay on the path it ran on
        except (EmbedError, KeyError) as exc:
            raise bad("dep", f"= {list(dep)} cannot be embedded for {list(active)}: {exc}") \
                from None
        x = vector("x", s["x"], cm.nx)
        vector("mon", s["mon"], len(cm.monitors(float(s["t"]), x, pvec)))
        return s, cm
