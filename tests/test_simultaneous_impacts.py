"""Several impacts at one instant: a reset map returning a list of jumps, applied in order
(issue 31), checked against the test's own sequential impact computation.

A user's model, public API only: a cart (mass m0, position x) on a horizontal rail carries
a double pendulum (point masses m1, m2 at the ends of massless links l1, l2; absolute angles
th1, th2 from the downward vertical).  When the thigh th1 swings back onto a stop on the cart
(th1 = s) a latch locks the knee (th2 = th1) in the same instant: the reset map of the stop's
guard returns two plastic impacts (wang2019 eq 19, mueller eq 7), the stop first, then stop
and knee together:

    u1 = u- - M^-1 J_s^T (J_s M^-1 J_s^T)^-1 J_s u-          J_s = [0, 1, 0]
    u+ = u1 - M^-1 J^T (J M^-1 J^T)^-1 J u1                 J = [J_s; 0, -1, 1]

with M the mass matrix written here from the masses' positions (Lagrange, not the engine's
Kane terms).  Both constraints are internal to the cart and pendulum, so every impact keeps
the horizontal momentum; each loses kinetic energy.  The engine counts two impacts, one event
and, for the Zeno watch, one gap (impacts at one instant are not an accumulation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import Automaton, Guard, Jump, Mode, Model, Simulator, holonomic

FREE, STOPPED, LOCKED = 1, 2, 3
P = {"m0": 2.0, "m1": 0.7, "m2": 0.4, "l1": 0.6, "l2": 0.5, "g": 9.81, "s": -0.2}
Q0, U0 = (0.0, 0.5, 0.9), (0.3, -2.0, 1.5)


def automaton():
    x, th1, th2 = dynamicsymbols("x th1 th2")
    v, w1, w2 = dynamicsymbols("v w1 w2")
    m0, m1, m2, l1, l2, g, s = sp.symbols("m0 m1 m2 l1 l2 g s")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    sub = {x.diff(): v, th1.diff(): w1, th2.diff(): w2}
    C = O.locatenew("C", x * N.x)
    K = C.locatenew("K", l1 * (sp.sin(th1) * N.x - sp.cos(th1) * N.y))
    F = K.locatenew("F", l2 * (sp.sin(th2) * N.x - sp.cos(th2) * N.y))
    for pt in (C, K, F):
        pt.set_vel(N, pt.pos_from(O).dt(N).subs(sub))
    model = Model(N, [x, th1, th2], [v, w1, w2], [x.diff() - v, th1.diff() - w1,
                                                   th2.diff() - w2],
                  [Particle("cart", C, m0), Particle("knee", K, m1), Particle("foot", F, m2)],
                  [(K, -m1 * g * N.y), (F, -m2 * g * N.y)], params=[m0, m1, m2, l1, l2, g, s],
                  name="cart_double_pendulum")
    cons = {"stop": holonomic(model, "stop", th1 - s),
            "knee": holonomic(model, "knee", th2 - th1)}

    def strike(ctx):              # the stop, then the latch, at one instant
        return [Jump(STOPPED, impact=True, impact_constraints=("stop",)),
                Jump(LOCKED, impact=True, impact_constraints=("knee", "stop"))]

    modes = {FREE: Mode(name="free", guards=(Guard("stop_strike", th1 - s, -1, reset=strike),)),
             STOPPED: Mode(name="stopped", constraints=("stop",)),
             LOCKED: Mode(name="locked", constraints=("knee", "stop"))}
    outputs = {"x": x, "v": v}
    return Automaton(model, cons, modes, {}, outputs)


def mass_matrix(q):
    """M(q) of T = 1/2 u^T M u, written here from the positions (x, 0), knee, foot."""
    _, t1, t2 = q
    m0, m1, m2, l1, l2 = (P[k] for k in ("m0", "m1", "m2", "l1", "l2"))
    c1, c2, c12 = math.cos(t1), math.cos(t2), math.cos(t1 - t2)
    return np.array([[m0 + m1 + m2, (m1 + m2) * l1 * c1, m2 * l2 * c2],
                     [(m1 + m2) * l1 * c1, (m1 + m2) * l1 ** 2, m2 * l1 * l2 * c12],
                     [m2 * l2 * c2, m2 * l1 * l2 * c12, m2 * l2 ** 2]])


def plastic(M, J, u):
    """Plastic impact over the rows J (wang2019 eq 19)."""
    MiJT = np.linalg.solve(M, J.T)
    return u - MiJT @ np.linalg.solve(J @ MiJT, J @ u)


@pytest.fixture(scope="module")
def run():
    sim = Simulator(automaton(), dict(P), solver="rk4", h_max=1e-3)
    sim.start(0.0, list(Q0), list(U0))
    sim.advance(1.0)
    return sim


def test_jumps_applied_in_order_at_one_instant(run):
    sim = run
    assert len(sim.events) == 1
    t, label, before, after = sim.events[0]
    assert (label, before, after) == ("stop_strike", FREE, LOCKED)
    assert sim.impact_count == 2 and len(sim.impacts) == 2
    (t1, g1, q1, um, u1), (t2, g2, q2, u1b, up) = sim.impacts
    assert t1 == t2 == t and g1 == g2 == "stop_strike"
    np.testing.assert_array_equal(q1, q2)
    assert q1[1] == pytest.approx(P["s"], abs=1e-10)           # located on the stop
    M = mass_matrix(q1)
    J_s = np.array([[0.0, 1.0, 0.0]])
    J = np.vstack((J_s, [[0.0, -1.0, 1.0]]))
    # the test's own sequence: the stop, then stop and knee from the first's result
    u1_ref = plastic(M, J_s, um)
    up_ref = plastic(M, J, u1_ref)
    scale = np.max(np.abs(um))
    np.testing.assert_allclose(u1, u1_ref, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(u1b, u1, rtol=0, atol=0)        # the second starts at the first
    np.testing.assert_allclose(up, up_ref, rtol=0, atol=1e-12 * scale)
    # the order shows: the knee alone first would leave other speeds between the two
    assert np.max(np.abs(plastic(M, J[1:], um) - u1)) > 0.1
    # the stop stops, the latch locks; the cart keeps the horizontal momentum, T falls
    assert abs(u1[1]) <= 1e-12 * scale and abs(up[1]) <= 1e-12 and abs(up[2]) <= 1e-12
    for a, b in ((um, u1), (u1, up)):
        assert (M @ b)[0] == pytest.approx((M @ a)[0], rel=1e-12)
        assert b @ M @ b < a @ M @ a - 1e-3


def test_one_instant_is_one_gap_for_the_zeno_watch(run):
    """The two impacts are counted, but the watch for impacts accumulating in time sees one
    gap (impacts at one instant are resolved in order, not an accumulation)."""
    st = run.state
    assert st.impact_count == 2 and st.event_count == 1
    assert st.impact_gaps == [math.inf]
    assert st.zeno_count == 0


def test_locked_motion_afterwards(run):
    """After the impacts the pendulum is rigid on the cart (both constraints held) and the
    cart rolls at the speed the impacts left it: no horizontal force acts."""
    sim = run
    _, _, q, _, up = sim.impacts[-1]
    assert sim.state.mode == LOCKED
    assert abs(sim.q[1] - P["s"]) <= 1e-10 and abs(sim.q[2] - sim.q[1]) <= 1e-10
    np.testing.assert_allclose(sim.u, up, rtol=0, atol=1e-10)
    t_hit = sim.impacts[-1][0]
    assert sim.q[0] == pytest.approx(q[0] + up[0] * (sim.t - t_hit), abs=1e-10)
