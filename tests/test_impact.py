"""Impact resolver (embed/hybrid/impact.py) against independent references.

References built here, not taken from the module: hand-derived formulas for a point mass hitting
the ground or a belt; for the double pendulum of gillespie2005 Example 3 the mass matrix and tip
Jacobian from the particle positions (finite differences), the stick impulse from the kinematics
alone (2 speeds, 2 contact rows), the sliding impulse from inv(M); the Delassus matrix by the
null-space method for persistent constraints; ANDY's impact map (wang2019 eq 19) and mueller's
projector form (eq 7) for plastic impacts.
"""

import numpy as np
import pytest

from embed.base.errors import ImpactError
from embed.hybrid.impact import plastic, resolve

LAWS = ("newton", "smith")


def sigma(a, b):
    """Smith's weighted mean of the slip directions (a|a| + b|b|) / (a^2 + b^2)."""
    return (a * abs(a) + b * abs(b)) / (a * a + b * b)


# ----------------------------------------------------------------- a ball hitting the ground
def ball(vt, vn, m=2.0):
    """Point mass in the plane, u = (x', y'), ground normal +y: Jn = (0, 1), Jt = (1, 0)."""
    return m * np.eye(2), np.array([0.0, 1.0]), np.array([1.0, 0.0]), np.array([vt, vn])


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("e", [0.0, 0.3, 0.9, 1.0])
def test_ball_frictionless_restitution(law, e):
    M, Jn, Jt, u = ball(1.3, -2.0)
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=0.0, mu_d=0.0)
    assert r.u_plus[1] == pytest.approx(-e * -2.0, abs=1e-14)        # v_n+ = -e v_n-
    assert r.u_plus[0] == pytest.approx(1.3, abs=1e-14) and r.Pt == 0.0
    assert r.Pn == pytest.approx(2.0 * (1 + e) * 2.0, rel=1e-14)      # m (1+e) |v_n-|
    assert r.T_plus - r.T_minus == pytest.approx(-(1 - e * e) * 0.5 * 2.0 * 4.0, abs=1e-12)
    assert not r.fallback and r.outcome == "slip"


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ball_sliding(law, sign):
    """|v_t-| > mu_s (1+e)|v_n-|: v_t+ = v_t- - sign(v_t-) mu_d (1+e)|v_n-| for both laws
    (Smith: the slip keeps its sign, so sigma = +-1)."""
    e, mu_s, mu_d, vn, vt = 0.6, 0.3, 0.25, -1.5, 2.0 * sign
    M, Jn, Jt, u = ball(vt, vn)
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=mu_s, mu_d=mu_d)
    assert r.outcome == "slip" and not r.fallback
    assert r.u_plus[0] == pytest.approx(vt - sign * mu_d * (1 + e) * abs(vn), rel=1e-13)
    assert r.u_plus[1] == pytest.approx(-e * vn, rel=1e-13)
    assert r.Pt == pytest.approx(-sign * mu_d * r.Pn, rel=1e-13)
    assert r.T_plus < r.T_minus


@pytest.mark.parametrize("law", LAWS)
def test_ball_sticking(law):
    """mu_s large: the contact point stops tangentially, P_t = -m v_t-."""
    e, vn, vt = 0.5, -1.0, 0.7
    M, Jn, Jt, u = ball(vt, vn)
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=0.8, mu_d=0.6)
    assert r.outcome == "stick" and not r.fallback
    assert abs(r.u_plus[0]) < 1e-15 and r.u_plus[1] == pytest.approx(-e * vn)
    assert r.Pt == pytest.approx(-2.0 * vt) and abs(r.Pt) <= 0.8 * r.Pn


def test_ball_newton_slip_would_reverse_so_sticks():
    """mu_s < mu_d (the stick test fails) and mu_d (1+e)|v_n-| > |v_t-|: sliding would reverse the
    slip within the impact, so the contact sticks instead."""
    e, vn, vt = 0.5, -1.0, 0.5
    M, Jn, Jt, u = ball(vt, vn)
    assert 0.1 * (1 + e) * abs(vn) < vt < 0.6 * (1 + e) * abs(vn)
    r = resolve(M, Jn, Jt, u, law="newton", e=e, mu_s=0.1, mu_d=0.6)
    assert r.outcome == "stick" and abs(r.u_plus[0]) < 1e-15 and r.Pt == pytest.approx(-2.0 * vt)


def test_ball_smith_reversing_slip_solves_its_cubic():
    """Smith's implicit law when the slip reverses (x = v_t+ < 0 < v = v_t-): with
    k = mu_d (1+e)|v_n-|, m (x - v) = -mu_d Pn (v^2 - x^2)/(v^2 + x^2) is the cubic
    x^3 - (v + k) x^2 + v^2 x + (k - v) v^2 = 0 (hand-derived), solved here by np.roots."""
    e, mu_s, mu_d, vn, v = 0.5, 0.05, 0.6, -1.0, 0.5
    k = mu_d * (1 + e) * abs(vn)
    roots = np.roots([1.0, -(v + k), v * v, (k - v) * v * v])
    neg = [z.real for z in roots if abs(z.imag) < 1e-12 and z.real < 0]
    assert len(neg) == 1
    M, Jn, Jt, u = ball(v, vn)
    r = resolve(M, Jn, Jt, u, law="smith", e=e, mu_s=mu_s, mu_d=mu_d)
    assert r.outcome == "slip" and r.u_plus[0] == pytest.approx(neg[0], rel=1e-12)
    assert r.Pt == pytest.approx(-mu_d * r.Pn * sigma(v, neg[0]), rel=1e-12)
    assert abs(r.Pt) < mu_d * r.Pn and r.T_plus < r.T_minus


# ----------------------------------------------------------------- a particle landing on a belt
@pytest.mark.parametrize("law", LAWS)
def test_belt_sticking_carries_the_particle(law):
    """Large mu_s: after the impact the particle moves with the belt (x'+ = v_b); the kinetic
    energy seen from the belt, 1/2 m |v - v_b e_x|^2, drops, while the lab energy may rise (the
    belt drives the particle): no energy gain of the impact."""
    m, vb, e = 2.0, 2.5, 0.4
    M, Jn, Jt, u = ball(0.0, -1.0, m)
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=5.0, mu_d=4.0, v_surface=vb)
    assert r.outcome == "stick" and not r.fallback
    assert r.u_plus[0] == pytest.approx(vb) and r.u_plus[1] == pytest.approx(e)
    rel = lambda v: 0.5 * m * ((v[0] - vb) ** 2 + v[1] ** 2)  # noqa: E731
    assert rel(r.u_plus) < rel(u)
    assert r.work == pytest.approx(rel(r.u_plus) - rel(u), rel=1e-12)
    assert r.T_plus > r.T_minus                                          # lab frame
    assert r.T_plus - r.T_minus == pytest.approx(r.work + r.Pt * vb, rel=1e-12)


@pytest.mark.parametrize("law", LAWS)
def test_belt_sliding(law):
    """Slip relative to the belt: v_t,rel+ = v_t,rel- + mu_d (1+e)|v_n-| (particle slower than
    the belt, friction pushes it forward)."""
    m, vb, e, mu_d = 1.0, 2.5, 0.2, 0.3
    M, Jn, Jt, u = ball(0.5, -1.2, m)
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=0.35, mu_d=mu_d, v_surface=vb)
    assert r.outcome == "slip" and r.vt_minus == pytest.approx(0.5 - vb)
    assert r.vt_plus == pytest.approx(0.5 - vb + mu_d * (1 + e) * 1.2, rel=1e-13)
    assert r.Pt == pytest.approx(mu_d * r.Pn) and r.work < 0


# ----------------------------------------------------------------- gillespie2005 Example 3
L1, L2, M1, M2, D = 1.0, 1.0, 1.0, 1.0, 1.2   # Table II


def positions(q):
    p1 = np.array([L1 * np.sin(q[0]), -L1 * np.cos(q[0])])
    return p1, p1 + np.array([L2 * np.sin(q[1]), -L2 * np.cos(q[1])])


def jacobians(q, h=1e-6):
    """d p1/dq, d p2/dq by central differences of the particle positions."""
    cols = [[(a - b) / (2 * h) for a, b in zip(positions(q + h * ei), positions(q - h * ei))]
            for ei in np.eye(2)]
    return [np.column_stack([c[i] for c in cols]) for i in range(2)]


def pendulum(q1, branch):
    """Configuration with the tip P2 on the belt (y = -d), M (the brief's formula), Jn, Jt."""
    q2 = branch * np.arccos((D - L1 * np.cos(q1)) / L2)
    c = M2 * L1 * L2 * np.cos(q1 - q2)
    M = np.array([[(M1 + M2) * L1 ** 2, c], [c, M2 * L2 ** 2]])
    J2 = jacobians(np.array([q1, q2]))[1]
    return np.array([q1, q2]), M, J2[1], J2[0]    # Jn: vertical row, Jt: horizontal row


def pendulum_states():
    for q1 in np.linspace(-1.1, 1.1, 12):
        for branch in (-1, 1):
            q, M, Jn, Jt = pendulum(q1, branch)
            for th in np.linspace(0, 2 * np.pi, 16, endpoint=False):
                u = 3.0 * np.array([np.cos(th), np.sin(th)])
                if Jn @ u < -0.05:
                    yield q, M, Jn, Jt, u


def test_pendulum_model():
    """The brief's M is sum m_i J_i^T J_i from the particle Jacobians; the tip is on the belt."""
    q, M, Jn, Jt = pendulum(-0.4, -1)
    J1, J2 = jacobians(q)
    np.testing.assert_allclose(M, M1 * J1.T @ J1 + M2 * J2.T @ J2, atol=1e-9)
    assert positions(q)[1][1] == pytest.approx(-D)
    np.testing.assert_allclose(Jn, [L1 * np.sin(q[0]), L2 * np.sin(q[1])], atol=1e-9)


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("vb", [0.0, 2.5])
def test_pendulum_impacts(law, vb):
    """Table II materials: momentum balance, v_n+ = -e v_n- (0 after a fallback), Pn >= 0,
    the stick outcome against the kinematics, a Newton slip against inv(M)."""
    Minv = np.linalg.inv
    seen = set()
    for e, mu_s, mu_d in ((0.9, 0.4978, 0.4), (0.0, 0.2489, 0.2)):
        for q, M, Jn, Jt, u in pendulum_states():
            r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=mu_s, mu_d=mu_d, v_surface=vb)
            seen.add((r.outcome, r.fallback))
            np.testing.assert_allclose(M @ (r.u_plus - u), Jn * r.Pn + Jt * r.Pt, atol=1e-12)
            e_used = 0.0 if r.fallback else e
            assert Jn @ r.u_plus == pytest.approx(-e_used * (Jn @ u), abs=1e-12)
            assert r.Pn >= 0 and r.work <= 1e-12
            if r.outcome == "stick":     # two rows, two speeds: u+ from the kinematics alone
                J = np.vstack((Jn, Jt))
                u_ref = np.linalg.solve(J, [-e_used * (Jn @ u), vb])
                np.testing.assert_allclose(r.u_plus, u_ref, atol=1e-12)
                assert abs(r.Pt) <= mu_s * r.Pn * (1 + 1e-12)
            elif law == "newton" or r.fallback:
                s = np.sign(r.vt_plus)        # friction opposes the final slip
                Pn = -(1 + e_used) * (Jn @ u) / (Jn @ Minv(M) @ (Jn - s * mu_d * Jt))
                assert r.Pn == pytest.approx(Pn, rel=1e-12)
                np.testing.assert_allclose(r.u_plus, u + Minv(M) @ (Jn - s * mu_d * Jt) * Pn,
                                           atol=1e-12)
            else:
                assert r.Pt == pytest.approx(-mu_d * r.Pn * sigma(r.vt_minus, r.vt_plus),
                                             rel=1e-9, abs=1e-12)
    assert {("stick", False), ("slip", False)} <= seen


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("vb", [0.0, 2.5])
def test_pendulum_fallback_when_restitution_gains_energy(law, vb):
    """Kane's paradox on gillespie2005's pendulum: a Newton-restitution stick (e = 0.9) inside the
    mu_s cone that gains energy, found from the kinematics alone; both laws use this stick inside
    the cone, so both must report it and fall back to a plastic impact."""
    e, mu_s, mu_d = 0.9, 0.4978, 0.4
    for q, M, Jn, Jt, u in pendulum_states():
        J = np.vstack((Jn, Jt))
        u_stick = np.linalg.solve(J, [-e * (Jn @ u), vb])
        Pn, Pt = np.linalg.solve(J.T, M @ (u_stick - u))
        gain = 0.5 * u_stick @ M @ u_stick - 0.5 * u @ M @ u - Pt * vb   # surface frame
        if Pn > 0 and abs(Pt) < mu_s * Pn and gain > 1e-3:
            break
    else:
        pytest.fail("no energy-gaining restitution case found on the grid")
    r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=mu_s, mu_d=mu_d, v_surface=vb)
    assert r.fallback and r.law_used == "plastic" and "gain energy" in r.reason
    assert r.work_law == pytest.approx(gain, rel=1e-9)
    assert r.work <= 0 and Jn @ r.u_plus == pytest.approx(0.0, abs=1e-12)
    if vb == 0.0:
        assert r.T_plus <= r.T_minus
    np.testing.assert_allclose(M @ (r.u_plus - u), Jn * r.Pn + Jt * r.Pt, atol=1e-12)


# ----------------------------------------------------------------- random property checks
def random_case(rng, singular):
    """Random SPD M (or singular M with persistent rows Bp removing its null space), contact rows,
    approaching speeds with Bp u- = 0."""
    n = int(rng.integers(2, 6))
    k = int(rng.integers(1, n - 1)) if singular and n > 2 else int(rng.integers(0, n - 1))
    if singular:
        k = max(k, 1)
        A = rng.normal(size=(n - 1, n))
        M = A.T @ A                       # rank n - 1
    else:
        A = rng.normal(size=(n, n))
        M = A.T @ A + 0.05 * np.eye(n)
    Bp = rng.normal(size=(k, n))
    N = np.linalg.svd(Bp)[2][k:].T        # null space of Bp
    u = N @ rng.normal(size=n - k)
    Jn, Jt = rng.normal(size=n), rng.normal(size=n)
    if Jn @ u > 0:
        u = -u
    return M, Jn, Jt, u, Bp, N


@pytest.mark.parametrize("law", LAWS)
def test_random_impacts(law):
    rng = np.random.default_rng(7)
    counts = {}
    for i in range(1500):
        M, Jn, Jt, u, Bp, N = random_case(rng, singular=i % 3 == 0)
        e, mu_d = rng.uniform(), rng.uniform()
        mu_s = mu_d + rng.uniform(0, 0.3)
        vs = 0.0 if i % 2 else rng.normal()
        # Delassus matrix by the null-space method, G = J N (N^T M N)^-1 N^T J^T
        J = np.vstack((Jn, Jt))
        G = J @ N @ np.linalg.solve(N.T @ M @ N, N.T @ J.T)
        if np.linalg.det(G) < 1e-8 * G[0, 0] * G[1, 1]:
            continue
        r = resolve(M, Jn, Jt, u, law=law, e=e, mu_s=mu_s, mu_d=mu_d, v_surface=vs,
                    Bp=Bp if len(Bp) else None)
        key = (r.outcome, r.law_used)
        counts[key] = counts.get(key, 0) + 1
        size = r.T_minus + r.T_plus + r.Pn * abs(r.vn_minus) + abs(r.Pt) * (
            abs(r.vt_minus) + abs(r.vt_plus) + abs(vs))
        # energy: never gained in the surface frame; with a fixed surface, T itself
        assert r.work <= 1e-9 * size
        assert r.T_plus - r.T_minus - r.Pt * vs == pytest.approx(r.work, abs=1e-9 * size)
        if vs == 0.0:
            assert r.T_plus <= r.T_minus + 1e-9 * size
        # impulse-momentum balance, persistent constraints, restitution
        np.testing.assert_allclose(M @ (r.u_plus - u), Jn * r.Pn + Jt * r.Pt + Bp.T @ r.Lambda,
                                   atol=1e-8 * (1 + np.abs(M).max() * np.abs(r.u_plus).max()))
        assert np.abs(Bp @ r.u_plus).max(initial=0) <= 1e-9 * (1 + np.abs(r.u_plus).max())
        e_used = 0.0 if r.fallback else e
        assert r.vn_plus == pytest.approx(-e_used * r.vn_minus, abs=1e-8 * (1 + abs(r.Pn)))
        assert r.Pn >= 0
        # friction
        if r.outcome == "stick":
            assert abs(r.vt_plus) <= 1e-8 * (1 + abs(r.vt_minus))
            assert abs(r.Pt) <= mu_s * r.Pn * (1 + 1e-9)
        elif r.law_used == "smith":
            smith = -mu_d * r.Pn * sigma(r.vt_minus, r.vt_plus)
            assert r.Pt == pytest.approx(smith, abs=1e-9 * r.Pn)
        else:
            assert abs(r.Pt) == pytest.approx(mu_d * r.Pn, rel=1e-12)
            assert r.Pt * r.vt_plus <= 0                                  # opposes the slip
        if r.fallback:
            # the law gained energy; the stick impulse (from G above) is where it does for Smith
            assert r.work_law > 0 and "gain energy" in r.reason
            a = -(1 + e) * r.vn_minus
            Pn_s, Pt_s = np.linalg.solve(G, [a, -r.vt_minus])
            stick_inside = Pn_s >= 0 and abs(Pt_s) <= mu_s * Pn_s
            if law == "smith":
                assert stick_inside      # Smith's sliding formula itself never gained energy
    assert counts.get(("stick", law), 0) > 50 and counts.get(("slip", law), 0) > 50
    assert sum(v for (_, used), v in counts.items() if used == "plastic") > 10


def test_unconsistent_speeds_are_projected():
    """u- violating Bp is projected momentum-consistently first: Bp u+ = 0, no energy gained."""
    rng = np.random.default_rng(3)
    M, Jn, Jt, _, Bp, _ = random_case(rng, singular=False)
    u = rng.normal(size=len(Jn))
    u = u if Jn @ u < 0 else -u
    r = resolve(M, Jn, Jt, u, law="newton", e=0.5, mu_s=0.5, mu_d=0.4, Bp=Bp)
    assert np.abs(Bp @ r.u_plus).max(initial=0) < 1e-12
    assert r.T_plus <= r.T_minus
    np.testing.assert_allclose(M @ (r.u_plus - u), Jn * r.Pn + Jt * r.Pt + Bp.T @ r.Lambda,
                               atol=1e-10)


def test_not_approaching_gives_no_impulse():
    M, Jn, Jt, u = ball(1.0, 0.5)
    r = resolve(M, Jn, Jt, u, law="smith", e=0.5, mu_s=0.5, mu_d=0.4)
    assert r.Pn == 0 and r.Pt == 0 and "not approaching" in r.reason
    np.testing.assert_array_equal(r.u_plus, u)


# ----------------------------------------------------------------- plastic impact map
def test_plastic_matches_andy_eq19():
    """wang2019 eq 19 (with the inverse its print omits): u+ = (I - M^-1 J^T S J) u-,
    S = (J M^-1 J^T)^-1."""
    rng = np.random.default_rng(11)
    A = rng.normal(size=(4, 4))
    M, J, u = A.T @ A + np.eye(4), rng.normal(size=(2, 4)), rng.normal(size=4)
    Mi = np.linalg.inv(M)
    S = np.linalg.inv(J @ Mi @ J.T)
    r = plastic(M, J, u)
    np.testing.assert_allclose(r.u_plus, (np.eye(4) - Mi @ J.T @ S @ J) @ u, atol=1e-12)
    np.testing.assert_allclose(r.P, -S @ J @ u, atol=1e-12)
    assert np.abs(J @ r.u_plus).max() < 1e-12 and r.T_plus <= r.T_minus


def test_plastic_with_persistent_matches_mueller_eq7():
    """mueller eq 7 with the projector N = I - M^-1 J1^T (J1 M^-1 J1^T)^-1 J1 (persistent J1 = Bp,
    activated J2 = J): the same velocity jump."""
    rng = np.random.default_rng(12)
    n = 5
    A = rng.normal(size=(n, n))
    M, J1, J2 = A.T @ A + np.eye(n), rng.normal(size=(2, n)), rng.normal(size=(1, n))
    u = np.linalg.svd(J1)[2][2:].T @ rng.normal(size=n - 2)     # J1 u- = 0
    Mi = np.linalg.inv(M)
    Nproj = np.eye(n) - Mi @ J1.T @ np.linalg.solve(J1 @ Mi @ J1.T, J1)
    K = np.block([[M, Nproj.T @ J2.T], [J2 @ Nproj, np.zeros((1, 1))]])
    du = np.linalg.solve(K, np.concatenate((np.zeros(n), -J2 @ u)))[:n]
    r = plastic(M, J2, u, Bp=J1)
    np.testing.assert_allclose(r.u_plus, u + du, atol=1e-12)
    np.testing.assert_allclose(M @ (r.u_plus - u), J2.T @ r.P + J1.T @ r.Lambda, atol=1e-12)


def test_plastic_stick_on_belt():
    M, Jn, Jt, u = ball(0.3, -1.0)
    r = plastic(M, np.vstack((Jn, Jt)), u, v_target=[0.0, 2.5])
    np.testing.assert_allclose(r.u_plus, [2.5, 0.0], atol=1e-14)
    np.testing.assert_allclose(r.P, [2.0, 2.0 * 2.2], atol=1e-13)


# ----------------------------------------------------------------- errors
def test_singular_systems_raise_impact_error():
    M, Jn, Jt, u = ball(0.3, -1.0)
    kw = dict(law="newton", e=0.5, mu_s=0.5, mu_d=0.4)
    with pytest.raises(ImpactError, match="M is singular"):
        resolve(np.diag([1.0, 0.0]), Jn, Jt, u, **kw)
    M3 = np.eye(3)
    with pytest.raises(ImpactError, match="rows of Bp are linearly dependent"):
        resolve(M3, [0, 1, 0], [1, 0, 0], [0, -1, 0], Bp=[[0, 0, 1], [0, 0, 2]], **kw)
    with pytest.raises(ImpactError, match="null space of Bp"):
        resolve(np.diag([1.0, 1.0, 0.0]), [0, 1, 0], [1, 0, 0], [0, -1, 0], Bp=[[1, 0, 0]], **kw)
    with pytest.raises(ImpactError, match="normal row Jn .* no effective inverse mass"):
        resolve(M3, [0, 1, 0], [1, 0, 0], [0, -1, 0], Bp=[[0, 1, 0]], **kw)
    with pytest.raises(ImpactError, match="Jn and Jt are dependent"):
        resolve(M, Jn, 2 * Jn, u, **kw)
    with pytest.raises(ImpactError, match="linearly dependent"):
        plastic(M, np.vstack((Jn, 3 * Jn)), u)
    with pytest.raises(ImpactError, match="unknown contact law"):
        resolve(M, Jn, Jt, u, law="poisson", e=0.5, mu_s=0.5, mu_d=0.4)
    with pytest.raises(ImpactError, match="e = 1.5"):
        resolve(M, Jn, Jt, u, law="smith", e=1.5, mu_s=0.5, mu_d=0.4)


def test_frictionless_allows_dependent_rows():
    M, Jn, _, u = ball(0.3, -1.0)
    r = resolve(M, Jn, 2 * Jn, u, law="newton", e=1.0, mu_s=0.0, mu_d=0.0)
    assert r.Pt == 0 and r.u_plus[1] == pytest.approx(1.0)


def test_painleve_configuration():
    """Sliding jams one way (Gnn - mu_d Gnt < 0, from M, Jn, Jt here): Newton sticks (the jammed
    side of the cone holds the stick impulse), Smith slides with the slip reversed; both obey
    their law and dissipate in the surface frame."""
    M, Jn, Jt = np.eye(2), np.array([1.0, 0.0]), np.array([2.0, 0.5])
    vs, e, mu_s, mu_d = -5.0, 0.5, 0.1, 0.6
    G = np.vstack((Jn, Jt)) @ np.vstack((Jn, Jt)).T
    assert G[0, 0] - mu_d * G[0, 1] < 0
    u = np.array([-1.0, 0.2])
    rn = resolve(M, Jn, Jt, u, law="newton", e=e, mu_s=mu_s, mu_d=mu_d, v_surface=vs)
    rs = resolve(M, Jn, Jt, u, law="smith", e=e, mu_s=mu_s, mu_d=mu_d, v_surface=vs)
    assert rn.outcome == "stick" and abs(rn.Pt) <= mu_d * rn.Pn and abs(rn.vt_plus) < 1e-12
    assert rs.outcome == "slip" and rs.vt_minus > 0 > rs.vt_plus
    assert rs.Pt == pytest.approx(-mu_d * rs.Pn * sigma(rs.vt_minus, rs.vt_plus), rel=1e-12)
    for r in (rn, rs):
        assert not r.fallback and r.work < 0
        assert r.vn_plus == pytest.approx(-e * r.vn_minus, rel=1e-12)
        np.testing.assert_allclose(M @ (r.u_plus - u), Jn * r.Pn + Jt * r.Pt, atol=1e-12)
