"""The compiled-terms embedding path (gillespie2005 Sec 5.5).

The unconstrained terms (F_r + F_r* = b + A_u udot + A_f forces, the auxiliary
equations likewise, and qdot = W u + X) and each constraint's own terms (B, C and
gamma = Bdot u + Cdot) are compiled once, when the automaton is set up.  A mode
with any combination of constraints is then embedded numerically at every
evaluation: D = -B1^-1 B_ind and E = -B1^-1 C (eq 12), udot = T udot_ind + g with
T = [I; D], and the recombined equations T^T (F + F*) = 0 (eq 13-15) solved for the
independent accelerations together with the contact forces.  No symbolic work at
all happens when a constraint set is activated, so a never-seen combination steps
at once; the symbolic path (``compile``) replaces it when its compile is done.
``NumericMode`` follows the compiled-mode protocol of ``embed.modes.modes``.  See docs/design.md,
"Data flow".
"""

from __future__ import annotations

import numpy as np

from .functions import lambdify
from ..model import symbols
from ..model.constraints import gamma, moving_B, phi_and_gradient, velocity
from ..embedding.partition import kappa
from ..base.errors import ConstraintRankError, ModelDefinitionError
from .modes import Layout, rk4_stepwise


def lam_symbol(name):
    """The symbol by which outputs and switching conditions name a constraint's multiplier."""
    import symengine as se
    return se.Symbol("lambda_" + name)


def _flat(rows):
    return [e for r in rows for e in r]


def constraint_exprs(model, c):
    """A constraint's own terms as expressions, by role: "BC" [B..., C] of (t, q, p), "gamma"
    [gamma] of (t, q, u, p) and, if holonomic, "phi" [Phi, Phi_q...] of (t, q, p)."""
    out = {"BC": list(c.B) + [c.C], "gamma": [gamma(model, c)]}
    if c.holonomic:
        out["phi"] = phi_and_gradient(model, c)
    return out


class ConstraintTerms:
    """One constraint compiled once: [B, C](t, q, p), gamma(t, q, u, p) and, if holonomic, [Phi, Phi_q]."""

    def __init__(self, model, c, psyms, backend=None, fns=None, opt_level=None):
        """``fns`` = (BC, gamma, phi) compiled elsewhere (the background worker), if given."""
        q, u = list(model.q), list(model.u)
        self.name = c.name
        self.holonomic = c.holonomic
        if fns is not None:
            self.BC, self.gamma, self.phi = fns
        else:
            ex = constraint_exprs(model, c)
            tq, tqu = [symbols.TIME] + q + list(psyms), [symbols.TIME] + q + u + list(psyms)
            self.BC = lambdify(tq, ex["BC"], f"constraint {c.name!r}", backend, opt_level)
            self.gamma = lambdify(tqu, ex["gamma"], f"gamma of {c.name!r}", backend, opt_level)
            self.phi = lambdify(tq, ex["phi"], f"Phi of {c.name!r}", backend,
                                opt_level) if c.holonomic else None
        # a constant B row (no q, t) never needs re-selection (unknown for a stub: watch it)
        self.constant_B = bool(c.B) and not moving_B(model, [c])


class Role:
    """One role (a constraint's [B, C], gamma or [Phi, Phi_q]; a mode's monitors) of a compiled
    function that holds every term of a geometry defined at run time: one compile and one load
    instead of one for each.  Called with the role's own arguments, which ``idx`` places among
    the function's (None: the same)."""

    __slots__ = ("fn", "idx", "sl")

    def __init__(self, fn, idx, sl):
        self.fn, self.idx, self.sl = fn, None if idx is None else np.asarray(idx), sl

    def __call__(self, args):
        if self.idx is not None:
            full = np.zeros(self.fn.n_in)
            full[self.idx] = args
            args = full
        return self.fn(args)[self.sl]


class EntryTerms:
    """What entering a constraint set needs at the reset state, from one compiled call:
    K = [M B^T; B 0] and rhs = [0; -(B u + C)] of the momentum-consistent jump (mueller eq 7),
    K du_Lambda = rhs, B for
    the partition (eq 11) and Phi of the holonomic constraints (the projection's test,
    haug_pavesic2023 eq 13).  Compiled (LLVM) at set-up for the automaton's own constraint
    sets: an event step then makes one call where it made a dozen, each of which costs tens
    of microseconds in a 1 kHz loop that finds the caches cold."""

    def __init__(self, model, cset, psyms, backend=None):
        import symengine as se
        n, m = model.n, len(cset)
        self.n, self.m, self.key = n, m, cset.key
        E = [fr + fs for fr, fs in zip(model.Fr, model.Frstar)]
        B = [list(c.B) for c in cset.items]
        K = [[-se.diff(E[i], model.ud[j]) for j in range(n)] + [B[k][i] for k in range(m)]
             for i in range(n)]
        K += [B[k] + [se.Integer(0)] * m for k in range(m)]
        rhs = [se.Integer(0)] * n + [-velocity(c, model.u) for c in cset.items]
        phi = [c.phi for c in cset.items if c.holonomic]
        self.fn = lambdify([symbols.TIME] + list(model.q) + list(model.u) + list(psyms),
                           _flat(K) + rhs + phi, f"the entry terms of {list(cset.key)}", backend)

    def __call__(self, t, q, u, p):
        """(K, B, rhs, Phi) at (t, q, u): where the function has ``unsafe_real`` (compiled),
        through it with an argument array of its own (kept: its address is read once, not
        twice a call as the ordinary call does; an event step finds it cold), else called."""
        n, m = self.n, self.m
        N = n + m
        fn = self.fn
        unsafe = getattr(fn, "unsafe_real", None)
        if unsafe is None or fn.n_in != 1 + 2 * n + len(p):     # (the call says what is wrong)
            v = fn(np.concatenate(([t], q, u, p)))
        else:
            a = self.__dict__.get("_args")
            if a is None or a.size != 1 + 2 * n + len(p):
                a = self._args = np.empty(1 + 2 * n + len(p))
            a[0] = t
            a[1:1 + n] = q
            a[1 + n:1 + 2 * n] = u
            a[1 + 2 * n:] = p
            v = np.empty(fn.n_out)
            unsafe(a, v)
        K = v[:N * N].reshape(N, N)
        return K, K[n:, :n], v[N * N:N * N + N], v[N * N + N:]


class NumericTerms:
    """The unconstrained model and the automaton's laws and monitors, compiled once."""

    def __init__(self, model, psyms, outputs, guard_exprs, laws_by_mode, lam_names):
        self.model = model
        self.psyms = list(psyms)
        n, k, a = model.n, len(model.forces), len(model.aux)
        self.n, self.k, self.a = n, k, a
        lt = model.linear_terms()            # b + A_u udot + A_f f, read once per model
        exprs = lt.b + _flat(lt.Au) + _flat(lt.Af) + lt.ba + _flat(lt.Aau) + _flat(lt.Aaf)
        exprs += list(model.qdot)
        self.args_tqu = [symbols.TIME] + list(model.q) + list(model.u) + self.psyms
        # compiled once at set-up, called at every evaluation: LLVM (its calls many times
        # faster than the lambda backend's for a long chain: docs/design.md, facts)
        self.terms = lambdify(self.args_tqu, exprs, f"the unconstrained terms of {model.name!r}",
                              "llvm")
        self.margs = [symbols.TIME] + list(model.q) + list(model.u) + list(model.forces) \
            + self.psyms
        self.mon = {}
        self.laws = {}
        self.lam_names = {}
        for mode_id, laws in laws_by_mode.items():
            self.add_mode(mode_id, laws, outputs[mode_id], guard_exprs[mode_id],
                          lam_names[mode_id], "llvm")

    def __getstate__(self):
        """Pickled (shipped, issue 30) without symbols: the parameters' names stand for them
        (the stepping path reads none); ``bind`` gives them back before a mode is added."""
        state = dict(self.__dict__)
        state["psyms"] = [str(s) for s in self.psyms]
        state["args_tqu"] = state["margs"] = None
        return state

    def bind(self, model, psyms):
        """The model and its parameters' symbols (the real ones: after a scenario image's
        hand-over, or where loaded), as ``__init__`` set them; the names must match."""
        if [str(s) for s in psyms] != [str(s) for s in self.psyms]:
            raise ModelDefinitionError(f"the compiled terms of {model.name!r} were formed for "
                                       f"parameters {[str(s) for s in self.psyms]}, not {psyms}")
        self.model, self.psyms = model, list(psyms)
        self.args_tqu = [symbols.TIME] + list(model.q) + list(model.u) + self.psyms
        self.margs = [symbols.TIME] + list(model.q) + list(model.u) + list(model.forces) \
            + self.psyms

    def install_mode(self, mode_id, mon, laws_idx=(), laws_fn=None, lam_names=()):
        """A mode whose monitors (and laws) were compiled elsewhere (the background worker)."""
        self.lam_names[mode_id] = tuple(lam_names)
        self.mon[mode_id] = mon
        self.laws[mode_id] = (list(laws_idx), laws_fn)

    def add_mode(self, mode_id, laws, outputs, guards, lam_names=(), backend=None):
        """A mode's laws (F_k = l0 + L f) and monitors (outputs, guards) of (t, q, u, forces,
        lambda, p), lambda the multipliers of ``lam_names``.  Modes known at set-up compile
        with LLVM; modes added at run time with the fast lambda backend, so that adding one
        never stalls a step."""
        import symengine as se
        model = self.model
        self.lam_names[mode_id] = tuple(lam_names)
        margs = self.margs[:-len(self.psyms) or None] + [lam_symbol(c) for c in lam_names] \
            + self.psyms
        self.mon[mode_id] = lambdify(margs, list(outputs) + list(guards),
                                     f"the monitors of mode {mode_id}", backend)
        idx, l0, L = [], [], []
        for sym, law in laws:
            from ..model.model import to_symengine     # sympy: where a law is formed
            sym, law = to_symengine(sym), to_symengine(law)
            idx.append(list(model.forces).index(sym))
            l0.append(law.subs({f: 0 for f in model.forces}))
            L.extend(se.diff(law, f) for f in model.forces)
        self.laws[mode_id] = (idx, lambdify(self.args_tqu, l0 + L, f"laws of mode {mode_id}",
                                            backend) if idx else None)

    def mass(self, t, q, u, p):
        """The unconstrained generalized mass matrix M (F_r* = -M udot + ...)."""
        n = self.n
        v = self.terms(np.concatenate(([t], q, u, p)))
        return -v[n:n + n * n].reshape(n, n)

    def evaluate(self, t, q, u, p):
        n, k, a = self.n, self.k, self.a
        v = self.terms(np.concatenate(([t], q, u, p)))
        o = 0
        b = v[o:o + n]; o += n
        Au = v[o:o + n * n].reshape(n, n); o += n * n
        Af = v[o:o + n * k].reshape(n, k); o += n * k
        ba = v[o:o + a]; o += a
        Aau = v[o:o + a * n].reshape(a, n); o += a * n
        Aaf = v[o:o + a * k].reshape(a, k); o += a * k
        qdot = v[o:o + n]
        return b, Au, Af, ba, Aau, Aaf, qdot


class NumericMode(Layout):
    """Numeric path: one mode (constraint set, partition, laws) evaluated from the compiled terms."""

    path = "numeric"

    def __init__(self, terms: NumericTerms, mode, cset, dep, n_out, key, rows):
        """``rows``: the active constraints' own compiled terms (ConstraintTerms), in the
        order of ``cset``."""
        self.terms, self.key, self.mode_id = terms, key, mode.id
        n, k = terms.n, terms.k
        self.n = n
        self.dep = tuple(dep)
        self.ind = tuple(i for i in range(n) if i not in self.dep)
        self.nx = n + len(self.ind)
        self.rows = list(rows)
        self.names = [c.name for c in cset.items]
        self.watch = any(not r.constant_B for r in self.rows)     # kappa(B1) can change
        m = len(self.rows)
        self.law_idx, self.law_fn = terms.laws[mode.id]
        free = k - len(self.law_idx)
        if free == terms.a + m:
            self.multipliers = False
        elif free == terms.a:
            self.multipliers = True
        else:
            raise ModelDefinitionError(
                f"mode {mode.name!r}: {free} unknown forces for {terms.a} auxiliary speeds and {m} "
                "active constraints; declare one force symbol per auxiliary speed (and optionally "
                "one per constraint), or give the others a law")
        Layout.__init__(self, n, k, n_out, len(mode.guards), m)
        self._ind, self._dep = np.array(self.ind, dtype=int), np.array(self.dep, dtype=int)
        self._last = None
        self._T0 = np.zeros((n, len(self.ind)))
        self._T0[self._ind, np.arange(len(self.ind))] = 1.0

    def _solve(self, t, x, p, full=False):
        """Full speeds, qdot, independent accelerations, forces (and, if ``full``, the
        multipliers and the constraint residual) at x (eq 12-16).  The last full result is
        kept: the first stage of a step is where the monitors were just computed."""
        key = (t, x.tobytes(), p.tobytes())
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        out = self._solve_now(t, x, p, full)
        if full:
            self._last = (key, out)
        return out

    def _solve_now(self, t, x, p, full):
        terms, n, k = self.terms, self.n, self.terms.k
        q, ui = x[:n], x[n:]
        ind, dep = self._ind, self._dep
        tq = np.concatenate(([t], q, p))
        m = len(self.rows)
        u = np.zeros(n)
        u[ind] = ui
        T = self._T0.copy()
        g = np.zeros(n)
        if m:
            BC = np.array([r.BC(tq) for r in self.rows]).reshape(m, n + 1)
            B1 = BC[:, dep]
            try:
                B1i = np.linalg.inv(B1)
            except np.linalg.LinAlgError:
                raise ConstraintRankError(
                    f"dependent block of B for {self.names} is singular at t = {t:.9g} s") from None
            D = -B1i @ BC[:, ind]                                    # eq 12
            u[dep] = D @ ui - B1i @ BC[:, n]
            T[dep] = D
            tqu = np.concatenate(([t], q, u, p))
            g[dep] = -B1i @ np.array([r.gamma(tqu)[0] for r in self.rows])
        b, Au, Af, ba, Aau, Aaf, qdot = terms.evaluate(t, q, u, p)
        n_ind, a = len(ind), terms.a
        K = np.zeros((n_ind + k, n_ind + k))
        rhs = np.empty(n_ind + k)
        AT = Au @ T
        r0 = b + Au @ g
        K[:n_ind, :n_ind] = T.T @ AT                                     # eq 13-15
        K[:n_ind, n_ind:] = T.T @ Af
        rhs[:n_ind] = -(T.T @ r0)
        row = n_ind
        if a:
            K[row:row + a, :n_ind] = Aau @ T
            K[row:row + a, n_ind:] = Aaf
            rhs[row:row + a] = -(ba + Aau @ g)
            row += a
        if m and not self.multipliers:
            K[row:row + m, :n_ind] = AT[dep]
            K[row:row + m, n_ind:] = Af[dep]
            rhs[row:row + m] = -r0[dep]
            row += m
        if self.law_idx:
            lv = self.law_fn(np.concatenate(([t], q, u, p)))
            kl = len(self.law_idx)
            K[row:row + kl, n_ind:] = -lv[kl:].reshape(kl, k)
            K[row + np.arange(kl), n_ind + np.asarray(self.law_idx)] += 1.0
            rhs[row:row + kl] = lv[:kl]
        z = np.linalg.solve(K, rhs)
        udi, f = z[:n_ind], z[n_ind:]
        if not full:
            return u, qdot, udi, f, None, None
        lam = np.zeros(m)
        res, kap = 0.0, 1.0
        if m:
            if self.multipliers:
                lam = -B1i.T @ (r0 + AT @ udi + Af @ f)[dep]
            res = float(np.max(np.abs(BC[:, :n] @ u + BC[:, n])))
            for r in self.rows:
                if r.holonomic:
                    res = max(res, abs(float(r.phi(tq)[0])))
            if self.watch:
                kap = kappa(BC[:, :n], self.dep, B1i)
        return u, qdot, udi, f, lam, (res, kap)

    def rhs(self, t, x, p):
        u, qdot, udi, *_ = self._solve(t, x, p)
        return np.concatenate((qdot, udi))

    def monitors(self, t, x, p):
        u, qdot, udi, f, lam, res_kappa = self._solve(t, x, p, full=True)
        q = x[:self.n]
        names = self.terms.lam_names[self.mode_id]
        lv = [lam[self.names.index(c)] if c in self.names else 0.0 for c in names]
        og = self.terms.mon[self.mode_id](np.concatenate(([t], q, u, f, lv, p)))
        n_out = self.sl_outputs.stop - self.sl_outputs.start
        return np.concatenate((u, f, og[:n_out], res_kappa, og[n_out:], lam))

    def rk4(self, t, h, x, p):
        return rk4_stepwise(self, t, h, x, p)
