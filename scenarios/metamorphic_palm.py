"""Metamorphic palm: a spherical five-bar whose drive 1 locks at run time (mueller Fig 1, eq 5-7).

mueller's example of a variable topology mechanism is the metamorphic hand of his reference [4]
(Wei, Dai, Wang, Luo 2011): its palm is a spherical five-bar linkage driven by two motors,
"folded so to essentially collapse ... by locking the drive 1, thus reducing its DOF".

Geometry.  Five links joined in a loop by five revolute joints whose unit axes z_1 ... z_5 all
pass through the centre O.  Link i (i = 1..4) carries joint i and joint i+1; link 5 is the
ground (the palm's base) and carries joints 5 and 1.  The link angle alpha_i is the angle
between the axes of its two joints (the arc length of the link on the unit sphere).  Joint
angles theta_i turn link i relative to link i-1 about z_i (link 0 = link 5 = ground), so that
the loop closes when

    Rz(theta1) Rx(alpha1) Rz(theta2) Rx(alpha2) Rz(theta3) Rx(alpha3) Rz(theta4) Rx(alpha4)
        Rz(theta5) Rx(alpha5) = I                                              (closure)

(Rz, Rx rotations about the joint axis and about the common normal of two adjacent axes).
Ground frame N: z_1 = N.z, and z_5 = Rx(-alpha5) N.z.

Coordinates and speeds: the open chain ground - 1 - 2 - 3 - 4 in q = (theta1 .. theta4),
u = (omega1 .. omega4), omega_i = d theta_i/dt.  The loop is closed at joint 5: its axis as
link 4 carries it, a = Rx(alpha4) z in link 4, must be the ground's z_5, two scalar holonomic
constraints h_1(q) = (a . x_5, a . y_5) = 0 (mueller's persistent constraints, eq 2; x_5, y_5
complete z_5 to the ground frame Rx(-alpha5) N).  theta5 and omega5 are outputs: theta5 =
atan2(y4' . x_5, x4' . x_5) (x4', y4' the axes of link 4's joint-5 frame) and omega5 =
-omega_link4 . z_5.  4 - 2 = 2 degrees of freedom, the two drives: drive 1 at joint 1 (tau1 on
link 1 about z_1) and drive 2 at joint 5 (tau2 on the ground about z_5, its reaction -tau2 z_5 on
link 4: power tau2 omega5).  The drives hold their home angles through a servo stiffness k
(torques -k (theta1 - theta1_home) and -k (theta5 - theta5_home) added to tau1, tau2), so that
the palm oscillates about its home pose instead of wandering into a singular configuration.

Locking drive 1 (input ``lock_drive1`` from 0 to 1) adds h_2(q) = theta1 - theta1_lock = 0
(theta1_lock, a discrete variable, set to theta1 at the lock): 2 dof -> 1.  Its reset map is
mueller eq 7's momentum-consistent jump with persistent constraints h_1, in the form without the
inverse of M:  [M J^T; J 0] [du; Lambda] = [0; -J u-], J = [J_1; J_2] (equal to eq 7 when
J_1 u- = 0: then J_2 N du = J_2 du = -J_2 u-).  ``lock_impulse`` is Lambda's h_2 entry, the
angular impulse (N.m.s) of the lock on link 1.  Releasing (lock_drive1 back to 0) removes h_2:
no jump.  A lock never adds kinetic energy (the jump is the M-orthogonal projection of u-).

Link angles: the search tool found Wei/Dai's papers (and their follow-ups on the palm's
dimensional synthesis) but not their link angles in any text it returns, so this is a
documented set of our own: base alpha5 = 60 deg between the two drive axes, alpha1 = alpha4 =
50 deg, alpha2 = alpha3 = 45 deg, a symmetric palm whose home pose (theta1 = 0.9 rad, theta2
= 1.0 rad, the rest closing the loop) is 0.4 rad or more from any singular configuration of
the loop.  Each link is a thin uniform circular arc of radius R and mass m on the sphere
(inertia about O in the link frame: I_xx = m R^2, I_yy, I_zz = m R^2 (1/2 +- sin 2a / 4a),
I_yz = m R^2 sin^2 a / 2a); gravity g acts along -N.y.

Default start: the home pose with omega1 = 1.5 rad/s, omega2 = -1 rad/s (omega3, omega4 from
the loop): the palm moves, so a lock at any time acts.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import (PinJoint, Point, ReferenceFrame, RigidBody, System,
                                     dynamicsymbols, inertia, inertia_of_point_mass)

from embed import Automaton, Guard, Jump, Mode, Model, Output, Scenario, Var, holonomic
from embed.base.errors import InputError

from embed.base.once import once

FREE, LOCKED = 1, 2
NAMES = ("alpha1", "alpha2", "alpha3", "alpha4", "alpha5")
ALPHA_DEG = (50.0, 45.0, 45.0, 50.0, 60.0)


def _rx(a):
    return np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])


def _rz(a):
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])


def closure_residual(th, alpha):
    """(a . x_5, a . y_5) of the closure, a the joint-5 axis that link 4 carries, for the joint
    angles th = (theta1 .. theta4) and link angles alpha (numpy; the constraint h_1)."""
    R = np.eye(3)
    for t, a in zip(th, alpha[:4]):
        R = R @ _rz(t) @ _rx(a)
    a5 = R[:, 2]
    G5 = _rx(-alpha[4])
    return np.array([a5 @ G5[:, 0], a5 @ G5[:, 1]])


def close_loop(th1, th2, alpha, guess=(1.0, 1.0)):
    """theta3, theta4 closing the loop for given theta1, theta2 (Newton on ``closure_residual``)."""
    x = np.array(guess, dtype=float)
    for _ in range(50):
        r = closure_residual([th1, th2, *x], alpha)
        if np.max(np.abs(r)) < 1e-15:
            return x
        J = np.empty((2, 2))
        for j in range(2):
            d = np.zeros(2)
            d[j] = 1e-7
            J[:, j] = (closure_residual([th1, th2, *(x + d)], alpha)
                       - closure_residual([th1, th2, *(x - d)], alpha)) / 2e-7
        x = x - np.linalg.solve(J, r)
    if np.max(np.abs(closure_residual([th1, th2, *x], alpha))) > 1e-12:
        raise InputError(f"metamorphic_palm: the loop does not close for theta1 = {th1}, "
                         f"theta2 = {th2} (link angles {np.degrees(alpha).round(3).tolist()} deg)")
    return x


def theta5_of(th, alpha):
    """theta5 closing the loop (numpy): Rz(theta5) = (R_4 Rx(alpha4))^T Rx(-alpha5)."""
    R = np.eye(3)
    for t, a in zip(th, alpha[:4]):
        R = R @ _rz(t) @ _rx(a)
    P = R.T @ _rx(-alpha[4])
    return math.atan2(P[1, 0], P[0, 0])


def home_theta5(th1=0.9, th2=1.0):
    """theta5 of the default start pose (the default home angle of drive 2)."""
    alpha = np.radians(ALPHA_DEG)
    return theta5_of([th1, th2, *close_loop(th1, th2, alpha)], alpha)


def _arc_inertia(frame, m, R, a):
    """Inertia about O of a thin uniform arc of radius R and angle a, from the frame's z axis
    towards -y in its y-z plane (link i between z_i and z_(i+1) = Rx(a) z)."""
    s2 = sp.sin(2 * a) / (4 * a)
    return inertia(frame, m * R ** 2, m * R ** 2 * (sp.Rational(1, 2) + s2),
                   m * R ** 2 * (sp.Rational(1, 2) - s2), iyz=m * R ** 2 * sp.sin(a) ** 2 / (2 * a))


def _centre(frame, R, a):
    """O -> mass centre of the arc link (on its bisector, at R sin(a/2) / (a/2))."""
    return R * sp.sin(a / 2) / (a / 2) * (-sp.sin(a / 2) * frame.y + sp.cos(a / 2) * frame.z)


def build_model():
    """The palm as bodies and joints (``Model.from_system``): the base (ground) and links 1-4
    joined by the revolute joints 1-4 (sympy ``PinJoint`` about each joint's axis through O),
    joint 5 (link 4 - base) as the loop closure h_1; gravity, drive and servo torques as loads."""
    q = dynamicsymbols("theta1:5")
    u = dynamicsymbols("omega1:5")
    al = sp.symbols(" ".join(NAMES))
    m, R, g, k, th1_home, th5_home = sp.symbols("m R g k theta1_home theta5_home")
    tau1, tau2 = sp.symbols("tau1 tau2")
    base = RigidBody("base")                      # the ground: N, O its frame and point
    N, O = base.frame, base.masscenter
    system = System.from_newtonian(base)
    parent, parent_point, axis_frame, links = base, O, N, []
    for i in range(4):
        a = al[i]
        L = ReferenceFrame(f"L{i + 1}")
        r = _centre(L, R, a)
        central = _arc_inertia(L, m, R, a) - inertia_of_point_mass(m, r, L)
        C = Point(f"C{i + 1}")
        link = RigidBody(f"link{i + 1}", C, L, m, (central, C))
        system.add_joints(PinJoint(f"joint{i + 1}", parent, link, q[i], u[i],
                                   parent_point=parent_point, child_point=-r,
                                   parent_interframe=axis_frame, joint_axis=axis_frame.z))
        links.append(link)
        parent, parent_point = link, -r
        axis_frame = L.orientnew(f"A{i + 1}", "Axis", [a, L.x])   # z: the next joint's axis
    for link in links:    # the same velocity, written from O (fixed in N and in every link):
        link.masscenter.v2pt_theory(O, N, link.frame)   # shorter than the joints' chain
    A4 = axis_frame
    G5 = N.orientnew("G5", "Axis", [-al[4], N.x])                # z: joint 5 on the ground
    theta5 = sp.atan2(A4.y.dot(G5.x), A4.x.dot(G5.x))
    omega5 = -links[3].frame.ang_vel_in(N).dot(G5.z)
    drive1 = tau1 - k * (q[0] - th1_home)
    drive2 = tau2 - k * (theta5 - th5_home)
    system.add_loads(*[(b.masscenter, -m * g * N.y) for b in links],
                     (links[0].frame, drive1 * N.z), (links[3].frame, -drive2 * G5.z))
    h1 = [A4.z.dot(G5.x), A4.z.dot(G5.y)]          # joint 5: its axes coincide (closure)
    system.add_holonomic_constraints(*h1)
    model = Model.from_system(system, params=[*al, m, R, g, k, th1_home, th5_home],
                              inputs=[tau1, tau2, sp.Symbol("lock_drive1")],
                              constraint_names=["loop_x", "loop_y"], name="metamorphic_palm")
    ke = sum(b.kinetic_energy(N) for b in links)
    pe = sum(m * g * b.masscenter.pos_from(O).dot(N.y) for b in links) \
        + k / 2 * ((q[0] - th1_home) ** 2 + (theta5 - th5_home) ** 2)
    return model, q, u, h1, theta5, omega5, ke, pe


def lock(ctx) -> Jump:
    """mueller eq 7 at the lock: [M J^T; J 0] [du; Lambda] = [0; -J u-] over the persistent loop
    rows and the new lock row (theta1 - theta1_lock: B = e_1); the jump's impulse is recorded."""
    M = ctx.mass_matrix()
    J = np.array([ctx.row(c)[0] for c in ("loop_x", "loop_y", "lock")])
    n, r = len(ctx.u), J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((r, r))]])
    z = np.linalg.solve(K, np.concatenate((np.zeros(n), -J @ ctx.u)))
    u_plus = ctx.u + z[:n]
    return Jump(LOCKED, {"theta1_lock": float(ctx.q[0]), "lock_impulse": float(-z[n + 2])},
                u=u_plus)


def build() -> Scenario:
    model, q, u, h1, theta5, omega5, ke, pe = build_model()
    lock_in, th1_lock = sp.symbols("lock_drive1 theta1_lock")
    cons = {**model.constraints, "lock": holonomic(model, "lock", q[0] - th1_lock)}
    modes = {
        FREE: Mode(name="free", constraints=("loop_x", "loop_y"), guards=(
            Guard("lock_drive1_on", 0.5 - lock_in, -1, reset=lock),)),
        LOCKED: Mode(name="drive1_locked", constraints=("loop_x", "loop_y", "lock"), guards=(
            Guard("lock_drive1_off", lock_in - 0.5, -1, reset=lambda ctx: Jump(FREE)),)),
    }
    outputs = [Output(f"theta{i + 1}", q[i], f"angle of joint {i + 1}", "rad") for i in range(4)]
    outputs.append(Output("theta5", theta5, "angle of joint 5 (ground relative to link 4)", "rad"))
    outputs += [Output(f"omega{i + 1}", u[i], f"rate of theta{i + 1}", "rad/s") for i in range(4)]
    outputs.append(Output("omega5", omega5, "rate of theta5", "rad/s"))
    outputs += [
        Output("energy", ke + pe, "kinetic energy plus the potentials of gravity and of the "
               "drives' servo stiffness", "J"),
        Output("loop_residual", sp.sqrt(h1[0] ** 2 + h1[1] ** 2), "sine of the angle between "
               "the joint-5 axis carried by link 4 and the ground's (closure of the loop)", ""),
        Output("lock_impulse", discrete="lock_impulse", unit="N.m.s",
               description="angular impulse of the lock on link 1 at the last lock (mueller "
               "eq 7's Lambda)"),
    ]
    aut = Automaton(model, cons, modes, {"theta1_lock": 0.0, "lock_impulse": 0.0}, outputs)
    deg = math.pi / 180
    parameters = [Var(nm, a * deg, f"link angle {nm} (between the axes of joints {i + 1} and "
                      f"{i % 5 + 2 if i < 4 else 1})", "rad")
                  for i, (nm, a) in enumerate(zip(NAMES, ALPHA_DEG))]
    parameters += [
        Var("m", 0.05, "mass of each moving link (a thin uniform arc)", "kg"),
        Var("R", 0.05, "radius of the links' arcs about O", "m"),
        Var("g", 9.81, "gravitational acceleration (along -N.y)", "m/s2"),
        Var("k", 0.1, "servo stiffness of each drive about its home angle", "N.m/rad"),
        Var("theta1_home", 0.9, "home angle of drive 1", "rad"),
        Var("theta5_home", round(home_theta5(), 12), "home angle of drive 2 (joint 5): its angle "
            "in the default start pose", "rad"),
        Var("theta1_start", 0.9, "initial theta1", "rad"),
        Var("theta2_start", 1.0, "initial theta2 (theta3, theta4 close the loop)", "rad"),
        Var("omega1_start", 1.5, "initial rate of theta1", "rad/s"),
        Var("omega2_start", -1.0, "initial rate of theta2 (omega3, omega4 from the loop)",
            "rad/s"),
    ]
    inputs = [Var("lock_drive1", False, "true locks drive 1 (theta1 held), false releases it",
                  type="Boolean"),
              Var("tau1", 0.0, "torque of drive 1 on link 1 about z_1", "N.m"),
              Var("tau2", 0.0, "torque of drive 2 at joint 5 (power tau2 omega5)", "N.m")]

    def initial_state(p):
        # once per parameters: an FMU instance's start and its initialization build a
        # simulator each, and the Newton closure ran twice (4-5 ms of its start, issue 30)
        q0, u0 = once(("metamorphic_palm", tuple(sorted(p.items()))),
                      lambda: _initial_state(p))
        return q0.copy(), u0.copy()

    def _initial_state(p):
        alpha = np.array([p[nm] for nm in NAMES], dtype=float)
        th1, th2 = p["theta1_start"], p["theta2_start"]
        th34 = close_loop(th1, th2, alpha)
        q0 = np.array([th1, th2, *th34])
        # the loop's rows at q0 (central differences of h_1) give omega3, omega4
        J = np.empty((2, 4))
        for j in range(4):
            d = np.zeros(4)
            d[j] = 1e-7
            J[:, j] = (closure_residual(q0 + d, alpha) - closure_residual(q0 - d, alpha)) / 2e-7
        w12 = np.array([p["omega1_start"], p["omega2_start"]])
        w34 = np.linalg.solve(J[:, 2:], -J[:, :2] @ w12)
        return q0, np.concatenate((w12, w34))

    return Scenario("metamorphic_palm", aut, parameters, inputs, initial_state=initial_state,
                    mode_description="active mode: 1 free (2 dof), 2 drive 1 locked (1 dof)",
                    residual_description="largest residual of the active constraints (loop "
                    "closure, lock; |Phi| and |Phi_q qdot|)",
                    embedding="numeric", positive=("m", "R"), nonnegative=("g", "k"))
