"""Ball rolling in a bowl (braun_goldfarb2012 Sec 3.1) against formulations derived here.

The independent reference is Newton-Euler for the ball in Cartesian vectors, written in
this file: unknowns the acceleration a_C of the centre, omega' and the contact force F of
the bowl on the ball at P = C + r e_rho,

    m a_C = F - m g k,    I omega' = (r e_rho) x F,
    a_C + omega' x (r e_rho) + omega x (r e_rho') = 0    (v_P = v_C + omega x r e_rho = 0 held),

a Lagrange-multiplier system (F the multipliers) solved with numpy.  Invariants: the paper's
first integral (Fig 2 caption), the energy, the spin omega . e_rho, the rolling residual;
and the two heights between which the motion must stay, from the energy and the first
integral (the turning points of alpha).
"""

import math

import numpy as np
import pytest
import scipy.optimize
import sympy as sp
import symengine as se
from sympy.physics.mechanics import ReferenceFrame, dynamicsymbols

from embed import InputError
from scenarios import ball_bowl

SC = ball_bowl.build()
MODEL = SC.automaton.model
N_SPEEDS = 7


# ------------------------------------------------------------------ the reference, in numpy
def basis(a, b):
    """e_rho, e_alpha, e_beta (braun_goldfarb2012 footnote 5, e_beta = -sin(beta) i + cos(beta) j)."""
    ca, sa, cb, sb = math.cos(a), math.sin(a), math.cos(b), math.sin(b)
    return (np.array([ca * cb, ca * sb, -sa]), np.array([-sa * cb, -sa * sb, -ca]),
            np.array([-sb, cb, 0.0]))


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def newton_euler(P, alpha, beta, w):
    """Rolling speeds, alpha'', beta'', omega' and the contact force F at a state of the ball.

    The centre's speeds follow from v_C = -omega x (r e_rho); alpha'' and beta'' from a_C in
    spherical coordinates: a_C . e_alpha = rho (alpha'' + sin cos beta'^2),
    a_C . e_beta = rho (cos(alpha) beta'' - 2 sin(alpha) alpha' beta').
    """
    R, r, m, g = P["R"], P["r"], P["m"], P["g"]
    rho, inertia = R - r, 0.4 * m * r * r
    er, ea, eb = basis(alpha, beta)
    vC = r * np.cross(er, w)
    der = vC / rho                                  # e_rho' (the centre moves on a sphere)
    K = np.zeros((9, 9))
    f = np.zeros(9)
    K[0:3, 0:3] = m * np.eye(3)
    K[0:3, 6:9] = -np.eye(3)
    f[0:3] = [0.0, 0.0, -m * g]
    K[3:6, 3:6] = inertia * np.eye(3)
    K[3:6, 6:9] = -r * skew(er)
    K[6:9, 0:3] = np.eye(3)
    K[6:9, 3:6] = -r * skew(er)                     # omega' x r e_rho = -r e_rho~ omega'
    f[6:9] = -r * np.cross(w, der)
    z = np.linalg.solve(K, f)
    aC, wd, F = z[:3], z[3:6], z[6:]
    da = vC @ ea / rho
    db = vC @ eb / (rho * math.cos(alpha))
    dda = aC @ ea / rho - math.sin(alpha) * math.cos(alpha) * db ** 2
    ddb = (aC @ eb / rho + 2 * math.sin(alpha) * da * db) / math.cos(alpha)
    return dict(da=da, db=db, dda=dda, ddb=ddb, wd=wd, F=F, vC=vC, basis=(er, ea, eb))


def random_state(rng):
    P = dict(SC.defaults(), R=rng.uniform(3.0, 10.0), r=rng.uniform(0.3, 1.5),
             m=rng.uniform(0.5, 3.0), g=rng.uniform(5.0, 12.0))
    alpha, beta = rng.uniform(-1.2, 1.3), rng.uniform(-math.pi, math.pi)
    w = rng.normal(0.0, 3.0, 3)
    p = rng.normal(size=4)
    p /= np.linalg.norm(p)
    return P, alpha, beta, w, p


def rolling_residual(P, q, u):
    """|v_P| of the ball's material point at the contact, from the state alone."""
    rho, a, b = q[:3]
    er, ea, eb = basis(a, b)
    vC = u[0] * er + rho * u[1] * ea + rho * math.cos(a) * u[2] * eb
    return float(np.linalg.norm(vC + np.cross(u[3:6], P["r"] * er)))


# ------------------------------------------------------------------ symbolic checks
def test_unconstrained_terms_are_the_papers():
    """F_r + F_r* for rho, alpha, beta equal Q - M qddot of Sec 3.1; omega rows -I omega'; u_e none.

    The paper's Q has the gravity terms of V = +m g rho sin(alpha); its energy law Phi_e (and a
    bowl holding the ball below its centre, alpha > 0) has V = -m g rho sin(alpha): ours is
    -dV/dq of the latter.
    """
    rho, al, dr, da, db, ddr, dda, ddb = sp.symbols("rho alpha drho dalpha dbeta drhod dalphad dbetad")
    m, g, r = sp.symbols("m g r")
    M = sp.diag(m, m * rho ** 2, m * rho ** 2 * sp.cos(al) ** 2)
    centrifugal = sp.Matrix([-m * rho * (da ** 2 + db ** 2 * sp.cos(al) ** 2),
                             m * rho * (2 * dr * da + rho * db ** 2 * sp.sin(al) * sp.cos(al)),
                             2 * m * rho * (dr * db * sp.cos(al) ** 2
                                            - rho * da * db * sp.sin(al) * sp.cos(al))])
    V = -m * g * rho * sp.sin(al)
    gravity = -sp.Matrix([sp.diff(V, rho), sp.diff(V, al), 0])
    paper_gravity = -sp.Matrix([m * g * sp.sin(al), m * g * rho * sp.cos(al), 0])
    assert sp.simplify(gravity + paper_gravity) == sp.zeros(3, 1)     # the sign, and only it
    expected = gravity - centrifugal - M * sp.Matrix([ddr, dda, ddb])
    ours = [sp.sympify(a + b) for a, b in zip(MODEL.Fr, MODEL.Frstar)]
    for i in range(3):
        assert sp.simplify(ours[i] - expected[i]) == 0
    inertia = sp.Rational(2, 5) * m * r ** 2
    for i, s in zip(range(3, 6), ("omega_xd", "omega_yd", "omega_zd")):
        assert sp.simplify(ours[i] + inertia * sp.Symbol(s)) == 0
    assert ours[6] == 0


def test_euler_parameters_follow_omega():
    """The kinematical equations pdot = 1/2 E^T omega (u_e = 0) make sympy's angular velocity of
    the frame oriented by p (orient_quaternion, computed from the DCM) equal omega."""
    p = dynamicsymbols("p0:4")
    N = ReferenceFrame("N")
    B = N.orientnew("B", "Quaternion", p)
    w_expr = B.ang_vel_in(N).to_matrix(N)
    t = dynamicsymbols._t
    pd = [sp.Symbol(f"pd{i}") for i in range(4)]
    ps = [sp.Symbol(f"p{i}s") for i in range(4)]
    w_fn = sp.lambdify(ps + pd, w_expr.xreplace({**{pi.diff(t): d for pi, d in zip(p, pd)}})
                       .xreplace(dict(zip(p, ps))))
    qdot = MODEL.qdot[3:7]
    rng = np.random.default_rng(7)
    for _ in range(10):
        pv = rng.normal(size=4)
        pv /= np.linalg.norm(pv)
        wv = rng.normal(size=3)
        vals = {se.Symbol(f"e{i}"): pv[i] for i in range(4)}
        vals.update({se.Symbol(s): wv[i] for i, s in enumerate(("omega_x", "omega_y", "omega_z"))})
        vals[se.Symbol("u_e")] = 0.0
        pdv = [float(e.subs(vals)) for e in qdot]
        assert abs(float(np.dot(pv, pdv))) < 1e-15          # |p| constant
        np.testing.assert_allclose(np.array(w_fn(*pv, *pdv), dtype=float).ravel(), wv,
                                   rtol=0, atol=1e-14)


# ------------------------------------------------------------------ engine vs Newton-Euler
@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_accelerations_match_newton_euler(embedding):
    """omega' (the independent accelerations) to 1e-12; alpha'', beta'' of the embedded flow.

    The dependent accelerations are the rate of the engine's dependent speeds along its own
    right-hand side, by a central difference of step 1e-5 (truncation ~1e-10 * |u'''|,
    round-off ~1e-11): compared to 1e-8.
    """
    rng = np.random.default_rng(11)
    n = N_SPEEDS
    for _ in range(15):
        P, alpha, beta, w, p = random_state(rng)
        ref = newton_euler(P, alpha, beta, w)
        q = np.array([P["R"] - P["r"], alpha, beta, *p])
        u = np.array([0.0, ref["da"], ref["db"], *w, 0.0])
        sim = SC.simulator(P, embedding=embedding)
        sim.start(0.0, q, u)
        np.testing.assert_array_equal(sim.q, q)             # consistent: nothing projected
        np.testing.assert_allclose(sim.u, u, rtol=0, atol=1e-14)
        compiled, x, pv = sim.compiled_mode, sim.x, sim.pvec
        xd = compiled.rhs(0.0, x, pv)
        ud = np.empty(n)
        eps = 1e-5
        U = lambda xx: compiled.monitors(0.0, xx, pv)[:n]        # noqa: E731  full speeds at x
        ud[:] = (U(x + eps * xd) - U(x - eps * xd)) / (2 * eps)
        ind = list(compiled.ind)
        exact = np.zeros(n, dtype=bool)
        exact[ind] = True
        ud[ind] = xd[n:]
        expected = np.array([0.0, ref["dda"], ref["ddb"], *ref["wd"], 0.0])
        scale = max(1.0, float(np.max(np.abs(expected))))
        np.testing.assert_allclose(ud[exact], expected[exact], rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(ud, expected, rtol=0, atol=1e-8 * scale)
        # the kinematics the engine integrates: qdot of rho, alpha, beta are the rolling speeds
        np.testing.assert_allclose(xd[:3], [0.0, ref["da"], ref["db"]], rtol=0, atol=1e-13)


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_constraint_forces_are_the_contact_force(embedding):
    """The multipliers are F's components: F + F* + B^T lambda = 0 and v_P's partial velocities
    are the rows of B, so lambda = (F . e_rho, F . e_alpha, F . e_beta) and 0 for euler_norm."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        P, alpha, beta, w, p = random_state(rng)
        ref = newton_euler(P, alpha, beta, w)
        sim = SC.simulator(P, embedding=embedding)
        sim.start(0.0, np.array([P["R"] - P["r"], alpha, beta, *p]),
                  np.array([0.0, ref["da"], ref["db"], *w, 0.0]))
        lam = sim.constraint_forces()
        er, ea, eb = ref["basis"]
        F = ref["F"]
        scale = max(1.0, float(np.linalg.norm(F)))
        assert lam["contact"] == pytest.approx(F @ er, abs=1e-12 * scale)
        assert lam["roll_alpha"] == pytest.approx(F @ ea, abs=1e-12 * scale)
        assert lam["roll_beta"] == pytest.approx(F @ eb, abs=1e-12 * scale)
        assert lam["euler_norm"] == pytest.approx(0.0, abs=1e-12 * scale)


# ------------------------------------------------------------------ runs
def _run(h, t_end, every=0.1):
    """Largest deviations of energy, first integral and spin, and the largest residuals."""
    sim = SC.simulator(h_max=h)
    P = SC.defaults()
    o0 = sim.outputs_now()
    E0 = o0["kinetic_energy"] + o0["potential_energy"]
    FI0 = o0["first_integral"]

    def spin():
        return float(sim.u[3:6] @ basis(sim.q[1], sim.q[2])[0])

    wp0 = spin()
    out = dict(E0=E0, FI0=FI0, wp0=wp0, dE=0.0, dFI=0.0, dwp=0.0, roll=0.0, rho=0.0, norm=0.0,
               eps=0.0, res=0.0)
    k = 0
    while sim.t < t_end - 1e-9:
        k += 1
        sim.advance(round(k * every, 12))
        o = sim.outputs_now()
        dFI = abs(o["first_integral"] - FI0)
        out["dE"] = max(out["dE"], abs(o["kinetic_energy"] + o["potential_energy"] - E0))
        out["dFI"] = max(out["dFI"], dFI)
        out["eps"] = max(out["eps"], abs(o["epsilon"] - dFI))
        out["dwp"] = max(out["dwp"], abs(spin() - wp0))
        out["roll"] = max(out["roll"], rolling_residual(P, sim.q, sim.u))
        out["rho"] = max(out["rho"], abs(sim.q[0] - (P["R"] - P["r"])), abs(o["drho"]))
        out["norm"] = max(out["norm"], abs(float(np.linalg.norm(sim.q[3:7])) - 1.0))
        out["res"] = max(out["res"], sim.residual())
    return out


def test_paper_start_values():
    """Sec 3.1 and footnote 6: the start state, omega(0), the first integral's value."""
    sim = SC.simulator()
    o = sim.outputs_now()
    P = SC.defaults()
    assert (P["R"], P["r"], P["m"], P["g"]) == (8.0, 1.0, 1.0, 9.81)
    assert o["rho"] == P["R"] - P["r"] and o["drho"] == 0.0
    assert o["alpha"] == pytest.approx(math.pi / 4, abs=1e-15)
    assert (o["beta"], o["dalpha"]) == (0.0, pytest.approx(0.5, abs=1e-15))
    assert o["dbeta"] == pytest.approx(1.0, abs=1e-15)
    er, ea, eb = basis(math.pi / 4, 0.0)
    w0 = 1.0 * er + 7.0 * math.cos(math.pi / 4) * 1.0 * ea - 7.0 * 0.5 * eb
    np.testing.assert_allclose(sim.u[3:6], w0, rtol=0, atol=1e-15)
    fi = 1.0 * math.cos(math.pi / 4) ** 2 + 2.0 / 49.0 * 1.0 * math.sin(math.pi / 4)
    assert o["first_integral"] == pytest.approx(fi, abs=1e-15)
    assert o["epsilon"] <= 1e-15
    for v in SC.outputs:                       # the FMU's start values are the start state's
        if v.name in o:
            assert v.start == pytest.approx(o[v.name], abs=1e-14), v.name


def test_invariants_over_a_run():
    """First integral, energy and spin constant over 5 s of RK4 at h = 1e-3; v_P at round-off.

    Tolerance: in exact arithmetic all three are constant, so their drift is RK4's global
    truncation, C h^4 (or round-off below that).  C is measured here with the same run at
    h = 4e-3, where the drift stands far above round-off; at h = 1e-3 the drift must be at
    most twice that times (1/4)^4, or at round-off level (100 ulp of the quantity's scale).
    """
    coarse = _run(4e-3, 5.0)
    fine = _run(1e-3, 5.0)
    scales = dict(dE=abs(fine["E0"]), dFI=abs(fine["FI0"]), dwp=abs(fine["wp0"]))
    for key, scale in scales.items():
        assert coarse[key] > 0.0
        bound = max(2 * coarse[key] / 4 ** 4, 100 * np.finfo(float).eps * scale)
        assert fine[key] <= bound, (key, fine[key], coarse[key])
        assert fine[key] <= 1e-10 * scale             # and small in absolute terms
    assert fine["eps"] <= 1e-15                       # epsilon output = |FI - FI(0)|
    assert fine["roll"] <= 1e-13                      # |v_C| = r |omega x e_rho| is about 5 m/s
    assert fine["rho"] == 0.0                         # rho fixed by the contact, exactly
    assert fine["norm"] <= 1e-12                      # Euler parameters held (engine tolerance)
    assert fine["res"] <= 1e-12


def _turning_points(P, E, FI, wp):
    """alpha where alpha' = 0 for the given energy, first integral and spin.

    With omega = omega_p e_rho + (rho cos(alpha) beta'/r) e_alpha - (rho alpha'/r) e_beta,
    E = 7/10 m rho^2 (alpha'^2 + cos^2 beta'^2) + 1/5 m r^2 omega_p^2 - m g rho sin(alpha) and
    beta' = (FI - k omega_p sin(alpha)) / cos^2(alpha), k = 2 r / (7 rho).
    """
    R, r, m, g = P["R"], P["r"], P["m"], P["g"]
    rho, k = R - r, 2 * r / (7 * (R - r))

    def G(a):
        return (0.7 * m * rho ** 2 * (FI - k * wp * math.sin(a)) ** 2 / math.cos(a) ** 2
                + 0.2 * m * r ** 2 * wp ** 2 - m * g * rho * math.sin(a) - E)

    a0 = P["alpha_start"]
    edge = math.pi / 2 - 1e-6
    return (scipy.optimize.brentq(G, -edge, a0, xtol=1e-15),
            scipy.optimize.brentq(G, a0, edge, xtol=1e-15))


@pytest.mark.parametrize("variant", [{}, dict(alpha_start=0.2, dalpha_start=-0.3, dbeta_start=2.0,
                                              omega_p_start=-3.0, R=5.0, r=0.6)])
def test_motion_stays_between_two_heights(variant):
    """alpha oscillates between the two roots of E = T(alpha' = 0) + V and reaches both."""
    P = {**SC.defaults(), **variant}
    sim = SC.simulator(variant)
    o = sim.outputs_now()
    wp = float(sim.u[3:6] @ basis(sim.q[1], sim.q[2])[0])
    assert wp == pytest.approx(P["omega_p_start"], abs=1e-14)
    lo, hi = _turning_points(P, o["kinetic_energy"] + o["potential_energy"], o["first_integral"], wp)
    assert lo < P["alpha_start"] < hi
    alphas = []
    for k in range(1, 6001):
        sim.advance(k * 1e-3)
        alphas.append(sim.q[1])
    alphas = np.array(alphas)
    # sampled every 1 ms: a turning point is missed by at most |alpha''| (0.5 ms)^2 / 2 < 1e-5
    assert alphas.min() >= lo - 1e-9 and alphas.max() <= hi + 1e-9
    assert alphas.min() <= lo + 1e-5 and alphas.max() >= hi - 1e-5


def test_ball_must_fit_in_the_bowl():
    with pytest.raises(InputError, match="must exceed the ball radius"):
        SC.simulator(dict(R=1.0, r=1.0))


def test_interface_is_the_issues():
    """Outputs and parameters named as issue 5 asks for ball_bowl (plus the first integral and
    the paper's epsilon of Fig 2(d))."""
    outs = {v.name for v in SC.outputs}
    assert outs == {"rho", "alpha", "beta", "drho", "dalpha", "dbeta", "omega_x", "omega_y",
                    "omega_z", "mode", "event_count", "last_event_time", "constraint_residual",
                    "kinetic_energy", "potential_energy", "first_integral", "epsilon"}
    params = {v.name for v in SC.parameters}
    assert {"R", "r", "m", "g", "alpha_start", "beta_start", "dalpha_start", "dbeta_start",
            "omega_p_start"} == params
    for v in SC.outputs:
        SC.source(v.name)          # every output resolves
