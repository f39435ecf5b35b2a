"""The kneed passive walker (wang2019 Sec 3.2): its gait, energy and impacts against
references written here, and its FMU stepped by fmpy.

The references: the walker's mass matrix, contact Jacobian and angular momentum written
again from the point masses' positions with sympy (not the engine's Kane terms), and the
plastic impact map of wang2019 eq 19, q'+ = (1 - M^-1 J^T (J M^-1 J^T)^-1 J) q'-, applied
with them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import scenarios
from scenarios.kneed_walker import FIXED_POINT

P = dict(mH=0.5, mt=0.5, ms=0.05, a1=0.375, b1=0.125, a2=0.175, b2=0.325, g=9.81)
STRIDE = 0.5643   # s, about


@pytest.fixture(scope="module")
def sc():
    return scenarios.load("kneed_walker").build()


@pytest.fixture(scope="module")
def walk(sc):
    """Ten strides and a bit from the shipped start, the energy every 10 ms."""
    sim = sc.simulator()
    samples = []
    for k in range(1, int((10 * STRIDE + 0.2) / 0.01) + 1):
        sim.advance(k * 0.01)
        o = sc.observe(sim)
        samples.append((o["event_count"], o["kinetic_energy"] + o["potential_energy"],
                        o["constraint_residual"]))
    return sim, samples


def reference():
    """Positions of the five point masses written here (x downhill, y up, angles from the
    downward vertical): M(q) = sum m J_k^T J_k, T, the feet, and the angular momentum about a
    point, as numeric functions of q (and u)."""
    q = sp.symbols("qx qy qi1 qi2 qo1 qo2")
    u = sp.symbols("u0:6")
    qx, qy, qi1, qi2, qo1, qo2 = q
    lt, ls = P["a2"] + P["b2"], P["a1"] + P["b1"]
    hip = sp.Matrix([qx, qy])
    seg = lambda a: sp.Matrix([sp.sin(a), -sp.cos(a)])   # noqa: E731
    masses, feet = [(P["mH"], hip)], {}
    for leg, (t1, t2) in (("i", (qi1, qi2)), ("o", (qo1, qo2))):
        knee = hip + lt * seg(t1)
        masses += [(P["mt"], hip + P["b2"] * seg(t1)), (P["ms"], knee + P["b1"] * seg(t2))]
        feet[leg] = knee + ls * seg(t2)
    M = sp.zeros(6, 6)
    for m, r in masses:
        J = r.jacobian(q)
        M += m * J.T * J
    px, py = sp.symbols("px py")
    H = 0
    for m, r in masses:   # angular momentum about (px, py): sum m (r - p) x v
        v = r.jacobian(q) * sp.Matrix(u)
        H += m * ((r[0] - px) * v[1] - (r[1] - py) * v[0])
    return {"M": sp.lambdify([q], M, "numpy"),
            "foot": {k: sp.lambdify([q], f, "numpy") for k, f in feet.items()},
            "Jfoot": {k: sp.lambdify([q], f.jacobian(q), "numpy") for k, f in feet.items()},
            "H": sp.lambdify([q, u, px, py], H, "numpy")}


@pytest.fixture(scope="module")
def ref():
    return reference()


def reduced(q, u, stance):
    s, w = (2, 4) if stance == "i" else (4, 2)
    return np.array([q[s], q[w], q[w + 1], u[s], u[w], u[w + 1]])


def test_shipped_start_is_a_period_one_gait(walk):
    """Ten strides reproduce the heel-strike state relative to the stance foot to 1e-8."""
    sim, _ = walk
    strikes = [e for e in sim.impacts if e[1] == "heel_strike"]
    assert len(strikes) == 10
    for k, (t, _, q, _, u_plus) in enumerate(strikes):
        z = reduced(q, u_plus, "o" if k % 2 == 0 else "i")
        assert np.max(np.abs(z - FIXED_POINT)) <= 1e-8, (k, t, z - FIXED_POINT)
    # and it walks downhill: a step moves the stance foot by the same length every time
    assert sim.discrete["step_count"] == 10
    assert sim.discrete["p_x"] > 10 * 0.3


def test_energy_constant_between_impacts_and_constraints_held(walk):
    sim, samples = walk
    by_phase = {}
    for events, e, res in samples:
        by_phase.setdefault(events, []).append(e)
        assert res <= 1e-10
    assert len(by_phase) >= 20            # knee and heel strikes: two events a step
    for events, es in by_phase.items():
        assert max(es) - min(es) <= 1e-9, events


def test_every_impact_loses_energy(walk, ref):
    sim, _ = walk
    kinds = set()
    for t, guard, q, u_minus, u_plus in sim.impacts:
        M = ref["M"](q)
        T0, T1 = 0.5 * u_minus @ M @ u_minus, 0.5 * u_plus @ M @ u_plus
        assert T1 < T0 - 1e-6, (t, guard, T0, T1)
        kinds.add(guard)
    assert kinds == {"knee_strike", "heel_strike"}


def test_heel_strike_is_eq19_and_conserves_angular_momentum(walk, ref):
    """The heel-strike map against eq 19 written here (new stance foot pinned, both knees
    locked through the impact) and against the angular momentum about the struck point
    (the only external impulse acts there)."""
    sim, _ = walk
    strikes = [e for e in sim.impacts if e[1] == "heel_strike"]
    assert strikes
    for k, (t, _, q, u_minus, u_plus) in enumerate(strikes):
        new = "o" if k % 2 == 0 else "i"
        M = ref["M"](q)
        knees = np.array([[0, 0, -1, 1, 0, 0], [0, 0, 0, 0, -1, 1]], dtype=float)
        J = np.vstack((ref["Jfoot"][new](q), knees))
        Minv_JT = np.linalg.solve(M, J.T)
        u_ref = u_minus - Minv_JT @ np.linalg.solve(J @ Minv_JT, J @ u_minus)   # eq 19
        assert np.max(np.abs(u_plus - u_ref)) <= 1e-10 * max(1.0, np.max(np.abs(u_minus)))
        fx, fy = np.ravel(ref["foot"][new](q))
        H0, H1 = ref["H"](q, u_minus, fx, fy), ref["H"](q, u_plus, fx, fy)
        assert H1 == pytest.approx(H0, rel=1e-10, abs=1e-12)
        # the new stance foot stops, the trailing foot leaves the ground
        assert np.max(np.abs(ref["Jfoot"][new](q) @ u_plus)) <= 1e-10
        old = "i" if new == "o" else "o"
        assert (ref["Jfoot"][old](q) @ u_plus)[1] > 0


def test_knee_strike_conserves_angular_momentum_about_the_stance_foot(walk, ref):
    sim, _ = walk
    strikes = [e for e in sim.impacts if e[1] == "knee_strike"]
    assert len(strikes) >= 10
    for t, _, q, u_minus, u_plus in strikes:
        # the stance foot: on the slope, its knee locked already
        stance = [leg for leg, (a, b) in (("i", (2, 3)), ("o", (4, 5)))
                  if abs(q[a] - q[b]) < 1e-12 and abs(np.ravel(ref["foot"][leg](q))[1] + np.ravel(
                      ref["foot"][leg](q))[0] * math.tan(0.0504)) < 1e-9]
        assert len(stance) == 1, t
        fx, fy = np.ravel(ref["foot"][stance[0]](q))
        assert ref["H"](q, u_plus, fx, fy) == pytest.approx(ref["H"](q, u_minus, fx, fy),
                                                            rel=1e-10)


def test_impact_constraints_are_checked(sc):
    """A jump whose impact set leaves out a constraint of the mode it enters is an error
    naming both."""
    from embed import Jump, ModelDefinitionError
    from embed.check.check import jump_problem
    aut = sc.automaton
    ok = Jump(4, impact=True, impact_constraints=("o_foot_x", "o_foot_y", "o_knee", "i_knee"))
    assert jump_problem(aut, ok) is None
    bad = Jump(4, impact=True, impact_constraints=("o_foot_x", "o_foot_y"))
    assert "o_knee" in jump_problem(aut, bad)
    assert "nope" in jump_problem(aut, Jump(4, impact_constraints=("nope", "o_knee",
                                                                   "o_foot_x", "o_foot_y")))
    assert ModelDefinitionError  # the type reset_map raises with that message


def test_fmu_walks_in_fmpy(tmp_path):
    """The built FMU, stepped by fmpy for 3 s at 1 ms: it walks (five heel strikes), its
    constraints hold and the interface names are the issue's."""
    import build_fmu
    from fmu_src.host.master import FmuRunner
    build_fmu.main(["kneed_walker", "--out", str(tmp_path)])
    r = FmuRunner(str(tmp_path / "kneed_walker.fmu"), instance="walker")
    try:
        o0 = r.outputs()
        for name in ("hip_x", "hip_y", "stance_foot_x", "step_count", "kinetic_energy",
                     "potential_energy", "constraint_residual", "mode", "event_count",
                     "last_event_time", "impact_count", "status"):
            assert name in o0
        for _ in range(3000):
            r.step(1e-3)
        o = r.outputs()
        assert o["status"] == 0, r.messages
        assert o["step_count"] == 5 and o["impact_count"] == 10
        assert o["stance_foot_x"] > 1.5 and o["hip_x"] > o0["hip_x"] + 1.5
        assert o["constraint_residual"] <= 1e-10
    finally:
        r.close()


def test_knee_bend_visits_all_six_phases(sc):
    """With An and Chen's knee bend early enough (bend_angle 0.05 rad) the stride runs
    through all six phases of Fig 8 in order; releasing the stance knee is no impact, and the
    energy still only falls at impacts."""
    sim = sc.simulator({"bend_angle": 0.05})
    sim.advance(1.2)
    path = [(a, b) for _, _, a, b in sim.events]
    assert path == [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 1)]
    assert sim.impact_count == 4
    assert [g for _, g, _, _ in sim.events].count("stance_knee_bend") == 2


def _stride(sc, z):
    """The stride map P(z), shot with the engine: the reduced state just after the first
    heel strike from the heel-strike state z (inner leg standing at x = 0), the legs' roles
    swapped (the new stance leg is the outer one)."""
    from scenarios.kneed_walker import Q_NAMES, U_NAMES, start_state
    q0, u0 = start_state(z)
    sim = sc.simulator({f"{n}_start": float(v) for n, v in zip(Q_NAMES + U_NAMES,
                                                               np.concatenate((q0, u0)))})
    t = 0.0
    while t < 2 * STRIDE:
        t += 0.05
        sim.advance(t)
        strikes = [e for e in sim.impacts if e[1] == "heel_strike"]
        if strikes:
            _, _, q, _, u_plus = strikes[0]
            return reduced(q, u_plus, "o")
    raise AssertionError(f"no heel strike within {2 * STRIDE} s from {z}")


def test_gait_is_stable(sc, walk):
    """The stride map's Jacobian at the shipped fixed point by forward differences (step
    1e-7, six strides shot with the engine): its eigenvalues, printed, lie inside the unit
    circle (the period-one gait attracts nearby states).  Heel strike locks the new swing
    knee (eq 19), so P's swing thigh and shank rows coincide and two eigenvalues vanish."""
    z = np.array(FIXED_POINT)
    Pz = _stride(sc, z)
    assert np.max(np.abs(Pz - z)) <= 1e-8
    J = np.empty((6, 6))
    for k in range(6):
        dz = np.zeros(6)
        dz[k] = 1e-7 * max(1.0, abs(z[k]))
        J[:, k] = (_stride(sc, z + dz) - Pz) / dz[k]
    ev = sorted(np.linalg.eigvals(J), key=abs, reverse=True)
    print("\nstride map eigenvalues at the fixed point: " +
          ", ".join(f"{e.real:+.6f}{e.imag:+.6f}j (|{abs(e):.6f}|)" for e in ev))
    np.testing.assert_allclose(J[1], J[2], rtol=0, atol=1e-6)
    np.testing.assert_allclose(J[4], J[5], rtol=0, atol=1e-6)
    assert abs(ev[0]) < 0.9                  # 0.655 at slope 0.0504 rad
    assert abs(ev[-1]) < 1e-6 and abs(ev[-2]) < 1e-6
