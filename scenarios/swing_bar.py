"""The swing bar of wang2019 Sec 3.1 (Fig 4-6, Table 2), written as bodies and joints.

Three slender bars.  Bar 1 (L1, M1) is horizontal, hinged at the fixed point O about the
vertical z axis (a ``PinJoint``: angle q_H, rate dq_H) and driven by the torque T about that
axis.  Bar 2 (L2, M2) hangs from bar 1's outer end B by a ball joint: wang2019's "nonholonomic
kinematic link", a ``QuaternionJoint`` whose orientation is the quaternion S_j = (sigma_w,
sigma_x, sigma_y, sigma_z) and whose speeds are the body-fixed angular velocities dq_x, dq_y,
dq_z of bar 2 relative to bar 1 (and sigma_n = S_j . dS_j/dt, 0 by the normalization, the
constraint ``ball_normalization``).  Bar 3 (L3, M3) is welded (``WeldJoint``) at right angles
to bar 2's far end E2.  Gravity g along -z; the global damping b acts on every bar's mass
centre as the force -b v (wang2019 Table 1, "linear damper", on the bodies' velocities).
Four degrees of freedom: q_H and the three rotations of the ball joint (Sec 3.1).

The frame layout of Fig 4-5 is not in the text; this one, drawn at the start
(q_H = 0, S_j = [sqrt(2)/2, 0, sqrt(2)/2, 0]: 90 degrees about bar 1's y axis)::

        z (N.z, up)
        |
        |  hinge: q_H, T        ball joint: S_j          (weld)
        O======== bar 1 ========B======== bar 2 ========E2 ---> x (N.x)
       (pin about N.z)    (bar1.x: O -> B)  (bar2.z: B -> E2)  |
                                                               | bar 3 (bar3.x = bar2.x:
                                                               |        E2 -> E3)
                                                               E3
        bar 1: mass centre at L1/2 on bar1.x; inertia M1 L1^2/12 about bar1.y, bar1.z
        bar 2: mass centre at L2/2 on bar2.z; inertia M2 L2^2/12 about bar2.x, bar2.y
        bar 3: frame = bar 2's; mass centre at L3/2 on bar3.x; M3 L3^2/12 about bar3.y, z

S_j orients bar 2's frame in bar 1's (A(S_j) of haug_pavesic2023 eq 36 maps bar-2 components
to bar-1 components), so the start puts bar 2 straight out along bar 1 (bar2.z = bar1.x) and
bar 3 hanging down (bar2.x = -z): released with dq_H = -5 rad/s, bar 2 falls and swings.
(wang2019's own example script hangs bar 2 back along bar 1 instead; the text allows both.)
With T and b the motion damps toward the steady state of Fig 6: bar 1 turning at a constant
rate Omega and bars 2-3 at rest relative to it (the ball joint's rates 0), the drive's power
T Omega equal to the power b sum |v_i|^2 the damping dissipates.
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.physics.mechanics import (PinJoint, RigidBody, System, WeldJoint, dynamicsymbols,
                                     inertia)

from embed import Automaton, Mode, Model, Output, QuaternionJoint, Scenario, Start, Var

SWING = 1
PARAMS = sp.symbols("L1 L2 L3 M1 M2 M3 g b T")


def build_system():
    """The sympy System of the three bars and their joints; returns (system, bodies, points):
    bodies (bar1, bar2, bar3), points (O, B, E2, E3)."""
    L1, L2, L3, M1, M2, M3, g, b, T = PARAMS
    q_H, dq_H = dynamicsymbols("q_H dq_H")
    S_j = dynamicsymbols("sigma_w sigma_x sigma_y sigma_z")
    rates = dynamicsymbols("dq_x dq_y dq_z sigma_n")
    ground = RigidBody("ground")
    N = ground.frame

    def bar(name, m, length, axis_inertia):
        body = RigidBody(name, mass=m)
        body.inertia = (inertia(body.frame, *axis_inertia(m * length ** 2 / 12)), body.masscenter)
        return body

    bar1 = bar("bar1", M1, L1, lambda i: (0, i, i))      # along bar1.x
    bar2 = bar("bar2", M2, L2, lambda i: (i, i, 0))      # along bar2.z
    bar3 = bar("bar3", M3, L3, lambda i: (0, i, i))      # along bar3.x
    hinge = PinJoint("hinge", ground, bar1, q_H, dq_H, child_point=-L1 / 2 * bar1.x,
                     joint_axis=N.z)
    ball = QuaternionJoint("ball", bar1, bar2, S_j, rates, parent_point=L1 / 2 * bar1.x,
                           child_point=-L2 / 2 * bar2.z)
    weld = WeldJoint("weld", bar2, bar3, parent_point=L2 / 2 * bar2.z,
                     child_point=-L3 / 2 * bar3.x)
    system = System.from_newtonian(ground)
    system.add_joints(hinge, ball, weld)
    system.apply_uniform_gravity(-g * N.z)
    bodies = (bar1, bar2, bar3)
    for body in bodies:                                   # global damping (Table 1)
        system.add_loads((body.masscenter, -b * body.masscenter.vel(N)))
    system.add_loads((bar1.frame, T * N.z))               # the drive
    O = ground.masscenter
    B = ball.parent_point
    E2 = weld.parent_point
    E3 = bar3.masscenter.locatenew("E3", L3 / 2 * bar3.x)
    return system, bodies, (O, B, E2, E3)


def build_model():
    """The Model of the System (``Model.from_system``), with the System's pieces."""
    system, bodies, points = build_system()
    model = Model.from_system(system, params=PARAMS, name="swing_bar")
    return model, system, bodies, points


def energies(system, bodies):
    """Kinetic sum 1/2 m v^2 + 1/2 w.I.w, potential sum m g z and the damping's power
    b sum |v_i|^2 (>= 0 for b >= 0), over the bars."""
    g, b = sp.symbols("g b")
    N, O = system.frame, system.fixed_point
    kinetic = sum(body.kinetic_energy(N) for body in bodies)
    potential = sum(body.mass * g * body.masscenter.pos_from(O).dot(N.z) for body in bodies)
    damping = b * sum(body.masscenter.vel(N).dot(body.masscenter.vel(N)) for body in bodies)
    return kinetic, potential, damping


def build() -> Scenario:
    model, system, bodies, points = build_model()
    N, O = system.frame, system.fixed_point
    T = sp.Symbol("T")
    kinetic, potential, damping = energies(system, bodies)
    q_H, dq_H = dynamicsymbols("q_H dq_H")
    S = sp.Matrix(dynamicsymbols("sigma_w sigma_x sigma_y sigma_z"))
    outputs = []
    for k, P in enumerate(points[1:], start=1):
        r = P.pos_from(O)
        for c, e in zip("xyz", (N.x, N.y, N.z)):
            outputs.append(Output(f"end{k}_{c}", r.dot(e), f"{c} of the free end of bar {k}",
                                  "m"))
    outputs += [
        Output("q_H", q_H, "angle of the horizontal bar 1 about the vertical axis", "rad"),
        Output("dq_H", dq_H, "rate of bar 1 about the vertical axis", "rad/s"),
        *[Output(str(s.func), s, f"ball joint quaternion S_j, {n}", "", start=v)
          for s, n, v in zip(S, ("scalar part", "x part", "y part", "z part"),
                             (math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0))],
        *[Output(n, dynamicsymbols(n), f"ball joint angular velocity, bar 2 {a} axis", "rad/s")
          for n, a in (("dq_x", "x"), ("dq_y", "y"), ("dq_z", "z"))],
        Output("energy", kinetic + potential, "kinetic plus potential energy of the bars", "J"),
        Output("power_in", T * dq_H, "power of the drive, T times dq_H", "W"),
        # clipped: a sum of squares, expanded, may round below 0 at rest, and a non-finite
        # output stops the run (embed.hybrid.state.check_finite): sqrt(-1e-17) is nan
        Output("power_damping", sp.Max(0, damping), "power the damping dissipates, "
               "b sum |v_i|^2 (>= 0)", "W"),
        Output("quat_norm_error", sp.Abs(sp.sqrt(sp.Max(0, (S.T * S)[0])) - 1),
               "| |S_j| - 1 |", ""),
    ]
    aut = Automaton(model, model.constraints,
                    {SWING: Mode(name="swing", constraints=("ball_normalization",))},
                    outputs=outputs)
    h = math.sqrt(0.5)
    start = [Start("q_H", 0.0, "initial angle of bar 1 (Table 2)", "rad"),
             Start("sigma_w", h, "initial S_j, scalar part (Table 2)"),
             Start("sigma_y", h, "initial S_j, y part (Table 2)"),
             Start("dq_H", -5.0, "initial rate of bar 1 (Table 2)", "rad/s"),
             Start("dq_x", 0.0, "initial ball joint rate about bar 2's x (Table 2)", "rad/s"),
             Start("dq_y", 0.0, "initial ball joint rate about bar 2's y (Table 2)", "rad/s"),
             Start("dq_z", 0.0, "initial ball joint rate about bar 2's z (Table 2)", "rad/s")]
    parameters = [
        Var("L1", 1.0, "length of bar 1 (horizontal, driven)", "m"),
        Var("L2", 1.0, "length of bar 2 (ball joint at bar 1's end)", "m"),
        Var("L3", 0.5, "length of bar 3 (welded to bar 2's end)", "m"),
        Var("M1", 1.0, "mass of bar 1", "kg"),
        Var("M2", 1.0, "mass of bar 2", "kg"),
        Var("M3", 0.5, "mass of bar 3", "kg"),
        Var("g", 9.81, "gravitational acceleration (along -z)", "m/s2"),
        Var("b", 0.2, "global damping: force -b v on each bar's mass centre", "N.s/m"),
        Var("T", 2.0, "torque on bar 1 about the vertical axis", "N.m"),
    ]
    return Scenario("swing_bar", aut, parameters, start=start,
                    mode_description="active mode: 1 swing (the ball joint's quaternion "
                    "normalized)",
                    residual_description="|S_j^T S_j - 1|/2 and its rate (the normalization, "
                    "the only constraint)",
                    positive=("L1", "L2", "L3", "M1", "M2", "M3"), nonnegative=("g", "b"))
