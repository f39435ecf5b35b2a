"""The formulations the papers set against embedding, as compiled modes of the full state.

gillespie2005 (Sec 2.3) compares its Design IV with the augmented multiplier system; this
module makes each alternative a first-class ``formulation`` of the same models, built on the
same compiled terms (``embed.modes.numeric``: NumericTerms, ConstraintTerms):

- ``multipliers``: [M B^T; B 0] [udot; lambda] = [f; -gamma] (gillespie2005 eq 9 with eq 8,
  wang2019 eq 10-12), with Baumgarte's stabilization B udot = -gamma - 2 alpha (B u + C)
  - beta^2 Phi when alpha, beta > 0;
- ``projection``: the same system, then after each step the explicit mass-weighted constraint
  correction of braun_goldfarb2012 (eq 3-4, without the energy term): q <- q - R^-1 C_q^+ Phi,
  u <- u - R^-1 C_v^+ (B u + C), with C = B R^-1 and M = R^T R;
- ``soft``: wang2019's soft constraints (eq 13-14), a spring-damper on the constraint error,
  generalized force -B^T (K_s Phi + K_d (B u + C)) (K_s = 0 for a nonholonomic constraint);
  a constraint on speeds without inertia alone (an Euler-parameter norm: no spring can hold
  it) stays rigid, as in wang2019 eq 15's mix of multipliers and soft constraints;
- ``embedding`` (the engine's own path), with or without the configuration projection of
  haug_pavesic2023 (eq 13-16).

The first three integrate the full state x = [q, u]: their compiled modes have ind = every
speed and dep = () (nx = 2n), follow ``embed.modes.modes.CompiledModeProtocol`` and report the
same monitor layout, so events, reset maps and impacts (applied on entry to a mode, whatever
the formulation) work unchanged.  The simulator still chooses a partition on entry (the
running state's ``dep``); these modes ignore it.

Where a mode's constraint forces are declared force symbols (not multipliers), the soft law
sets them through their generalized force projected on the constraint rows:
B (A_f f) = -B B^T s, exact for ideal (workless) constraint forces, whose generalized force
lies in the span of B^T.
"""

from __future__ import annotations

import math

import numpy as np

from ..base.errors import InputError, ModelDefinitionError
from ..base.record import Record
from .modes import Layout, rk4_stepwise

FORMULATIONS = ("embedding", "multipliers", "projection", "soft")


class Formulation(Record):
    """A formulation and its parameters (``Simulator(formulation=..., formulation_options=...)``).

    Parameters
    ----------
    name : str
        "embedding", "multipliers", "projection" or "soft" (``FORMULATIONS``).
    configuration_projection : bool
        ``embedding``: hold Phi(q) = 0 after each step (haug_pavesic2023 eq 13-16).
    baumgarte_alpha, baumgarte_beta : float
        ``multipliers``/``projection``: B udot = -gamma - 2 alpha (B u + C) - beta^2 Phi (1/s).
    projection_tol : float
        ``projection``: no correction while every |Phi| and |B u + C| is below this.
    projection_iterations : int
        ``projection``: corrections of q per step (1: braun_goldfarb2012's explicit one).
    projection_rcond : float
        ``projection``: relative cut-off of the pseudo-inverse (redundant or singular rows).
    soft_stiffness, soft_damping : float
        ``soft``: K_s and K_d of wang2019 eq 13-14 (one value for every constraint).
    """

    FIELDS = ("name", "configuration_projection", "baumgarte_alpha", "baumgarte_beta",
              "projection_tol", "projection_iterations", "projection_rcond", "soft_stiffness",
              "soft_damping")
    FROZEN = True

    def __init__(self, name: str = "embedding", configuration_projection: bool = True,
                 baumgarte_alpha: float = 0.0, baumgarte_beta: float = 0.0,
                 projection_tol: float = 1e-12, projection_iterations: int = 1,
                 projection_rcond: float = 1e-10, soft_stiffness: float = 1e5,
                 soft_damping: float = 600.0):
        self.__dict__.update(
            name=name, configuration_projection=configuration_projection,
            baumgarte_alpha=baumgarte_alpha, baumgarte_beta=baumgarte_beta,
            projection_tol=projection_tol, projection_iterations=projection_iterations,
            projection_rcond=projection_rcond, soft_stiffness=soft_stiffness,
            soft_damping=soft_damping)

    @property
    def full_state(self):
        """Whether x = [q, u] (every speed integrated, no embedding)."""
        return self.name != "embedding"

    @classmethod
    def of(cls, name="embedding", options=None):
        """The formulation ``name`` with ``options`` (dict of the fields above), checked.

        Raises
        ------
        InputError
            An unknown formulation or option, or a value out of range, named.
        """
        if isinstance(name, Formulation):
            return name
        if name not in FORMULATIONS:
            raise InputError(f"formulation {name!r} is unknown; use one of {FORMULATIONS}")
        options = dict(options or {})
        known = [f for f in cls.FIELDS if f != "name"]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise InputError(f"formulation options {unknown} are unknown; known: {sorted(known)}")
        vals = {}
        for k, v in options.items():
            if k == "configuration_projection":
                vals[k] = bool(v)
                continue
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise InputError(f"formulation option {k} = {v!r} is not a number") from None
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"formulation option {k} = {v!r} must be finite and >= 0")
            if k == "projection_iterations":
                if v < 1 or v != int(v):
                    raise InputError(f"formulation option {k} = {v!r} must be an integer >= 1")
                v = int(v)
            vals[k] = v
        return cls(name, **vals)


class FullStateMode(Layout):
    """One mode of a full-state formulation: x = [q, u], udot, forces and multipliers from one
    augmented linear system at each evaluation (``Formulation``; the same monitor layout as
    ``embed.modes.numeric.NumericMode``)."""

    def __init__(self, terms, mode, cset, n_out, key, rows, form: Formulation):
        """``rows``: the active constraints' ConstraintTerms, in the order of ``cset``."""
        self.terms, self.key, self.mode_id, self.form = terms, key, mode.id, form
        self.path = form.name
        n, k = terms.n, terms.k
        self.n, self.nx = n, 2 * n
        self.ind, self.dep = tuple(range(n)), ()
        self.rows = list(rows)
        self.names = [c.name for c in cset.items]
        self.hol = np.array([r.holonomic for r in self.rows], dtype=bool)
        m = self.m = len(self.rows)
        self.law_idx, self.law_fn = terms.laws[mode.id]
        self.free = [i for i in range(k) if i not in self.law_idx]
        n_free = len(self.free)
        if n_free == terms.a + m:
            self.multipliers = False      # the constraint forces are declared force symbols
        elif n_free == terms.a:
            self.multipliers = True
        else:
            raise ModelDefinitionError(
                f"mode {mode.name!r}: {n_free} unknown forces for {terms.a} auxiliary speeds and "
                f"{m} active constraints; declare one force symbol per auxiliary speed (and "
                "optionally one per constraint), or give the others a law")
        Layout.__init__(self, n, k, n_out, len(mode.guards), m)
        self._last = None

    # ------------------------------------------------------------ constraint rows
    def constraint_rows(self, t, q, u, p):
        """(B, C, gamma, Phi) of the active constraints at (t, q, u); Phi is 0 on nonholonomic
        rows."""
        n, m = self.n, self.m
        tq = np.concatenate(([t], q, p))
        tqu = np.concatenate(([t], q, u, p))
        BC = np.array([r.BC(tq) for r in self.rows]).reshape(m, n + 1)
        gam = np.array([r.gamma(tqu)[0] for r in self.rows])
        phi = np.array([r.phi(tq)[0] if r.holonomic else 0.0 for r in self.rows])
        return BC[:, :n], BC[:, n], gam, phi

    # ------------------------------------------------------------------- solve
    def _solve(self, t, x, p, full=False):
        key = (t, x.tobytes(), p.tobytes())
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        out = self._solve_now(t, x, p)
        if full:
            self._last = (key, out)
        return out

    def _solve_now(self, t, x, p):
        """qdot, udot, forces, multipliers and the largest residual at x = [q, u]: the augmented
        system with unknowns [udot (n), forces (k), lambda (m, if multipliers)]

            A_u udot + A_f f + B^T lambda = -b          (F + F* + B^T lambda = 0, n rows)
            A_au udot + A_af f = -b_a                   (auxiliary speeds, gillespie2005 Sec 5.4)
            f_l - L f = l0                              (the mode's laws)
            B udot = -gamma - 2 alpha (B u + C) - beta^2 Phi      (multipliers, projection)
            lambda = -s  or  B A_f f = -B B^T s,  s = K_s Phi + K_d (B u + C)   (soft)
        """
        terms, n, k, m, a = self.terms, self.n, self.terms.k, self.m, self.terms.a
        q, u = x[:n], x[n:]
        b, Au, Af, ba, Aau, Aaf, qdot = terms.evaluate(t, q, u, p)
        nl = m if self.multipliers else 0
        N = n + k + nl
        K = np.zeros((N, N))
        rhs = np.zeros(N)
        K[:n, :n], K[:n, n:n + k] = Au, Af
        rhs[:n] = -b
        row = n
        if a:
            K[row:row + a, :n], K[row:row + a, n:n + k] = Aau, Aaf
            rhs[row:row + a] = -ba
            row += a
        if self.law_idx:
            lv = self.law_fn(np.concatenate(([t], q, u, p)))
            kl = len(self.law_idx)
            K[row:row + kl, n:n + k] = -lv[kl:].reshape(kl, k)
            K[row + np.arange(kl), n + np.asarray(self.law_idx)] += 1.0
            rhs[row:row + kl] = lv[:kl]
            row += kl
        res = 0.0
        if m:
            B, C, gam, phi = self.constraint_rows(t, q, u, p)
            vel = B @ u + C
            res = max(float(np.max(np.abs(vel))), float(np.max(np.abs(phi))))
            if self.multipliers:
                K[:n, n + k:] = B.T
            form = self.form
            rigid = np.ones(m, dtype=bool)
            if form.name == "soft":
                # a constraint on speeds without inertia alone (an Euler-parameter norm) is a
                # kinematic normalization no spring can hold: it stays rigid
                massless = ~np.any(Au, axis=0)
                rigid = ~np.any(B[:, ~massless], axis=1)
                soft = ~rigid
                s = form.soft_stiffness * phi + form.soft_damping * vel      # wang2019 eq 13-14
                rs = row + np.flatnonzero(soft)
                if self.multipliers:
                    K[rs, n + k + np.flatnonzero(soft)] = 1.0
                    rhs[rs] = -s[soft]
                else:
                    Bs = B[soft]
                    K[np.ix_(rs, n + np.asarray(self.free))] = Bs @ Af[:, self.free]
                    rhs[rs] = -(Bs @ (Bs.T @ s[soft]))
            rr = row + np.flatnonzero(rigid)
            K[rr, :n] = B[rigid]
            rhs[rr] = (-gam - 2.0 * form.baumgarte_alpha * vel
                       - form.baumgarte_beta ** 2 * phi)[rigid]
        try:
            z = np.linalg.solve(K, rhs)
        except np.linalg.LinAlgError:
            if not (np.all(np.isfinite(K)) and np.all(np.isfinite(rhs))):
                z = np.full(N, np.nan)          # the state blew up: the simulator says where
            elif self.form.name == "soft":
                raise ModelDefinitionError(
                    f"soft constraints {self.names} in mode {self.key[0]}: the unconstrained "
                    f"system is singular at t = {t:.9g} s (a speed without inertia, which only a "
                    "rigid constraint can fix); use another formulation") from None
            # a singular configuration (redundant rows): the least-squares solution, as
            # braun_goldfarb2012 Sec 2.2.2 does with the pseudo-inverse
            else:
                z = np.linalg.lstsq(K, rhs, rcond=None)[0]
        lam = z[n + k:] if self.multipliers else np.zeros(m)
        return qdot, z[:n], z[n:n + k], lam, res

    # -------------------------------------------------------------- protocol
    def rhs(self, t, x, p):
        qdot, udot, *_ = self._solve(t, x, p)
        return np.concatenate((qdot, udot))

    def monitors(self, t, x, p):
        qdot, udot, f, lam, res = self._solve(t, x, p, full=True)
        n = self.n
        q, u = x[:n], x[n:]
        names = self.terms.lam_names[self.mode_id]
        lv = [lam[self.names.index(c)] if c in self.names else 0.0 for c in names]
        og = self.terms.mon[self.mode_id](np.concatenate(([t], q, u, f, lv, p)))
        n_out = self.sl_outputs.stop - self.sl_outputs.start
        return np.concatenate((u, f, og[:n_out], (res, 1.0), og[n_out:], lam))

    def rk4(self, t, h, x, p):
        return rk4_stepwise(self, t, h, x, p)

    # ------------------------------------------------- braun_goldfarb2012 eq 3-4
    def correct(self, t, x, p):
        """x = [q, u] corrected onto the constraints (braun_goldfarb2012 eq 3-4 after the step,
        the energy term left out): q along M^-1 B_h^T (Newton on Phi of the holonomic rows,
        ``projection_iterations`` times at most), then u by the mass-weighted projection
        u <- u - M^-1 B^T (B M^-1 B^T)^+ (B u + C).  Returns x itself if nothing exceeds
        ``projection_tol``."""
        form, n = self.form, self.n
        if not self.m:
            return x
        q, u = x[:n], x[n:]
        B, C, _, phi = self.constraint_rows(t, q, u, p)
        vel = B @ u + C
        tol = form.projection_tol
        if max(np.max(np.abs(phi)), np.max(np.abs(vel))) <= tol:
            return x
        terms, hol = self.terms, self.hol
        zero = np.zeros(n)
        M = terms.mass(t, q, u, p)
        if hol.any():
            for _ in range(form.projection_iterations):
                if np.max(np.abs(phi[hol])) <= tol:
                    break
                du = self._mass_projection(M, B[hol], phi[hol])
                # dq = W du (qdot = W u + X is linear in u)
                q = q - (terms.evaluate(t, q, du, p)[-1] - terms.evaluate(t, q, zero, p)[-1])
                B, C, _, phi = self.constraint_rows(t, q, u, p)
                M = terms.mass(t, q, u, p)
            vel = B @ u + C
        u = u - self._mass_projection(M, B, vel)
        return np.concatenate((q, u))

    def _mass_projection(self, M, B, r):
        """The smallest correction du in the metric of M with B du = r: M^-1 B^T (B M^-1 B^T)^+ r
        = R^-1 C^+ r (M = R^T R, C = B R^-1), from [M B^T; B 0] [du; y] = [0; r] by its
        pseudo-inverse, so M may be singular where B removes (the ball's Euler-parameter rate)
        and B may be redundant (a singular configuration)."""
        n, m = len(M), len(B)
        K = np.zeros((n + m, n + m))
        K[:n, :n], K[:n, n:], K[n:, :n] = M, B.T, B
        z = np.linalg.pinv(K, rcond=self.form.projection_rcond, hermitian=True) @ \
            np.concatenate((np.zeros(n), r))
        return z[:n]
