"""The double pendulum striking parts on a belt (gillespie2005 Example 3) against references
written in the test: the Lagrangian of the double pendulum, a free-flight integration by
scipy, and the general engine's pendulum_line for the sliding mode."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from scenarios import pendulum_belt, pendulum_line

SC = pendulum_belt.build()
P = SC.defaults()
L1, L2, M1, M2, G = P["l1"], P["l2"], P["m1"], P["m2"], P["g"]


def mass(q):
    c = math.cos(q[0] - q[1])
    return np.array([[(M1 + M2) * L1 ** 2, M2 * L1 * L2 * c], [M2 * L1 * L2 * c, M2 * L2 ** 2]])


def rows(q):
    """Jn (tip vertical velocity) and Jt (tip horizontal velocity) rows."""
    return (np.array([L1 * math.sin(q[0]), L2 * math.sin(q[1])]),
            np.array([L1 * math.cos(q[0]), L2 * math.cos(q[1])]))


def free_rhs(t, y):
    q, u = y[:2], y[2:]
    s = math.sin(q[0] - q[1])
    f = np.array([-M2 * L1 * L2 * s * u[1] ** 2 - (M1 + M2) * G * L1 * math.sin(q[0]),
                  M2 * L1 * L2 * s * u[0] ** 2 - M2 * G * L2 * math.sin(q[1])])
    return np.concatenate((u, np.linalg.solve(mass(q), f)))


def run(params=None, t_end=1.0):
    sim = SC.simulator(params)
    while sim.t < t_end - 1e-12:
        sim.advance(min(t_end, sim.t + 0.01))
    return sim


@pytest.mark.parametrize("law", [0.0, 1.0])
def test_paper_story(law):
    """Rebounds on material 1, a strike on material 2 (e = 0) that slides, then sticking."""
    sim = run({"contact_law": law}, 1.0)
    story = [(g, frm, to) for _, g, frm, to in sim.events[:4]]
    assert story == [("strike", 1, 1), ("strike", 1, 1), ("strike", 1, 2), ("slip_zero", 2, 3)]
    assert sim.impact_count == 3
    assert 0.05 < sim.events[0][0] < 0.1 and 0.7 < sim.events[3][0] < 0.95


def test_first_impact_against_free_flight_integration():
    hit = lambda t, y: -L1 * math.cos(y[0]) - L2 * math.cos(y[1]) + P["d"]  # noqa: E731
    hit.terminal, hit.direction = True, -1
    y0 = [P["q1_start"], P["q2_start"], P["u1_start"], P["u2_start"]]
    ref = solve_ivp(free_rhs, (0, 1), y0, events=hit, rtol=1e-12, atol=1e-12, method="DOP853")
    sim = run(None, 0.1)
    assert sim.events[0][0] == pytest.approx(ref.t_events[0][0], abs=1e-6)
    t0, _, q, u_minus, _ = sim.impacts[0]
    assert q == pytest.approx(ref.y_events[0][0][:2], abs=1e-6)
    assert u_minus == pytest.approx(ref.y_events[0][0][2:], abs=1e-6)


@pytest.mark.parametrize("law", [0.0, 1.0])
def test_every_impact_balances_momentum_and_never_gains_energy(law):
    sim = run({"contact_law": law}, 2.0)
    assert sim.impact_count >= 4
    vb = P["v_b"]
    for t, _, q, um, up in sim.impacts:
        M = mass(q)
        Jn, Jt = rows(q)
        # the impulses of the contact, from the momentum balance M du = Jn^T Pn + Jt^T Pt
        Pn, Pt = np.linalg.solve(np.column_stack((Jn, Jt)), M @ (up - um))
        assert Pn >= -1e-12
        vn_m, vn_p = Jn @ um, Jn @ up
        vt_p = Jt @ up - vb
        assert vn_m < 0 and vn_p >= -1e-12          # approaching before, not after
        belt_s = math.sin(q[0]) + math.sin(q[1]) - vb * t
        k = "2" if P["s2_start"] <= belt_s < P["s2_end"] else "1"
        e, mu_s, mu_d = P["e" + k], P["mu_s" + k], P["mu_d" + k]
        assert abs(Pt) <= mu_s * Pn + 1e-9            # the impulse lies in the friction cone
        if abs(vt_p) > 1e-9 and vn_p > 1e-9:          # slid through the impact
            assert abs(Pt) <= max(mu_s, mu_d) * Pn + 1e-9
        # energy seen from the belt never grows (the belt may do work on the tip)
        ke = lambda u: 0.5 * u @ M @ u  # noqa: E731
        assert ke(up) - ke(um) <= Pt * vb + 1e-9
        if e > 0 and vn_p > 1e-9:                     # a rebound: Newton's/Smith's ratio e
            assert vn_p == pytest.approx(-e * vn_m, rel=1e-9)


def test_sliding_mode_is_the_general_engines_pendulum_line():
    """Frictionless sliding on the belt (mu_d = 0) is pendulum_line's slider-crank."""
    line = pendulum_line.build()
    ref = line.simulator()
    q0, u0 = np.array(ref.q), np.array(ref.u)
    sim = SC.simulator()
    sim.jump_to(pendulum_belt.SLIDING, q=q0, u=u0, mu_d_z=0.0, mu_s_z=0.0, s_dir=1.0,
                contact=1.0)
    for k in range(1, 6):
        sim.advance(0.1 * k)
        ref.advance(0.1 * k)
        assert sim.mode == pendulum_belt.SLIDING
        assert np.array(sim.q) == pytest.approx(np.array(ref.q), abs=1e-9)
        assert np.array(sim.u) == pytest.approx(np.array(ref.u), abs=1e-9)
        o = SC.observe(sim)
        assert o["normal_force"] == pytest.approx(line.observe(ref)["normal_force"], rel=1e-9)


def test_the_belt_input_follows_its_parameter_until_set():
    """v_b_in has the parameter v_b's value until a master sets it (input_defaults), in the
    engine as in the FMU: once stuck (mode 3) the tip moves at the belt's speed, v_b given as a
    parameter, or v_b_in given as an input over it (it once stayed at the input's start)."""
    for params, inputs, speed in (({"v_b": 2.4}, None, 2.4), ({"v_b": 2.4}, {"v_b_in": 2.6}, 2.6)):
        sim = SC.simulator(params, inputs=inputs)
        while sim.mode != 3 and sim.t < 3.0:
            sim.advance(sim.t + 0.01)
        assert sim.mode == 3
        sim.advance(sim.t + 0.05)
        assert sim.outputs_now()["tip_vx"] == pytest.approx(speed, abs=1e-9)
