"""The symmetric top of haug_pavesic2023 Sec 7.1 through the engine, against independent references.

References built here, not taken from the scenario: the orientation matrix A(p) of eq 36 and
G(p) of the Appendix in numpy; the angular velocity from A^T dA/dt; the Lagrange equations of
T = 1/2 m rdot^2 + 2 pdot^T G^T J' G pdot, V = m g z with the paper's Phi(q) and multipliers
([M Phi_q^T; Phi_q 0], sympy derivatives, numpy solve); the first integrals of the top on
its bar (energy, spin about the symmetry axis, vertical angular momentum about O); and the
growth rate of the tilt from the linearized equations about the sleeping top.
"""

import numpy as np
import pytest
import sympy as sp

from embed import ModeLibrary, Simulator
from scenarios import top

VARIANTS = ("omega", "qdot")
_SC = {}


def scenario(speeds):
    if speeds not in _SC:
        _SC[speeds] = top.build(speeds)
    return _SC[speeds]


# ------------------------------------------------------------ the paper's Euler parameters
def A_of(p):
    """eq 36: A = (e0^2 - e^T e) I + 2 e e^T + 2 e0 e~ (body -> fixed)."""
    e0, e = p[0], np.asarray(p[1:])
    et = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
    return (e0 ** 2 - e @ e) * np.eye(3) + 2 * np.outer(e, e) + 2 * e0 * et


def G_of(p):
    """G(p) = [-e, -e~ + e0 I] (Appendix)."""
    e0, e1, e2, e3 = p
    return np.array([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])


def omega_from_A(p, pd):
    """Body angular velocity from omega'~ = A^T dA/dt; A is quadratic in p, so its derivative
    along pd is exactly (A(p + pd) - A(p - pd)) / 2."""
    W = A_of(p).T @ (A_of(p + pd) - A_of(p - pd)) / 2
    assert np.allclose(W, -W.T, atol=1e-12 * max(1.0, np.abs(W).max()))
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def speeds_of(speeds, q, qd):
    """The scenario's generalized speeds for (q, qdot)."""
    if speeds == "qdot":
        return np.array(qd, dtype=float)
    p, pd = q[3:], qd[3:]
    return np.concatenate((qd[:3], 2 * G_of(p) @ pd, [p @ pd]))


def speed_rates(speeds, q, qd, qdd):
    """Time derivatives of the speeds from qddot (G(pdot) pdot = 0)."""
    if speeds == "qdot":
        return np.array(qdd, dtype=float)
    p, pd, pdd = q[3:], qd[3:], qdd[3:]
    return np.concatenate((qdd[:3], 2 * G_of(p) @ pdd, [pd @ pd + p @ pdd]))


def phi_q(q):
    """Jacobian of the paper's Phi = [1/2 (r^T r - 2 r^T A u_z); 1/2 (p^T p - 1)], numerically."""
    return np.array(LAGRANGE["B"](*q), dtype=float)


def consistent_state(rng, spin=10.0):
    """Random unit p, tip s on the unit sphere, r = s + A(p) u_z; qdot in the null space of B."""
    p = rng.normal(size=4)
    p /= np.linalg.norm(p)
    s = rng.normal(size=3)
    s /= np.linalg.norm(s)
    q = np.concatenate((s + A_of(p)[:, 2], p))
    v = np.concatenate((rng.normal(size=3), 0.5 * spin * rng.normal(size=4)))
    B = phi_q(q)
    qd = v - B.T @ np.linalg.solve(B @ B.T, B @ v)
    return q, qd


# ------------------------------------------------------------------- Lagrange reference
def _lagrange():
    """M(q), Q(q, qd) and Phi_q, gamma of M qdd + Phi_q^T lam = Q, Phi_q qdd = gamma."""
    q = sp.symbols("x y z e0 e1 e2 e3")
    qd = sp.symbols("dx dy dz de0 de1 de2 de3")
    m, Jxx, Jzz, g = sp.symbols("m Jxx Jzz g")
    e0, e1, e2, e3 = q[3:]
    G = sp.Matrix([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])
    e = sp.Matrix([e1, e2, e3])
    et = sp.Matrix([[0, -e3, e2], [e3, 0, -e1], [-e2, e1, 0]])
    A = (e0 ** 2 - (e.T * e)[0]) * sp.eye(3) + 2 * e * e.T + 2 * e0 * et
    r, rd, p, pd = sp.Matrix(q[:3]), sp.Matrix(qd[:3]), sp.Matrix(q[3:]), sp.Matrix(qd[3:])
    J = sp.diag(Jxx, Jxx, Jzz)
    T = m / 2 * (rd.T * rd)[0] + 2 * (pd.T * G.T * J * G * pd)[0]
    V = m * g * q[2]
    M = sp.hessian(T, qd)
    dT_dqd = sp.Matrix([T.diff(v) for v in qd])
    Q = sp.Matrix([T.diff(a) - V.diff(a) for a in q]) - dT_dqd.jacobian(q) * sp.Matrix(qd)
    Phi = sp.Matrix([((r.T * r)[0] - 2 * (r.T * A * sp.Matrix([0, 0, 1]))[0]) / 2,
                     ((p.T * p)[0] - 1) / 2])
    B = Phi.jacobian(q)
    gamma = -(B * sp.Matrix(qd)).jacobian(q) * sp.Matrix(qd)
    par = (m, Jxx, Jzz, g)
    return {"M": sp.lambdify(q + par, M, "numpy"), "Q": sp.lambdify(q + qd + par, Q, "numpy"),
            "B": sp.lambdify(q, B, "numpy"), "gamma": sp.lambdify(q + qd, gamma, "numpy")}


LAGRANGE = _lagrange()


def lagrange_qdd(q, qd, P):
    par = (P["m"], P["Jxx"], P["Jzz"], P["g"])
    M = np.array(LAGRANGE["M"](*q, *par), dtype=float)
    Q = np.array(LAGRANGE["Q"](*q, *qd, *par), dtype=float).ravel()
    B = phi_q(q)
    gam = np.array(LAGRANGE["gamma"](*q, *qd), dtype=float).ravel()
    K = np.block([[M, B.T], [B, np.zeros((2, 2))]])
    sol = np.linalg.solve(K, np.concatenate((Q, gam)))
    return sol[:7]


def random_states(n=4, seed=11):
    """Random consistent states, the same in every test, so that the modes compiled for their
    partitions (one per dependent-speed choice, up to 4 s each with the qdot speeds) are reused."""
    rng = np.random.default_rng(seed)
    return [consistent_state(rng) for _ in range(n)]


# --------------------------------------------------------------------------- helpers
def start(speeds, q, qd, params=None):
    """A simulator of the scenario started at the consistent state (q, qdot)."""
    sc = scenario(speeds)
    P = {**sc.defaults(), **(params or {})}
    sim = Simulator(sc.automaton, P, library=ModeLibrary.of(sc.automaton, "symbolic"))
    sim.start(0.0, q, speeds_of(speeds, q, qd))
    return sc, sim


def tilted_state(tilt, spin):
    """Tip at the bottom of its sphere, axis tilted by `tilt` about y, spinning at `spin` about
    its axis, centroid and tip at rest."""
    p = np.array([np.cos(tilt / 2), 0.0, np.sin(tilt / 2), 0.0])
    q = np.concatenate((np.array([0.0, 0.0, -1.0]) + A_of(p)[:, 2], p))
    qd = np.concatenate((np.zeros(3), 0.5 * G_of(p).T @ np.array([0.0, 0.0, spin])))
    return q, qd


def invariants(sc, sim):
    """Energy, spin about the symmetry axis and vertical angular momentum about O, computed
    from the outputs (the paper's coordinates and their rates) with A^T dA/dt for omega'."""
    o = sc.observe(sim)
    q = np.array([o[c] for c in top.COORDS])
    qd = np.array([o["d" + c] for c in top.COORDS])
    P = {k: sim.param(k) for k in ("m", "Jxx", "Jzz", "g")}
    n = np.linalg.norm(q[3:])                 # 1 up to the constraint residual
    w = omega_from_A(q[3:] / n, qd[3:] / n)
    J = np.diag([P["Jxx"], P["Jxx"], P["Jzz"]])
    E = 0.5 * P["m"] * qd[:3] @ qd[:3] + 0.5 * w @ J @ w + P["m"] * P["g"] * q[2]
    Hz = (P["m"] * np.cross(q[:3], qd[:3]) + A_of(q[3:]) @ J @ w)[2]
    return {"E": E, "E_out": o["kinetic_energy"] + o["potential_energy"], "wz": w[2], "Hz": Hz,
            "res": o["constraint_residual"], "w": w}


# ----------------------------------------------------------------------------- tests
def test_interface_names_the_papers_coordinates():
    """Issue 5: outputs x..e3, dx..de3 plus the common ones; parameters m, Jxx, Jzz, g, omega_z."""
    sc = scenario("omega")
    names = [v.name for v in sc.outputs]
    assert names[:14] == list(top.COORDS) + ["d" + c for c in top.COORDS]
    for n in ("mode", "event_count", "last_event_time", "constraint_residual",
              "kinetic_energy", "potential_energy"):
        assert n in names
    assert {"m", "Jxx", "Jzz", "g", "omega_z"} <= set(sc.defaults())
    assert {str(s) for s in sc.automaton.model.params} <= set(sc.defaults())
    assert sc.inputs == []


def test_euler_parameter_kinematics_eq_38():
    """omega' = 2 G(p) pdot (eq 38) is the axial vector of A^T dA/dt (eq 36) at unit p, p.pdot = 0,
    and pdot = 1/2 G^T omega' inverts it."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        p = rng.normal(size=4)
        p /= np.linalg.norm(p)
        pd = rng.normal(size=4)
        pd -= (p @ pd) * p
        w = omega_from_A(p, pd)
        assert np.allclose(w, 2 * G_of(p) @ pd, rtol=1e-12, atol=1e-12)
        assert np.allclose(0.5 * G_of(p).T @ w, pd, rtol=1e-12, atol=1e-12)
        assert np.allclose(A_of(p).T @ A_of(p), np.eye(3), atol=1e-13)


@pytest.mark.parametrize("speeds", VARIANTS)
def test_model_angular_velocity_is_eq_38(speeds):
    """The model's kinetic energy and Euler-parameter rates at random consistent states carry
    omega' = vee(A^T dA/dt); with the omega speeds the rates are pdot = 1/2 G^T omega' (eq 38)."""
    for q, qd in random_states():
        sc, sim = start(speeds, q, qd)
        o = sc.observe(sim)
        assert np.allclose([o["d" + c] for c in top.COORDS], qd, rtol=1e-12, atol=1e-12)
        w = omega_from_A(q[3:], qd[3:])
        P = sc.defaults()
        T = 0.5 * P["m"] * qd[:3] @ qd[:3] + 0.5 * w @ np.diag([P["Jxx"], P["Jxx"], P["Jzz"]]) @ w
        assert o["kinetic_energy"] == pytest.approx(T, rel=1e-12)
        if speeds == "omega":
            assert np.allclose(sim.u[3:6], w, rtol=1e-12, atol=1e-12)
            assert sim.u[6] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("speeds", VARIANTS)
def test_accelerations_match_lagrange_multipliers(speeds):
    """Embedded accelerations (eq 16) equal those of [M Phi_q^T; Phi_q 0][qdd; lam] = [Q; gamma],
    from the Lagrangian in q, qdot, at random consistent states and parameters.  The qdot speeds
    check that the singular M of Euler parameters (G p = 0) embeds."""
    rng = np.random.default_rng(3)
    for q, qd in random_states():
        P = dict(m=rng.uniform(5, 50), Jxx=rng.uniform(10, 100), Jzz=rng.uniform(5, 80),
                 g=rng.uniform(1, 20))
        sc, sim = start(speeds, q, qd, P)
        xdot = sim.compiled_mode.rhs(0.0, sim.x, sim.pvec)
        assert np.allclose(xdot[:7], qd, rtol=1e-12, atol=1e-12)            # qdot = W u (eq 2)
        ref = speed_rates(speeds, q, qd, lagrange_qdd(q, qd, P))
        ind = [i for i in range(7) if i not in sim.dep]
        assert len(ind) == 5                                               # 5 degrees of freedom
        scale = np.abs(ref).max()
        assert np.allclose(xdot[7:], ref[ind], rtol=1e-11, atol=1e-11 * scale), (sim.dep, xdot[7:],
                                                                              ref[ind])


@pytest.mark.parametrize("speeds", VARIANTS)
def test_paper_start_energy_and_constraints(speeds):
    """Sec 7.1 start, omega_z = 13.5 rad/s, RK4 at h = 1e-3 for 3 s: energy and constraints hold.

    RK4 shrinks a rotation at rate w by (w h)^6 / 144 in amplitude per step; the fastest motion
    is the Euler parameters turning at omega_z / 2 = 6.75 rad/s, so p and pdot shrink by 2e-12
    in 3000 steps and 2 pdot^T G^T J' G pdot by 8e-12.  1e-9 leaves room for round-off; the
    paper's figure is 2e-6 (2e-4 %) over 100 s.
    """
    sc = scenario(speeds)
    sim = sc.simulator()
    i0 = invariants(sc, sim)
    assert i0["E"] == pytest.approx(0.5 * 30.0 * 13.5 ** 2, rel=1e-14)
    assert np.allclose(i0["w"], [1e-12, 1e-12, 13.5], rtol=1e-12, atol=1e-16)   # eq 38 round trip
    worst = 0.0
    for k in range(1, 31):
        sim.advance(0.1 * k)
        i = invariants(sc, sim)
        assert i["E_out"] == pytest.approx(i["E"], rel=1e-10)
        worst = max(worst, abs(i["E"] - i0["E"]) / i0["E"])
        assert i["res"] < 1e-10
    assert worst < 1e-9
    assert sim.mode == top.TOP and sim.event_count == 0


def test_tilted_top_first_integrals():
    """A top started tilted by 0.3 rad, spinning at 13.5 rad/s, nutates and precesses for 3 s:
    energy, the spin about the symmetry axis (Euler's third equation: Jxx = Jyy and the tip
    force acts on the axis) and the vertical angular momentum about O (gravity is vertical and
    the bar force passes through O) stay constant; the motion is large (the centroid drops).

    Speeds "omega" only: with the paper's u = qdot the engine keeps its first partition, and
    the dependent Euler parameter rate's coefficient e0 crosses 0 every 0.23 s (see the module
    docstring); that needs the re-selection of independent speeds.
    """
    q, qd = tilted_state(0.3, 13.5)
    sc, sim = start("omega", q, qd)
    i0 = invariants(sc, sim)
    zmin = 0.0
    for k in range(1, 31):
        sim.advance(0.1 * k)
        i = invariants(sc, sim)
        zmin = min(zmin, sim.q[2])
        assert i["E"] == pytest.approx(i0["E"], rel=1e-9)
        assert i["wz"] == pytest.approx(13.5, rel=1e-9)
        assert i["Hz"] == pytest.approx(i0["Hz"], rel=1e-9)
        assert i["res"] < 1e-10
    assert zmin < -0.1      # the centroid fell by more than 0.1 m: the invariants were exercised


def _tilt(q):
    """Horizontal part of the body symmetry axis A(p) u_z (small-angle tilt)."""
    return np.hypot(*A_of(q[3:])[:2, 2])


def test_sleeping_top_stability_matches_linear_analysis():
    """Linearized about the sleeping top (tip w, axis tilt a, complex horizontal coordinates):
    w'' + a'' + g w = 0, Jxx a'' - i Jzz W a' = m g (w + a).  With e^{i s t}:
    Jxx s^4 - Jzz W s^3 - Jxx g s^2 + Jzz W g s - m g^2 = 0; the tilt grows at max |Im s|.
    Below the critical spin the engine's tilt grows at that rate; at the paper's 13.5 rad/s it
    stays at the size of the perturbation (the paper's Fig 5: the top stabilizes)."""
    P = scenario("omega").defaults()
    m, Jt, Jz, g = P["m"], P["Jxx"], P["Jzz"], P["g"]

    def rate(W):
        return max(abs(np.roots([Jt, -Jz * W, -Jt * g, Jz * W * g, -m * g * g]).imag))

    eps = 1e-8
    for W in (10.0, 13.5):
        sim = scenario("omega").simulator({"omega_z": W, "omega_x_start": eps,
                                           "omega_y_start": eps})
        tilts = []
        for k in range(1, 11):
            sim.advance(float(k))
            tilts.append(_tilt(sim.q))
        if W < 12.0:
            sigma = rate(W)
            assert sigma > 0.5
            assert np.log(tilts[9] / tilts[5]) / 4.0 == pytest.approx(sigma, rel=1e-2)
            assert tilts[9] < 1e-3            # still in the linear range
        else:
            assert rate(W) == 0.0
            assert max(tilts) < 10 * eps
