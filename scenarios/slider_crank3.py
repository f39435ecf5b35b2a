"""Triple slider-crank: haug_pavesic2023 Sec 2.4 (Fig 1, eq 5-7) and Sec 7.2.

Three sliders translate along the coordinate axes: slider 1 at (q1, 0), slider 3 at
(q3, 0), slider 4 at (0, q4).  The crank (body 2, unit radius) is pivoted in slider 1
and turns with q2 relative to it; a massless link of unit length joins the point
(q1 + cos q2, sin q2) of its periphery to slider 3, and one of length 2 joins
slider 1 to slider 4.  The model uses the paper's own coordinates q1..q4 of Fig 1
with u_i = dq_i/dt and the two loop-closure constraints of eq 5,

    Phi_1 = ((q3 - q1 - cos q2)^2 + sin^2 q2 - 1) / 2 = 0,
    Phi_2 = (q1^2 + q4^2 - 4) / 2 = 0,

embedded on line (the paper's 12-coordinate, 4-body model of Sec 7.2 has the same
two degrees of freedom and the same motion).  With the crank's centroid on its
pivot the mass matrix in these coordinates is diag(m1 + m2, J2, m3, m4).  The
sliders do not rotate, so the paper's J1, J3, J4 do not enter.

The crank carries the torque of Sec 7.2, tau = -K q2 / ((pi/2)^2 - q2^2): it pulls
the crank's x2-axis back to the x-axis and grows without bound as q2 -> +-pi/2,
so a run started in a path component of eq 7 stays in it.  (The extracted paper
text garbles the formula's denominator; this is the reading with the stated
properties: restoring, odd in q2, infinite at q2 = +-pi/2.)  The default state is
the paper's start in C~3: q = (0, 0, 2, 2), dq/dt = (6, 2, 6, 0); q3_start = 0
starts in C~1 instead.  The torque is the paper's for C~1 and C~3 (|q2| < pi/2); it
does not guard C~2 and C~4, where the paper calls for "a similar torque".  Gravity g
acts along -y (the paper applies none: g = 0).

The regular configuration space splits into the four path components of eq 7;
``component(q)`` and the output ``component`` name the one a configuration lies in.
Inside a component Phi_q has full rank, but no fixed choice of dependent speeds
serves the whole motion: u4 cannot be dependent where slider 4 passes q4 = 0
(slider 1 at q1 = +-2), u1 not where q1 = 0, u2 not where q2 = 0.  The engine
re-selects the independent speeds as the dependent block of B degrades
(gillespie2005 Sec 5.4; the paper's change of chart, Sec 3.1).  Outputs are
the paper's q1..q4 and u1..u4 whichever speeds are independent, and the
multipliers lambda1, lambda2 of eq 5 (M qddot = Q + Phi_q^T lambda).

Long runs: the motion wanders over its energy surface and now and then drives the
crank within a few mrad of +-pi/2 (4.4 mrad in 100 s from the paper's start), where
the torque's barrier turns the crank back in well under a millisecond.  The fixed
1 ms RK4 step does not resolve that bounce (over 100 s it lost 8 % of the energy, or
left the constraint manifold, depending on rounding); solver = "adaptive" does
(energy balance within 5e-8 of the energy over 100 s).  The paper's 2000 steps
(2 s at 1 ms) stay far from it.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

from embed import Automaton, Mode, Model, Output, Scenario, Start, Var, holonomic
from embed import Box, Curve, Segment, Visuals
from embed.base.errors import InputError

MOVING = 1


def torque(q2, K, mod=math):
    """Crank torque of Sec 7.2, tau = -K q2 / ((pi/2)^2 - q2^2)."""
    return -K * q2 / ((mod.pi / 2) ** 2 - q2 ** 2)


def torque_potential(q2, K, mod=math):
    """V_tau(q2) = -(K/2) ln(1 - (2 q2/pi)^2), so that tau = -dV_tau/dq2 and V_tau(0) = 0."""
    return -K / 2 * mod.log(1 - (2 * q2 / mod.pi) ** 2)


def component(q, tol=1e-6):
    """Path component of eq 7 that q lies in: 1..4, or 0 on (or within tol of) the singular set.

    C~1, C~2: sliders 1 and 3 coincide (q3 = q1); C~3, C~4: q3 = q1 + 2 cos q2;
    C~1, C~3: -pi/2 < q2 < pi/2; C~2, C~4: pi/2 < q2 < 3 pi/2 (q2 taken mod 2 pi).
    The singular set, where the first row of eq 6 vanishes, is cos q2 = 0, q3 = q1.
    """
    q1, q2, q3, _ = q
    c = math.cos(q2)
    if abs(c) <= tol:
        return 0
    far = abs(q3 - q1) > abs(q3 - q1 - 2 * c)       # slider 3 on the q1 + 2 cos q2 branch
    return (3 if far else 1) + (0 if c > 0 else 1)


def _component_expr(q1, q2, q3):
    """``component`` as an expression (compiled with the outputs): 1..4, 0 when singular."""
    c = sp.cos(q2)
    d = sp.Abs(q3 - q1) - sp.Abs(q3 - q1 - 2 * c)
    step = lambda x: (1 + sp.sign(x)) / 2               # noqa: E731
    return (1 + 2 * step(d) + step(-c)) * sp.Abs(sp.sign(c)) * sp.Abs(sp.sign(d))


def build_model():
    """Unconstrained model: sliders 1, 3, 4 and the crank, with the torque and gravity."""
    q = dynamicsymbols("q1:5")
    u = dynamicsymbols("u1:5")
    m1, m2, m3, m4, J2, K, g = sp.symbols("m1 m2 m3 m4 J2 K g")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P1 = O.locatenew("P1", q[0] * N.x)               # slider 1 and the crank's pivot and centroid
    P1.set_vel(N, u[0] * N.x)
    P3 = O.locatenew("P3", q[2] * N.x)
    P3.set_vel(N, u[2] * N.x)
    P4 = O.locatenew("P4", q[3] * N.y)
    P4.set_vel(N, u[3] * N.y)
    A2 = N.orientnew("A2", "Axis", [q[1], N.z])      # crank frame: x2 along the crank
    A2.set_ang_vel(N, u[1] * N.z)
    bodies = [RigidBody("slider1", P1, N, m1, (inertia(N, 0, 0, 0), P1)),
              RigidBody("crank", P1, A2, m2, (inertia(A2, 0, 0, J2), P1)),
              RigidBody("slider3", P3, N, m3, (inertia(N, 0, 0, 0), P3)),
              RigidBody("slider4", P4, N, m4, (inertia(N, 0, 0, 0), P4))]
    loads = [(P1, -(m1 + m2) * g * N.y), (P3, -m3 * g * N.y), (P4, -m4 * g * N.y),
             (A2, torque(q[1], K, sp) * N.z)]
    kd = [qi.diff() - ui for qi, ui in zip(q, u)]
    model = Model(N, q, u, kd, bodies, loads, params=[m1, m2, m3, m4, J2, K, g],
                  name="slider_crank3")
    return model, q, u


def loop_constraints(q):
    """Eq 5 in the model's dynamicsymbols."""
    q1, q2, q3, q4 = q
    return [((q3 - q1 - sp.cos(q2)) ** 2 + sp.sin(q2) ** 2 - 1) / 2,
            (q1 ** 2 + q4 ** 2 - 4) / 2]


def visuals(model) -> Visuals:
    """Sliders 1 and 3 on the x rail, slider 4 on the y rail, the crank (unit length, angle q2)
    and the two links (eq 5: crank tip to slider 3, length 1; slider 1 to slider 4, length 2)."""
    q1, q2, q3, q4 = dynamicsymbols("q1:5")
    s = sp.Symbol("s")
    P1, P3, P4 = (q1, 0), (q3, 0), (0, q4)
    tip = (q1 + sp.cos(q2), sp.sin(q2))
    box = (0.3, 0.16, 0)
    return Visuals(model.frame, [
        Curve((s, 0), s, -3, 4, samples=2, name="x rail"), Curve((0, s), s, -3, 3, samples=2,
                                                                  name="y rail"),
        Box(P1, box, name="slider 1"), Box(P3, box, name="slider 3"),
        Box(P4, (0.16, 0.3, 0), name="slider 4"),
        Segment(P1, tip, name="crank", color="#c0392b"), Segment(tip, P3, name="link 3"),
        Segment(P1, P4, name="link 4")],
        points={"slider1": P1, "crank_tip": tip, "slider3": P3, "slider4": P4})


def build() -> Scenario:
    model, q, u = build_model()
    q1, q2, q3, q4 = q
    u1, u2, u3, u4 = u
    m1, m2, m3, m4, J2, K, g = sp.symbols("m1 m2 m3 m4 J2 K g")
    phis = loop_constraints(q)
    cons = {"slider3_link": holonomic(model, "slider3_link", phis[0]),
            "slider4_link": holonomic(model, "slider4_link", phis[1])}
    ke = ((m1 + m2) * u1 ** 2 + J2 * u2 ** 2 + m3 * u3 ** 2 + m4 * u4 ** 2) / 2
    pe = m4 * g * q4 + torque_potential(q2, K, sp)
    outputs = [
        Output("q1", q1, "slider 1 position along x", "m"),
        Output("q2", q2, "crank angle from the x-axis", "rad"),
        Output("q3", q3, "slider 3 position along x", "m", start=2.0),
        Output("q4", q4, "slider 4 position along y", "m", start=2.0),
        Output("u1", u1, "dq1/dt", "m/s", start=6.0),
        Output("u2", u2, "dq2/dt", "rad/s", start=2.0),
        Output("u3", u3, "dq3/dt", "m/s", start=6.0),
        Output("u4", u4, "dq4/dt", "m/s"),
        Output("tau", torque(q2, K, sp), "torque applied to the crank", "N.m"),
        Output("kinetic_energy", ke, "kinetic energy", "J"),
        Output("potential_energy", pe, "potential of gravity and of the crank torque, "
               "m4 g q4 - (K/2) ln(1 - (2 q2/pi)^2)", "J"),
        Output("component", _component_expr(q1, q2, q3),
               "path component of eq 7 (1..4; 0 at a singular configuration)", start=3.0),
        Output("lambda1", multiplier="slider3_link", unit="N/m", description="multiplier of "
               "Phi_1 (eq 5); the tension of the unit link is -lambda1 x 1 m"),
        Output("lambda2", multiplier="slider4_link", unit="N/m", description="multiplier of "
               "Phi_2 (eq 5); the tension of the link of length 2 is -lambda2 x 2 m"),
    ]
    aut = Automaton(model, cons, {MOVING: Mode(name="moving", constraints=tuple(cons))},
                    outputs=outputs)
    parameters = [
        Var("m1", 2.0, "mass of slider 1", "kg"),
        Var("m2", 10.0, "mass of the crank (centroid on its pivot in slider 1)", "kg"),
        Var("J2", 10.0, "moment of inertia of the crank about its pivot", "kg.m2"),
        Var("m3", 2.0, "mass of slider 3", "kg"),
        Var("m4", 2.0, "mass of slider 4", "kg"),
        Var("K", 100.0, "gain of the crank torque tau = -K q2 / ((pi/2)^2 - q2^2)", "N.m"),
        Var("g", 0.0, "gravitational acceleration along -y (the paper applies none)", "m/s2"),
    ]
    start = [
        Start("q1", 0.0, "initial position of slider 1 along x", "m"),
        Start("q2", 0.0, "initial crank angle from the x-axis", "rad"),
        Start("q3", 2.0, "initial position of slider 3 along x (0 starts in C~1)", "m"),
        Start("q4", 2.0, "initial position of slider 4 along y", "m"),
        Start("u1", 6.0, "initial dq1/dt", "m/s"),
        Start("u2", 2.0, "initial dq2/dt", "rad/s"),
        Start("u3", 6.0, "initial dq3/dt (the engine recomputes the dependent rates, here "
              "u3 and u4, from the loop constraints)", "m/s"),
        Start("u4", 0.0, "initial dq4/dt (recomputed: dependent at the paper's start)", "m/s"),
    ]

    def initial_state(p):
        q0 = np.array([p[f"q{i}_start"] for i in range(1, 5)], dtype=float)
        if component(q0) == 0:
            raise InputError(f"start configuration {q0.tolist()} is singular (cos q2 = 0, "
                             "q3 = q1); start inside a path component of eq 7")
        return q0, np.array([p[f"u{i}_start"] for i in range(1, 5)], dtype=float)

    return Scenario("slider_crank3", aut, parameters, visuals=visuals(model), initial_state=initial_state, start=start,
                    mode_description="active mode (1: moving; the only one)",
                    residual_description="largest residual of the loop constraints (eq 5) and "
                    "of their rates (Phi_q qdot = 0)",
                    # a run visits five partitions of the speeds, each compiled on the spot
                    # (what that costs: docs/design.md, facts)
                    embedding="symbolic",
                    positive=("m1", "m2", "J2", "m3", "m4"), nonnegative=("K",))
