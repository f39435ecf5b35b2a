"""Impact resolver for a point contact (gillespie2005 Sec 5.3 and Example 3).

Pure numpy functions, no engine state: the reset maps of an automaton call them with the mass
matrix, the contact rows and the speeds at the instant of impact.  The configuration is held
constant during the impact and only the contact (and persistent-constraint) impulses act
(gillespie2005 Sec 5.3).  With generalized speeds u (n), mass matrix M, the contact's normal row Jn
and tangential row Jt, and persistent constraint rows Bp (Bp u = 0 held through the impact) the
impulse-momentum balance (Kane's generalized impulse and momentum) is

    M (u+ - u-) = Jn^T Pn + Jt^T Pt + Bp^T Lambda,      Bp u+ = 0,                        (I)

solved in its augmented form [M Bp^T; Bp 0] (mueller eq 7 without the inverse of M, so M may be
singular in directions Bp removes).  v_n = Jn u is the normal velocity of the contact point
(negative when approaching), v_t = Jt u - v_surface its tangential velocity relative to the
surface.  Writing u+ = u0 + W P for the contact impulses P = (Pn, Pt), the contact velocities are
v+ = v0 + G P with the 2x2 Delassus matrix G = J W (J = [Jn; Jt]); both laws are solved in these
two unknowns.

Energy.  Kelvin's theorem for (I): T+ - T- = Pn (vn- + vn+)/2 + Pt (vt- + vt+)/2 + Pt v_surface.
The first two terms, ``work``, are the work of the contact impulse on the motion relative to the
surface: for a free body, the change of kinetic energy seen from the surface; with
v_surface = 0, the change of T itself.  "An impact never increases kinetic energy" means
work <= 0: a moving belt may still speed the body up (it does positive work Pt v_surface), as
it should.  If a law gives work > 0 beyond round-off, the resolver falls back to a plastic
impact and records why.
"""

import functools
from dataclasses import dataclass

import numpy as np

from embed.base.errors import ImpactError
from embed.base.tolerances import IMPACT_ETOL as ETOL, IMPACT_RTOL as RTOL


@dataclass(frozen=True)
class ImpactResult:
    """Outcome of ``resolve``: speeds and impulses after the impact, and what happened."""

    u_plus: np.ndarray      # speeds after the impact
    Pn: float               # normal impulse (>= 0)
    Pt: float               # tangential impulse along Jt
    Lambda: np.ndarray      # impulses of the persistent constraints Bp
    outcome: str            # 'stick' (vt+ = 0) or 'slip'
    T_minus: float          # 1/2 u-^T M u-
    T_plus: float           # 1/2 u+^T M u+
    work: float             # contact work in the surface frame (<= 0), see the module docstring
    vn_minus: float
    vt_minus: float         # relative to the surface
    vn_plus: float
    vt_plus: float
    law: str                # law asked for
    law_used: str           # 'newton', 'smith' or 'plastic' (the fallback)
    fallback: bool
    reason: str             # why the fallback (or why no impulse), else ''
    work_law: float         # contact work the asked-for law would have done


@dataclass(frozen=True)
class PlasticResult:
    """Outcome of ``plastic``: speeds after, impulses P of the rows of J, Lambda of Bp."""

    u_plus: np.ndarray
    P: np.ndarray
    Lambda: np.ndarray
    T_minus: float
    T_plus: float


class _Jam(Exception):
    """No Coulomb-consistent sliding impulse (Painleve-type jam, Gnn - s mu Gnt <= 0)."""


# ------------------------------------------------------------------ linear algebra
def _kkt(M, A, top, bottom, rows="Bp"):
    """Solve [M A^T; A 0] [x; y] = [top; bottom]; return x and Lambda = -y (M x = top + A^T Lambda).

    The rows of A are scaled to the size of M so that the singularity test is unit-free.
    """
    n, k = M.shape[0], A.shape[0]
    if not np.any(M):
        raise ImpactError("the mass matrix M is zero")
    norms = np.linalg.norm(A, axis=1)
    if k and np.min(norms) == 0.0:
        raise ImpactError(f"row {int(np.argmin(norms))} of {rows} is zero: drop it")
    c = np.max(np.abs(M)) / norms
    As = A * c[:, None]
    K = np.zeros((n + k, n + k))
    K[:n, :n], K[:n, n:], K[n:, :n] = M, As.T, As
    s = np.linalg.svd(K, compute_uv=False)
    if not s[0] > 0 or s[-1] <= RTOL * s[0]:
        if k and np.linalg.matrix_rank(As, tol=RTOL * np.max(np.abs(As))) < k:
            what = f"the rows of {rows} are linearly dependent (redundant constraints)"
        elif k:
            what = (f"M is singular on the null space of {rows}: a direction the constraints "
                    "leave free has no inertia")
        else:
            what = "the mass matrix M is singular and no persistent rows Bp remove its null space"
        raise ImpactError(f"impact system [M {rows}^T; {rows} 0] is singular "
                          f"(condition {s[0] / max(s[-1], 1e-300):.3g}): {what}")
    z = np.linalg.solve(K, np.concatenate((top, bottom * (c[:, None] if bottom.ndim == 2 else c))))
    return z[:n], -(z[n:] * (c[:, None] if z.ndim == 2 else c))


def _arrays(M, rows, u_minus, Bp):
    M = np.asarray(M, dtype=float)
    u = np.asarray(u_minus, dtype=float)
    n = u.shape[0] if u.ndim == 1 else -1
    if M.shape != (n, n):
        raise ImpactError(f"M must be {n}x{n} for {n} speeds u_minus, got shape {M.shape}")
    Bp = np.zeros((0, n)) if Bp is None else np.atleast_2d(np.asarray(Bp, dtype=float))
    if Bp.size == 0:
        Bp = np.zeros((0, n))
    rows = [(name, np.asarray(r, dtype=float)) for name, r in rows]
    for name, a in (("Bp", Bp), *rows):
        if a.ndim not in (1, 2) or a.shape[-1] != n:
            raise ImpactError(f"{name} has shape {a.shape}, expected {n} columns (one per speed)")
    for name, a in (("M", M), ("u_minus", u), ("Bp", Bp), *rows):
        if not np.all(np.isfinite(a)):
            raise ImpactError(f"{name} is not finite: {a}")
    return M, u, Bp


# ------------------------------------------------------------------ contact laws in (Pn, Pt)
def _stick(G, a, vt0):
    """Impulse with vn+ = -e vn- (a = -(1+e) vn-) and vt+ = 0: G P = [a; -vt0]."""
    (Gnn, Gnt), (_, Gtt) = G.tolist()
    det = Gnn * Gtt - Gnt * Gnt
    return (Gtt * a + Gnt * vt0) / det, (-Gnn * vt0 - Gnt * a) / det


def _inside(Pn, Pt, mu):
    return Pn >= 0 and abs(Pt) <= mu * Pn * (1 + RTOL) + RTOL * abs(Pt)


def _stick_first(slide):
    """A contact law (G, vn-, vt-, e, mu_s, mu_d) -> (Pn, Pt, outcome) from its sliding impulse
    ``slide(G, a, vt-, mu_d, Pn_stick, Pt_stick)``: both laws begin alike, with the normal
    impulse alone when there is no friction, and sticking when the stick impulse lies in
    the mu_s cone."""
    @functools.wraps(slide)
    def law(G, vn0, vt0, e, mu_s, mu_d):
        a = -(1 + e) * vn0
        if mu_s == 0 and mu_d == 0:
            return a / float(G[0, 0]), 0.0, None
        Pn_s, Pt_s = _stick(G, a, vt0)
        if _inside(Pn_s, Pt_s, mu_s):
            return Pn_s, Pt_s, "stick"
        return slide(G, a, vt0, mu_d, Pn_s, Pt_s)
    return law


@_stick_first
def _newton(G, a, vt0, mu_d, Pn_s, Pt_s):
    """Newton restitution vn+ = -e vn- with Coulomb friction; returns (Pn, Pt, outcome).

    Stick (vt+ = 0) when its impulse lies in the cone |Pt| <= mu_s Pn.  Otherwise slide against
    the slip, Pt = -s mu_d Pn with s = sign(vt-), so Pn = a / (Gnn - s mu_d Gnt).  If that slip
    would reverse during the impact (s vt+ <= 0): the contact sticks when the stick impulse lies
    in the mu_d cone (the slip stops; with Gnt = 0 and mu_s >= mu_d this never arises, the stick
    test came first); else the normal impulse itself reverses the slip through the inertial
    coupling Gnt and friction opposes the final slip, s -> -s (the only consistent direction
    then: along the line vn+ = -e vn-, vt+ grows monotonically with Pt).  A consistent answer
    always exists: where sliding jams (Gnn - s mu_d Gnt <= 0, Painleve) the whole jammed side of
    the line lies in the cone and holds the stick impulse, so ``_Jam`` only guards round-off.
    """
    (Gnn, Gnt), (_, Gtt) = G.tolist()
    s = np.sign(vt0) or np.sign(vt0 + Gnt * a / Gnn) or 1.0
    for sd in (s, -s):
        d = Gnn - sd * mu_d * Gnt
        if d > 0:
            Pn = a / d
            Pt = -sd * mu_d * Pn
            if sd * (vt0 + Gnt * Pn + Gtt * Pt) > 0:
                return Pn, Pt, "slip"
        if sd == s and _inside(Pn_s, Pt_s, mu_d):
            return Pn_s, Pt_s, "stick"
    raise _Jam(f"no Coulomb-consistent impulse: sliding jams (Painleve), Gnn = {Gnn:.6g}, "
               f"Gnt = {Gnt:.6g}, mu_d = {mu_d:.6g}")


def _sigma(a, b):
    """Smith's weighted mean of the slip directions, (a|a| + b|b|) / (a^2 + b^2), in [-1, 1]."""
    d = a * a + b * b
    return (a * abs(a) + b * abs(b)) / d if d > 0 else 0.0


@_stick_first
def _smith(G, a, vt0, mu_d, Pn_s, Pt_s):
    """Smith's law (Smith 1991, eq 15, as gillespie2005 Example 3 uses it); (Pn, Pt, outcome).

    Normal velocity ratio vn+ = -e vn-.  If the stick impulse lies in the cone |Pt| <= mu_s Pn the
    contact sticks (gillespie2005 Sec 5.3: rebound along the normal inside the friction cone).
    Otherwise the tangential impulse is mu_d |Pn| times the |v_t|-weighted average of the
    approach and separation slip directions,

        Pt = -mu_d |Pn| (vt- |vt-| + vt+ |vt+|) / (vt-^2 + vt+^2),

    the form the literature cites as Smith's eq 15 (the paper itself is not in our references,
    so this is that citation, not a transcription).  It is implicit in vt+.  Along the line
    vn+ = -e vn-, Pn(Pt) = (a - Gnt Pt)/Gnn and vt+(Pt) = vt- + Gtn Pn + Gtt Pt, and
    F(Pt) = Pt + mu_d Pn(Pt) sigma(vt-, vt+(Pt)) is >= 0 where Pt = mu_d Pn and <= 0 where
    Pt = -mu_d Pn (|sigma| <= 1), so a root lies inside the cone; it is found by bisection
    (a side of the cone that jams is unbounded: F -> +-inf there, bracketed by doubling).
    """
    (Gnn, Gnt), (_, Gtt) = G.tolist()
    mu = mu_d

    def F(Pt):
        Pn = (a - Gnt * Pt) / Gnn
        return Pt + mu * Pn * _sigma(vt0, vt0 + Gnt * Pn + Gtt * Pt)

    scale = mu * a / Gnn
    ends = []
    for sd in (1.0, -1.0):
        d = Gnn + sd * mu * Gnt
        if d > 0:
            ends.append(sd * mu * a / d)
        else:
            x = sd * max(scale, RTOL)
            for _ in range(200):
                if sd * F(x) >= 0:
                    break
                x *= 2.0
            else:
                raise ImpactError("Smith's law: no tangential impulse found on the jammed side "
                                  f"of the friction cone (Gnn = {Gnn:.6g}, Gnt = {Gnt:.6g})")
            ends.append(x)
    hi, lo = ends
    tol = 1e-15 * (hi - lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if hi - lo <= tol or not lo < mid < hi:
            break
        if F(mid) > 0:
            hi = mid
        else:
            lo = mid
    Pt = 0.5 * (lo + hi)
    return (a - Gnt * Pt) / Gnn, Pt, None


LAWS = {"newton": _newton, "smith": _smith}


# ------------------------------------------------------------------ public functions
def resolve(M, Jn, Jt, u_minus, *, law, e, mu_s, mu_d, v_surface=0.0, Bp=None):
    """Resolve a point impact with ``law`` ('newton' or 'smith'); returns an ``ImpactResult``.

    Solves the impulse-momentum balance (I) of the module docstring with the contact law, keeping
    Bp u+ = 0.  If u_minus violates Bp it is first projected momentum-consistently (mueller eq 7,
    that impulse is part of Lambda).  A contact that is not approaching (vn- >= 0) gets no impulse
    (reason says so).  If the law gains energy in the surface frame (work > 0), or (round-off
    only, see ``_newton``) finds no consistent impulse, the impact is redone plastic:
    Newton-Coulomb with e = 0, which never gains (the work is convex along vn+ = 0, <= 0 at
    Pt = 0 and at the stick impulse, and the slide lies between them); fallback and reason
    record it.  mu_s = mu_d = 0 is a frictionless contact (Pt = 0; Jn and Jt may then be
    dependent).  Jn and Jt may be given as (n,) or (1, n).

    Raises ImpactError when [M Bp^T; Bp 0] is singular, when the contact normal has no effective
    inverse mass (Jn is zero or in the span of Bp), or when friction acts and Jn, Jt are dependent
    in the directions Bp leaves free (the 2x2 Delassus matrix G is singular).
    """
    if law not in LAWS:
        raise ImpactError(f"unknown contact law {law!r}: use 'newton' or 'smith'")
    for name, val, hi in (("e", e, 1.0), ("mu_s", mu_s, np.inf), ("mu_d", mu_d, np.inf)):
        if not (np.isfinite(val) and 0 <= val <= hi):
            raise ImpactError(f"{name} = {val!r} must be finite and in [0, {hi}]")
    if not np.isfinite(v_surface):
        raise ImpactError(f"v_surface = {v_surface!r} is not finite")
    Jn, Jt = np.ravel(np.asarray(Jn, dtype=float)), np.ravel(np.asarray(Jt, dtype=float))
    M, u, Bp = _arrays(M, (("Jn", Jn), ("Jt", Jt)), u_minus, Bp)
    n = u.shape[0]
    # u0: approach speeds with Bp u0 = 0; W = [wn wt]: speed change per unit (Pn, Pt)
    X, L = _kkt(M, Bp, np.column_stack((np.zeros(n), Jn, Jt)),
                np.column_stack((-Bp @ u, np.zeros((len(Bp), 2)))))
    u0, W, L0, LW = u + X[:, 0], X[:, 1:], L[:, 0], L[:, 1:]
    J = np.vstack((Jn, Jt))
    G = J @ W
    G = 0.5 * (G + G.T)
    vn0, vt0 = float(Jn @ u0), float(Jt @ u0 - v_surface)
    T_minus = 0.5 * float(u @ M @ u)
    vtol = RTOL * (abs(vn0) + abs(vt0) + abs(v_surface)) + 1e-300

    def result(P, outcome, law_used, reason="", work_law=None):
        u_plus = u0 + W @ P
        vn, vt = float(Jn @ u_plus), float(Jt @ u_plus - v_surface)
        work = float(P[0] * (vn0 + vn) + P[1] * (vt0 + vt)) / 2
        if outcome is None:
            outcome = "stick" if abs(vt) <= vtol else "slip"
        return ImpactResult(u_plus, float(P[0]), float(P[1]), L0 + LW @ P, outcome, T_minus,
                            0.5 * float(u_plus @ M @ u_plus), work, vn0, vt0, vn, vt, law,
                            law_used, law_used != law, reason,
                            work if work_law is None else work_law)

    if not G[0, 0] > RTOL * np.linalg.norm(Jn) * np.linalg.norm(W[:, 0]):
        raise ImpactError(f"the contact normal row Jn = {Jn} has no effective inverse mass "
                          f"(Gnn = Jn W_n = {G[0, 0]:.3g}): it is zero or lies in the span of Bp")
    if vn0 >= 0:
        return result(np.zeros(2), None, law, f"not approaching (vn- = {vn0:.3g} >= 0): no impulse")
    if (mu_s or mu_d) and not np.linalg.det(G) > RTOL * G[0, 0] * G[1, 1]:
        raise ImpactError(f"the contact rows Jn and Jt are dependent in the directions Bp leaves "
                          f"free (Delassus matrix G = {G.tolist()} is singular): friction "
                          "cannot act independently; use mu_s = mu_d = 0 or plastic()")
    try:
        Pn, Pt, outcome = LAWS[law](G, vn0, vt0, e, mu_s, mu_d)
    except _Jam as jam:
        why, work_law = f"{law} law: {jam}", np.nan
    else:
        r = result(np.array([Pn, Pt]), outcome, law)
        scale = r.Pn * abs(vn0) + abs(r.Pt) * (abs(vt0) + abs(r.vt_plus)) + 1e-300
        if r.work <= ETOL * scale:
            return r
        why = (f"{law} law would gain energy (contact work {r.work:.6g} J > 0 in the surface "
               "frame)")
        work_law = r.work
    try:
        Pn, Pt, outcome = _newton(G, vn0, vt0, 0.0, mu_s, mu_d)
    except _Jam as jam:
        raise ImpactError(f"{why}, and the plastic impact too: {jam}") from None
    return result(np.array([Pn, Pt]), outcome, "plastic", f"{why}; plastic impact used", work_law)


def plastic(M, J, u_minus, Bp=None, v_target=None):
    """Plastic impact: every row of J gets velocity v_target (default 0) after the impact.

    M (u+ - u-) = J^T P + Bp^T Lambda, J u+ = v_target, Bp u+ = 0: mueller eq 7 in its
    augmented form, ANDY's impact map (wang2019 eq 19) when Bp is empty.  Returns a
    ``PlasticResult`` with the impulses P (one per row of J) and Lambda.  Raises ImpactError
    when the rows of [J; Bp] are dependent or M is singular on their null space.
    """
    J = np.atleast_2d(np.asarray(J, dtype=float))
    M, u, Bp = _arrays(M, (("J", J),), u_minus, Bp)
    m = J.shape[0]
    w = np.zeros(m) if v_target is None else np.broadcast_to(np.asarray(v_target, float), (m,))
    A = np.vstack((J, Bp))
    du, lam = _kkt(M, A, np.zeros(u.shape[0]), np.concatenate((w - J @ u, -Bp @ u)),
                   rows="[J; Bp]")
    u_plus = u + du
    return PlasticResult(u_plus, lam[:m], lam[m:], 0.5 * float(u @ M @ u),
                         0.5 * float(u_plus @ M @ u_plus))
