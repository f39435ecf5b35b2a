"""The configuration projection: dependent coordinates held on Phi(q) = 0 with a held chart.

haug_pavesic2023 eq 13-16: Newton iteration q <- q - U B Phi(q) along the chart's normal
directions U = Phi_q^T, with the held inverse B = (Phi_q U)^-1 refreshed by eq 16; a new
chart is taken when the iteration stops contracting or the held inverse drifts.  Only q
changes: the dependent speeds follow from the embedding (gillespie2005 eq 12) at the new q.
See docs/design.md, "Where each paper fits".

The chart ``(U, B)`` is part of the running state (``embed.hybrid.state``): it is replaced, never
changed in place, so a checkpoint may keep a reference to it.  ``on_manifold`` reaches the
manifold from any distance (a switch rehearsed at ``Simulator.prepare``).
"""

from __future__ import annotations

import math

import numpy as np

from ..base.errors import ConstraintRankError, IntegrationError
from ..base.tolerances import PHI_TOL

MAX_ITERATIONS = 12


def max_abs(a):
    """max |a_i| of a short vector in plain floats (numpy's dispatch is costly where an event
    step finds the caches cold, docs/design.md, facts; the comparisons themselves are
    nothing)."""
    return max(map(abs, a.tolist()), default=0.0)


class Projection:
    """Holds the active holonomic constraints on their manifold (haug_pavesic2023 eq 13-16).

    One object per entered constraint set: it knows the constraints, not the chart, which is
    running state (``embed.hybrid.state.RunState.chart``), passed in and handed back.

    Parameters
    ----------
    holonomic : list of ConstraintTerms
        The active holonomic constraints' compiled terms ([Phi, Phi_q] by ``phi``).
    """

    __slots__ = ("holonomic",)

    def __init__(self, holonomic=()):
        self.holonomic = list(holonomic)

    def phi(self, tq):
        """(Phi, Phi_q) of the holonomic constraints at tq = [t, q..., p...]."""
        v = np.array([ct.phi(tq) for ct in self.holonomic])
        return v[:, 0], v[:, 1:]

    def project(self, t, q, p, chart):
        """Dependent coordinates from Phi(q) = 0 (haug_pavesic2023 eq 13-16).

        Parameters
        ----------
        t : float
            Time (s).
        q : ndarray
            Generalized coordinates (not changed).
        p : ndarray
            The parameter vector.
        chart : tuple (U, B) or None
            The held chart; None: taken when a correction first needs one.

        Returns
        -------
        (q, chart, recharts)
            ``q`` itself when |Phi| <= PHI_TOL already, else the projected coordinates; the
            chart now held; how many new charts were taken.

        Raises
        ------
        IntegrationError
            Newton did not converge in MAX_ITERATIONS (the configuration left the manifold).
        ConstraintRankError
            Phi_q is singular where a new chart is needed.
        """
        tq = np.concatenate(([t], q, p))
        r, G = self.phi(tq)
        if max_abs(r) <= PHI_TOL:
            return q, chart, 0
        recharts = 0
        if chart is None:
            chart = self.rechart(G, t)
            recharts += 1
        n = len(q)
        it = 0
        while not max_abs(r) <= PHI_TOL:           # (a NaN residual is not converged)
            if not all(map(math.isfinite, r.tolist())):
                raise IntegrationError(
                    f"configuration constraints {[ct.name for ct in self.holonomic]} are not "
                    f"finite at t = {t:.9g} s after {it} Newton steps from the configuration "
                    "given: no configuration satisfies them near it (a discrete variable they "
                    "hold, or a reset's coordinates, inconsistent with the others?)")
            if it == MAX_ITERATIONS:
                raise IntegrationError(
                    f"configuration constraints {[ct.name for ct in self.holonomic]} not "
                    f"satisfied (|Phi| = {max_abs(r):.3g}) at t = {t:.9g} s; the configuration "
                    "left the constraint manifold: reduce h_max")
            q = corrected(q, chart, r)
            tq[1:1 + n] = q
            r_new, G = self.phi(tq)
            if it >= 2 and max_abs(r_new) > 0.1 * max_abs(r):
                chart = self.rechart(G, t)
                recharts += 1
            r = r_new
            it += 1
        chart, drift = refreshed(chart, G)
        if drift > 0.25:
            chart = self.rechart(G, t)
            recharts += 1
        return q, chart, recharts

    def rechart(self, G, t):
        """A new chart at Phi_q = G: (U, B) with U = G^T, B = (G U)^-1 (haug_pavesic2023 eq 14)."""
        try:
            return chart_at(G)
        except np.linalg.LinAlgError:
            raise ConstraintRankError(
                f"configuration constraints {[ct.name for ct in self.holonomic]} have a "
                f"singular Jacobian at t = {t:.9g} s") from None


def chart_at(G):
    """(U, B) with U = G^T, B = (G U)^-1 (haug_pavesic2023 eq 14; LAPACK dgesv, numpy's: bit
    for bit scipy's, without importing scipy); LinAlgError where G U is singular."""
    U = G.T.copy()
    return (U, np.linalg.solve(G @ U, np.eye(len(G))))


def corrected(q, chart, r):
    """One Newton step along the chart: q - U B Phi (haug_pavesic2023 eq 13)."""
    U, Bh = chart
    return q - U @ (Bh @ r)


def refreshed(chart, G):
    """The chart with its inverse refreshed at Phi_q = G, B <- 2B - B G U B (haug_pavesic2023
    eq 16), and how far it is from inverting G U: max |G U B - I|."""
    U, Bh = chart
    GU = G @ U
    Bh = 2 * Bh - Bh @ GU @ Bh
    drift = GU @ Bh                 # minus the identity (np.eye: 0.16 ms where cold)
    drift.flat[::len(G) + 1] -= 1.0
    return (U, Bh), max_abs(drift.ravel())


def exercise(m, n):
    """The projection's linear algebra once with m constraints on n coordinates (dummy
    values, nothing kept): ``warmup.warm_up``'s, so that the first chart a real-time run takes
    (a fence's, seconds into it) does not run BLAS kernels never run before (traced: two
    pages of OpenBLAS's small dgemm faulted in at the first chart on a fence, a step of 0.7-0.9
    ms of CPU and 0.4-0.8 ms waiting for them where it takes 0.35 ms)."""
    G = np.ones((m, n + 1))[:, 1:]          # as ``Projection.phi`` gives it: a view
    G += np.eye(m, n)
    chart = chart_at(G)
    corrected(np.zeros(n), chart, np.ones(m))
    refreshed(chart, G)


def on_manifold(projection, t, q, p, iterations=100, reach=0.5):
    """A configuration with Phi(q) = 0 for the holonomic constraints of ``projection`` (a
    ``Projection``), from q by minimum-norm Newton steps (Phi_q^+ Phi) of at most ``reach``
    in any coordinate: from any distance, unlike the held chart's correction
    (``Projection.project``); None if they do not get there."""
    if not projection.holonomic:
        return q
    tq = np.concatenate(([t], q, p))
    n = len(q)
    for _ in range(iterations):
        r, G = projection.phi(tq)
        if not np.all(np.isfinite(r)):
            return None
        if max_abs(r) <= PHI_TOL:
            return tq[1:1 + n].copy()
        dq = np.linalg.lstsq(G, r, rcond=None)[0]
        tq[1:1 + n] -= dq * min(1.0, reach / max(max_abs(dq), reach))
    return None


def nearest_on_manifold(projection, t, q0, p, iterations=60):
    """The configuration of Phi(q, t) = 0 nearest to q0 in the Euclidean norm of the
    coordinates (least squares): min |q - q0| subject to Phi(q) = 0, by the Gauss-Newton
    iteration of its optimality conditions (q - q0 = Phi_q^T y, Phi(q) = 0): with G = Phi_q
    and r = Phi at q_k, q_{k+1} = q0 + G^T (G G^T)^-1 (G (q_k - q0) - r).  The consistent
    start (docs/design.md, "Consistent start"); unlike the projection of the running state
    (``Projection.project``, a held chart), its result is the nearest point, not merely one
    on the manifold.  Returns q0 itself when |Phi(q0)| <= PHI_TOL.

    Raises
    ------
    ConstraintRankError
        Phi_q is singular on the way.
    IntegrationError
        No convergence in ``iterations`` (q0 too far from the manifold).
    """
    if not projection.holonomic:
        return q0
    n = len(q0)
    tq = np.concatenate(([t], q0, p))
    r, G = projection.phi(tq)
    if max_abs(r) <= PHI_TOL:
        return q0
    q = np.array(q0, dtype=float)
    for _ in range(iterations):
        try:        # LAPACK dgesv (numpy's: bit for bit scipy's, without importing scipy)
            y = np.linalg.solve(G @ G.T, G @ (q - q0) - r)
        except np.linalg.LinAlgError:
            raise ConstraintRankError(
                f"configuration constraints {[ct.name for ct in projection.holonomic]} have a "
                f"singular Jacobian at t = {t:.9g} s near the start configuration") from None
        q_new = q0 + G.T @ y
        step = max_abs(q_new - q)
        q = q_new
        tq[1:1 + n] = q
        r, G = projection.phi(tq)
        if max_abs(r) <= PHI_TOL and step <= 1e-14 * max(1.0, max_abs(q)):
            return q
    raise IntegrationError(
        f"the start configuration is too far from the constraints "
        f"{[ct.name for ct in projection.holonomic]} (|Phi| = {max_abs(r):.3g} after "
        f"{iterations} iterations at t = {t:.9g} s); start nearer to them")
