"""Seven-link planar biped in an oscillatory motion: braun_goldfarb2012 Sec 3.2 (Fig 3).

Coordinates (the paper's nine absolute ones), x horizontal forward, y up, angles from the
x-axis counterclockwise:

    q = [x, y, theta, theta1, theta2, theta3, theta4, theta5, theta6]

(x, y) is the centre of mass of the upper body (head, arms and trunk, "HAT"), at l_c from the
hip along the trunk, whose direction is (cos theta, sin theta).  Leg 1 (thigh theta1, shank
theta2, foot theta3) is the forward leg, leg 2 (theta4, theta5, theta6) the backward one; a
segment of angle theta_i runs from its upper joint to its lower one along -(cos theta_i,
sin theta_i).  Foot frames sit at the ankles: the forward foot's heel is at (-b, -h) in its
frame, the backward foot's toe at (a, -h).  Speeds u = dq/dt (the paper's v).

Constraints exactly as printed (t the time, omega = pi 1/s; the paper's Phi_q and Phi_v):

    Phi_q1 = y - l_c sin(theta) - l1 sin(theta1) - l2 sin(theta2) - h cos(theta3) - b sin(theta3)
    Phi_q2 = y - l_c sin(theta) - l1 sin(theta4) - l2 sin(theta5) - h cos(theta6) + a sin(theta6)
    Phi_q3 = theta2 - theta1 + pi/10 (1 - cos(omega t))
    Phi_q4 = theta5 - theta4 + pi/10 (1 - cos(omega t))
    Phi_q5 = theta - (4 pi/9 - pi/18 (1 - cos(omega t)))
    Phi_q6 = theta3 - pi/18 (1 + cos(omega t))
    Phi_q7 = theta6 + pi/18 (1 - cos(omega t))
    Phi_v1 = x' + l_c sin(theta) theta' + l1 sin(theta1) theta1' + l2 sin(theta2) theta2'
             + (h cos(theta3) + b sin(theta3)) theta3'
    Phi_v2 = x' + l_c sin(theta) theta' + l1 sin(theta4) theta4' + l2 sin(theta5) theta5'
             + (h cos(theta6) - a sin(theta6)) theta6'

Phi_q1, Phi_q2 hold the forward heel and the backward toe on the ground (y = 0), Phi_v1,
Phi_v2 keep them from sliding (they are the time derivatives of the heel's and toe's x, but
"the integration constants are unknown", so they stay velocity constraints), the other five
drive the knees, the trunk and the feet.  Nine constraints on nine speeds: one mode with 0
degrees of freedom, whose motion is fixed by the constraints and the start (the two
integration constants of Phi_v); the dynamics only give the constraint forces (the joint
torques and ground reactions that carry out the motion).  Period 2 pi/omega = 2 s.

Start: the paper's (slightly inconsistent) q(0) = [0.056, 1.2, 1.4, 2, 2, 0.35, 1.19, 1.19, 0],
v(0) = 0.  The engine makes it consistent (docs/design.md, "Consistent start"): q projected
on Phi_q = 0 by least squares, then u on the nine velocity constraints in the mass metric;
``start_correction`` reports the norm of the change.  ``consistent_start = 0`` keeps it
(refused: a 0-dof mode cannot step off its constraints).

Lengths and masses: the paper takes them from its ref [28], which the text does not give.
Here an anthropomorphic set from Winter, "Biomechanics and Motor Control of Human Movement",
4th ed. (2009), Table 4.1 and Fig 4.1 (Dempster's data), for a body of height H = 1.8 m and
mass M = 75 kg: thigh l1 = 0.245 H, shank l2 = 0.246 H, ankle height h = 0.039 H, foot length
0.152 H; HAT (greater trochanter to glenohumeral joint, 0.288 H) with its centre of mass 0.626
of that from the hip: l_c = 0.626 x 0.288 H.  Mass fractions (radius of gyration about the
segment's centre of mass, fraction of its length): HAT 0.678 (0.496), thigh 0.100 (0.323),
shank 0.0465 (0.302), foot 0.0145 (0.475); thigh and shank centres at 0.433 of their length
from the upper joint.  The ankle-to-heel distance b = 0.06 m is this model's choice (Winter
gives none; with it the paper's q(0) is off the constraints by about 1 cm, "slightly"), the
toe a = 0.152 H - b; the foot's centre of mass is placed at ((a - b)/2, -h/2) in its frame.
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

from embed import (Automaton, Curve, Mode, Model, Output, Scenario, Segment, Sphere, Start, Var,
                   Visuals, holonomic, motion)

MOVING = 1
NAMES = ("x", "y", "theta", "theta1", "theta2", "theta3", "theta4", "theta5", "theta6")
Q0 = (0.056, 1.2, 1.4, 2.0, 2.0, 0.35, 1.19, 1.19, 0.0)     # Fig 3 caption
H, M = 1.8, 75.0                                            # body height (m), mass (kg)
B_HEEL = 0.06
LENGTHS = {"l_c": 0.626 * 0.288 * H, "l1": 0.245 * H, "l2": 0.246 * H, "h": 0.039 * H,
           "a": 0.152 * H - B_HEEL, "b": B_HEEL}
MASSES = {"m_c": 0.678 * M, "m1": 0.100 * M, "m2": 0.0465 * M, "m3": 0.0145 * M}
GYRATION = {"m_c": 0.496 * 0.288 * H, "m1": 0.323 * LENGTHS["l1"],
            "m2": 0.302 * LENGTHS["l2"], "m3": 0.475 * 0.152 * H}


def symbols():
    """The model's dynamicsymbols (q, u) and its parameter symbols, in one place."""
    q = dynamicsymbols(" ".join(NAMES))
    u = dynamicsymbols(" ".join("d" + n for n in NAMES))
    names = "l_c l1 l2 h a b m_c m1 m2 m3 J_c J1 J2 J3 g omega"
    return q, u, dict(zip(names.split(), sp.symbols(names)))


def build_model():
    """The unconstrained seven bodies, M qddot = Q (gravity along -y): Kane's F_r + F_r* = 0
    (gillespie2005 eq 1-4) in the paper's absolute coordinates."""
    q, u, s = symbols()
    x, y, th = q[:3]
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    frames = []
    for name, ang, w in zip(("trunk", "thigh1", "shank1", "foot1", "thigh4", "shank5", "foot6"),
                            q[2:], u[2:]):
        F = N.orientnew(name, "Axis", [ang, N.z])
        F.set_ang_vel(N, w * N.z)
        frames.append(F)
    T, A1, A2, A3, A4, A5, A6 = frames
    C = O.locatenew("C", x * N.x + y * N.y)                     # HAT centre of mass
    C.set_vel(N, u[0] * N.x + u[1] * N.y)
    hip = C.locatenew("hip", -s["l_c"] * T.x)
    bodies, loads = [], []

    qdot_u = {qi.diff(): ui for qi, ui in zip(q, u)}

    def body(name, P, F, m, J):
        P.set_vel(N, P.pos_from(O).dt(N).subs(qdot_u))
        bodies.append(RigidBody(name, P, F, s[m], (inertia(F, 0, 0, s[J]), P)))
        loads.append((P, -s[m] * s["g"] * N.y))

    body("hat", C, T, "m_c", "J_c")
    for (Ath, Ash, Aft), tag in (((A1, A2, A3), "1"), ((A4, A5, A6), "2")):
        knee = hip.locatenew("knee" + tag, -s["l1"] * Ath.x)
        ankle = knee.locatenew("ankle" + tag, -s["l2"] * Ash.x)
        body("thigh" + tag, hip.locatenew("g_thigh" + tag, -0.433 * s["l1"] * Ath.x), Ath,
             "m1", "J1")
        body("shank" + tag, knee.locatenew("g_shank" + tag, -0.433 * s["l2"] * Ash.x), Ash,
             "m2", "J2")
        body("foot" + tag, ankle.locatenew("g_foot" + tag, (s["a"] - s["b"]) / 2 * Aft.x
                                           - s["h"] / 2 * Aft.y), Aft, "m3", "J3")
    kd = [qi.diff() - ui for qi, ui in zip(q, u)]
    params = [s[k] for k in ("l_c", "l1", "l2", "h", "a", "b", "m_c", "m1", "m2", "m3",
                             "J_c", "J1", "J2", "J3", "g", "omega")]
    return Model(N, q, u, kd, bodies, loads, params=params, name="biped7")


def visuals(N) -> Visuals:
    """The ground y = 0, the upper body from the hip through its centre of mass (x, y) to the
    shoulder (0.288 H from the hip: l_c / 0.626) with the head, each leg's thigh, shank and foot
    (the sole from heel to toe, joined to the ankle; the forward leg blue, the backward one
    orange)."""
    q, _, s = symbols()
    x, y, th = q[:3]
    u = sp.Symbol("u")

    def along(p, length, a):          # from p, length back along the angle a
        return p[0] - length * sp.cos(a), p[1] - length * sp.sin(a)

    hip = along((x, y), s["l_c"], th)
    shoulder = along(hip, -s["l_c"] / 0.626, th)
    items = [Curve((u, 0), u, -0.8, 0.8, samples=2, name="ground", color="#7f8c8d",
                   width=3),
             Segment(hip, shoulder, name="trunk (HAT)", color="#2c3e50", width=7),
             Segment(shoulder, along(shoulder, -0.06, th), name="neck", color="#2c3e50", width=4),
             Sphere(along(shoulder, -0.16, th), 0.1, name="head", color="#2c3e50")]
    points = {"C": (x, y), "hip": hip}
    for tag, (t1, t2, t3), color in (("1", q[3:6], "#1f4e79"), ("2", q[6:9], "#d35400")):
        knee = along(hip, s["l1"], t1)
        ankle = along(knee, s["l2"], t2)
        c, sn = sp.cos(t3), sp.sin(t3)              # the foot frame's x and y axes
        heel, toe = [(ankle[0] + d * c + s["h"] * sn, ankle[1] + d * sn - s["h"] * c)
                     for d in (-s["b"], s["a"])]     # (d, -h) in the foot frame
        items += [Segment(hip, knee, name="thigh" + tag, color=color, width=6),
                  Segment(knee, ankle, name="shank" + tag, color=color, width=5),
                  Segment(ankle, heel, name="foot" + tag, color=color, width=3),
                  Segment(heel, toe, name="sole" + tag, color=color, width=3),
                  Segment(toe, ankle, name="instep" + tag, color=color, width=3)]
        points.update({"knee" + tag: knee, "ankle" + tag: ankle, "heel" + tag: heel,
                       "toe" + tag: toe})
    return Visuals(N, items, points=points)


def phi_q(q, s, t):
    """The paper's Phi_q (Sec 3.2), seven rows, rheonomic in t."""
    x, y, th, t1, t2, t3, t4, t5, t6 = q
    c = 1 - sp.cos(s["omega"] * t)
    pi = sp.pi
    ground = y - s["l_c"] * sp.sin(th)
    return [ground - s["l1"] * sp.sin(t1) - s["l2"] * sp.sin(t2) - s["h"] * sp.cos(t3)
            - s["b"] * sp.sin(t3),
            ground - s["l1"] * sp.sin(t4) - s["l2"] * sp.sin(t5) - s["h"] * sp.cos(t6)
            + s["a"] * sp.sin(t6),
            t2 - t1 + pi / 10 * c,
            t5 - t4 + pi / 10 * c,
            th - (4 * pi / 9 - pi / 18 * c),
            t3 - pi / 18 * (1 + sp.cos(s["omega"] * t)),
            t6 + pi / 18 * c]


def phi_v(q, u, s):
    """The paper's Phi_v (Sec 3.2), two rows, linear in the speeds."""
    x, y, th, t1, t2, t3, t4, t5, t6 = q
    dx, dy, dth, d1, d2, d3, d4, d5, d6 = u
    common = dx + s["l_c"] * sp.sin(th) * dth
    return [common + s["l1"] * sp.sin(t1) * d1 + s["l2"] * sp.sin(t2) * d2
            + (s["h"] * sp.cos(t3) + s["b"] * sp.sin(t3)) * d3,
            common + s["l1"] * sp.sin(t4) * d4 + s["l2"] * sp.sin(t5) * d5
            + (s["h"] * sp.cos(t6) - s["a"] * sp.sin(t6)) * d6]


PHI_Q_NAMES = ("heel1_height", "toe2_height", "knee1", "knee2", "trunk", "foot1", "foot2")
PHI_V_NAMES = ("heel1_slide", "toe2_slide")


def build() -> Scenario:
    model = build_model()
    q, u, s = symbols()
    t = dynamicsymbols._t            # the time of a rheonomic Phi(q, t) (docs/guide.md)
    rows_q, rows_v = phi_q(q, s, t), phi_v(q, u, s)
    cons = {n: holonomic(model, n, e) for n, e in zip(PHI_Q_NAMES, rows_q)}
    cons.update({n: motion(model, n, e) for n, e in zip(PHI_V_NAMES, rows_v)})
    # dPhi_q/dt along the motion (u = dq/dt) and Phi_v: the velocity-level residual
    rates = [sum(sp.diff(e, qi) * ui for qi, ui in zip(q, u)) + sp.diff(e, t) for e in rows_q]
    q0 = dict(zip(NAMES, Q0))
    outputs = [Output(n, qi, d, unit, start=q0[n]) for n, qi, d, unit in zip(
        NAMES, q, ("x of the upper body's centre of mass", "y of the upper body's centre of "
                   "mass", "angle of the trunk", "angle of the forward thigh", "angle of the "
                   "forward shank", "angle of the forward foot", "angle of the backward thigh",
                   "angle of the backward shank", "angle of the backward foot"),
        ("m", "m") + ("rad",) * 7)]
    # evaluate=False: Max's search for comparable arguments took most of the build
    # (docs/design.md, facts)
    outputs.append(Output("velocity_residual", sp.Max(*[sp.Abs(e) for e in rates + rows_v],
                                                     evaluate=False),
                          "largest |dPhi_q/dt| and |Phi_v| (m/s, rad/s)", ""))
    outputs.append(Output("start_correction", description="norm of the change that made the "
                          "start consistent, |(dq, du)| (q least squares, u mass metric)"))
    outputs += [Output(f"lambda_{n}", multiplier=n, description=f"multiplier of {n} "
                       "(M qddot = Q + B^T lambda)", unit="") for n in cons]
    aut = Automaton(model, cons, {MOVING: Mode(name="moving", constraints=tuple(cons))},
                    outputs=outputs)
    descr = {"l_c": "hip to the upper body's centre of mass (Winter 0.626 x 0.288 H)",
             "l1": "thigh, hip to knee (Winter 0.245 H)", "l2": "shank, knee to ankle "
             "(Winter 0.246 H)", "h": "ankle height above the sole (Winter 0.039 H)",
             "a": "ankle to toe along the sole (0.152 H - b)", "b": "heel to ankle along the "
             "sole (this model's choice)"}
    parameters = [Var(k, v, descr[k], "m") for k, v in LENGTHS.items()]
    parameters += [Var(k, v, f"mass of the {w} (Winter {f})", "kg") for (k, v), w, f in zip(
        MASSES.items(), ("upper body (HAT)", "thigh", "shank", "foot"),
        ("0.678 M", "0.100 M", "0.0465 M", "0.0145 M"))]
    parameters += [Var(k.replace("m", "J"), MASSES[k] * r ** 2, f"moment of inertia of the "
                       f"{w} about its centre of mass (Winter's radius of gyration)", "kg.m2")
                   for (k, r), w in zip(GYRATION.items(), ("upper body", "thigh", "shank",
                                                            "foot"))]
    parameters += [Var("g", 9.81, "gravitational acceleration along -y", "m/s2"),
                   Var("omega", math.pi, "angular frequency of the driven motion", "rad/s")]
    start = [Start(n, v, f"initial {n} (braun_goldfarb2012 Fig 3, slightly inconsistent)",
                   "m" if n in ("x", "y") else "rad") for n, v in zip(NAMES, Q0)]
    return Scenario("biped7", aut, parameters, start=start, visuals=visuals(model.frame),
                    mode_description="active mode (1: moving; the only one)",
                    residual_description="largest |Phi_q| of the seven position constraints "
                    "and |B u + C| of the nine velocity rows (exact in this 0-dof mode)",
                    positive=("l_c", "l1", "l2", "m_c", "m1", "m2", "m3", "omega"),
                    nonnegative=("h", "a", "b", "J_c", "J1", "J2", "J3", "g"))
