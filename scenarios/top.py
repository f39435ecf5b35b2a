"""Symmetric top with its tip held at unit distance from a fixed point: haug_pavesic2023 Sec 7.1.

A rigid body with centroid position r = (x, y, z) and Euler parameters p = (e0, e1, e2, e3)
(Appendix, e0 the scalar part) as its 7 generalized coordinates q = [r; p].  Its tip,
1 m from the centroid along the body -z axis, is the point s = r - A(p) u_z of Fig 4, held
at unit distance from the origin O (a massless bar of length 1 with ball joints: "top on
bar").  The holonomic constraints are the paper's

    Phi(q) = [ 1/2 (r^T r - 2 r^T A(p) u_z) ;  1/2 (p^T p - 1) ] = 0     (Sec 7.1, eq 37)

so 7 - 2 = 5 degrees of freedom.  Two sets of generalized speeds (``build(speeds)``):

- "omega" (default): u = [rdot; omega'; pn], omega' = (wx, wy, wz) the body angular
  velocity and pn = p^T pdot, with pdot = 1/2 G(p)^T omega' + p pn (eq 38; [G; p^T] is
  orthogonal for unit p).  The normalization constraint reads |p|^2 pn = 0, so pn is the
  dependent speed everywhere; only the tip constraint picks a dependent speed (dz while
  the bar hangs down).
- "qdot": the paper's u = qdot (dx, dy, dz, de0..de3), omega' = 2 G(p) pdot (eq 38).  The
  mass matrix diag(m I, 4 G^T J' G) is singular along p (G p = 0) but positive definite on
  the null space of Phi_q (Sec 6), which is all the embedding (D^T M D) needs.  The
  normalization row of B is p^T: whichever e_i carries the dependent speed, it passes
  through 0 as the top spins (e0 every pi/omega_z s), and the dependent block becomes
  singular there.  These speeds need the re-selection of independent speeds
  (gillespie2005 Sec 5.4; the paper's chart changes, Sec 4.1, 7.1) for any motion but
  the upright sleeping top.

Gravity g acts along -z (the paper's total energy has m g r_z).

Start as in Sec 7.1: centroid at O, body axes along the fixed ones (q0 = [0,0,0,1,0,0,0]),
tip 1 m below O, rdot0 = 0, body angular velocity omega0 = (eps, eps, omega_z) with
eps = 1e-12, pdot0 = 1/2 G(p0)^T omega0 (eq 38).  The paper's Fig 5 shows the top
stabilizing at a spin of about 13.5 rad/s: the default.  (Linearized about the sleeping
state, the tilt grows unless omega_z > 12.956 rad/s for these m, J and g = 9.81; the test
checks the growth rate.)
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

from embed import Automaton, Feasible, Mode, Model, Output, Scenario, Var, holonomic
from embed import Cylinder, Segment, Sphere, Visuals

TOP = 1
COORDS = ("x", "y", "z", "e0", "e1", "e2", "e3")
SPEEDS = tuple("d" + c for c in COORDS)
OMEGA_SPEEDS = ("dx", "dy", "dz", "wx", "wy", "wz", "pn")


def G_matrix(p):
    """G(p) = [-e, -e~ + e0 I] (Appendix): omega' = 2 G(p) pdot in body axes (eq 38)."""
    e0, e1, e2, e3 = p
    return sp.Matrix([[-e1, e0, e3, -e2],
                      [-e2, -e3, e0, e1],
                      [-e3, e2, -e1, e0]])


def A_matrix(p):
    """A(p) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 e~ (eq 36): body -> fixed frame."""
    e0, e1, e2, e3 = p
    e = sp.Matrix([e1, e2, e3])
    et = sp.Matrix([[0, -e3, e2], [e3, 0, -e1], [-e2, e1, 0]])
    return (e0 ** 2 - (e.T * e)[0]) * sp.eye(3) + 2 * e * e.T + 2 * e0 * et


def build_model(speeds="omega"):
    """Unconstrained Kane terms of the free rigid body in q = [r; p].

    speeds "omega": u = [rdot; omega'; pn], pdot = 1/2 G(p)^T omega' + p pn (eq 38).
    speeds "qdot": u = qdot (the paper's, Sec 6-7), omega' = 2 G(p) pdot (eq 38).
    Returns the model, q, u, qdot and omega' as sympy expressions in the speeds.
    """
    q = dynamicsymbols(" ".join(COORDS))
    names = SPEEDS if speeds == "qdot" else OMEGA_SPEEDS if speeds == "omega" else None
    if names is None:
        raise ValueError(f"speeds must be 'qdot' or 'omega', not {speeds!r}")
    u = dynamicsymbols(" ".join(names))
    m, Jxx, Jzz, g = sp.symbols("m Jxx Jzz g")
    x, y, z, e0, e1, e2, e3 = q
    p = sp.Matrix([e0, e1, e2, e3])
    N = ReferenceFrame("N")
    Bf = ReferenceFrame("B")
    Bf.orient_quaternion(N, (e0, e1, e2, e3))     # N.dcm(B) = A(p) of eq 36
    if speeds == "qdot":
        pd = sp.Matrix(u[3:])
        w = 2 * G_matrix(p) * pd                  # eq 38, in the speeds
    else:
        w = sp.Matrix(u[3:6])
        pd = G_matrix(p).T * w / 2 + p * u[6]
    Bf.set_ang_vel(N, w[0] * Bf.x + w[1] * Bf.y + w[2] * Bf.z)
    O = Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", x * N.x + y * N.y + z * N.z)
    C.set_vel(N, u[0] * N.x + u[1] * N.y + u[2] * N.z)
    body = RigidBody("top", C, Bf, m, (inertia(Bf, Jxx, Jxx, Jzz), C))
    loads = [(C, -m * g * N.z)]
    qd = list(u[:3]) + list(pd)                   # qdot in the speeds
    kd = [qi.diff() - e for qi, e in zip(q, qd)]
    model = Model(N, q, u, kd, [body], loads, params=[m, Jxx, Jzz, g], name="top")
    return model, q, u, qd, w


def constraints(model, q):
    """The paper's Phi(q) = 0 (Sec 7.1): tip at unit distance from O, and eq 37."""
    r = sp.Matrix(q[:3])
    p = sp.Matrix(q[3:])
    uz = sp.Matrix([0, 0, 1])
    tip = sp.Rational(1, 2) * ((r.T * r)[0] - 2 * (r.T * A_matrix(p) * uz)[0])
    norm = sp.Rational(1, 2) * ((p.T * p)[0] - 1)
    return {"tip": holonomic(model, "tip", tip),
            "normalization": holonomic(model, "normalization", norm)}


def energies(q, qd, w):
    """Kinetic 1/2 m rdot^T rdot + 1/2 omega'^T J' omega' (= 2 pdot^T G^T J' G pdot, Sec 7.1)
    and potential m g z."""
    m, Jxx, Jzz, g = sp.symbols("m Jxx Jzz g")
    rd = sp.Matrix(qd[:3])
    J = sp.diag(Jxx, Jxx, Jzz)
    T = sp.Rational(1, 2) * m * (rd.T * rd)[0] + sp.Rational(1, 2) * (w.T * J * w)[0]
    return T, m * g * q[2]


def initial_state(P, speeds="omega"):
    """q0 = [0,0,0,1,0,0,0], rdot0 = 0, omega0 = (eps, eps, omega_z), pdot0 = 1/2 G(p0)^T omega0
    (Sec 7.1, eq 38); tilt_start rotates the body about its x axis (0 in the paper), the
    centroid staying at O and the tip on the unit sphere."""
    th = P.get("tilt_start", 0.0)
    q0 = np.array([0.0, 0.0, 0.0, np.cos(th / 2), np.sin(th / 2), 0.0, 0.0])
    w0 = np.array([P["omega_x_start"], P["omega_y_start"], P["omega_z"]], dtype=float)
    if speeds == "omega":
        return q0, np.concatenate((np.zeros(3), w0, [0.0]))
    G0 = np.array(G_matrix(q0[3:]).tolist(), dtype=float)
    return q0, np.concatenate((np.zeros(3), 0.5 * G0.T @ w0))


def visuals(model) -> Visuals:
    """The top: its axis from the tip (held at unit distance from O, Sec 7.1) through the mass
    centre C, a disc about C with one radius marked (a sleeping top only spins), and O."""
    body = model.bodies[0]
    C, B = body.masscenter, body.frame
    O = next(iter(C._pos_dict))
    tip = C.pos_from(O) - B.z
    return Visuals(model.frame, [Sphere((0, 0, 0), 0.03, name="O", color="#111111"),
                                 Segment(tip, C.pos_from(O) + 0.3 * B.z, name="axis"),
                                 Cylinder(C.pos_from(O) - 0.05 * B.z, C.pos_from(O) + 0.05 * B.z,
                                          0.4, name="disc"),
                                 Segment(C.pos_from(O), C.pos_from(O) + 0.4 * B.x,
                                         name="a radius of the disc (its spin shows)",
                                         color="#c0392b")],
                   origin=O, points={"tip": tip, "C": C}, dim=3)


def build(speeds="omega") -> Scenario:
    """The top in the speeds u = [rdot; omega'; p^T pdot] (default) or the paper's u = qdot."""
    model, q, u, qd, w = build_model(speeds)
    cons = constraints(model, q)
    T, V = energies(q, qd, w)
    desc = {"x": "centroid x", "y": "centroid y", "z": "centroid z (up)",
            "e0": "Euler parameter e0 (scalar part)", "e1": "Euler parameter e1",
            "e2": "Euler parameter e2", "e3": "Euler parameter e3"}
    outputs = [Output(c, qi, desc[c], "m" if c in "xyz" else "", start=float(c == "e0"))
               for c, qi in zip(COORDS, q)]
    outputs += [Output(s, e, "time derivative of " + desc[c], "m/s" if c in "xyz" else "1/s")
                for c, s, e in zip(COORDS, SPEEDS, qd)]
    outputs += [Output("kinetic_energy", T, "1/2 m rdot^T rdot + 1/2 omega'^T J' omega'", "J"),
                Output("potential_energy", V, "m g z", "J")]
    aut = Automaton(model, cons, {TOP: Mode(name="top", constraints=("normalization", "tip"))},
                    outputs=outputs)
    parameters = [
        Var("m", 30.0, "mass of the top", "kg"),
        Var("Jxx", 90.0, "central moment of inertia about the body x and y axes (Jyy = Jxx)",
            "kg.m2"),
        Var("Jzz", 30.0, "central moment of inertia about the body (symmetry) z axis", "kg.m2"),
        Var("g", 9.81, "gravitational acceleration (along -z)", "m/s2"),
        Var("tilt_start", 0.0, "initial tilt of the body about its x axis (0: the paper's start)",
            "rad"),
        Var("omega_z", 13.5, "initial spin: body z component of the angular velocity", "rad/s"),
        Var("omega_x_start", 1e-12, "initial body x component of the angular velocity "
            "(the paper's perturbation eps)", "rad/s"),
        Var("omega_y_start", 1e-12, "initial body y component of the angular velocity "
            "(the paper's perturbation eps)", "rad/s"),
    ]
    return Scenario("top", aut, parameters, visuals=visuals(model), initial_state=lambda P: initial_state(P, speeds),
                    mode_description="active mode: 1 top (both constraints)",
                    residual_description="largest residual of the active constraints (|Phi| and "
                    "|Phi_q qdot|)",
                    positive=("m", "Jxx", "Jzz"), nonnegative=("g",),
                    feasible=[Feasible("Jzz must not exceed Jxx + Jyy = 2 Jxx (the triangle "
                                       "inequality of a rigid body's principal moments)",
                                       params=lambda p: 2 * p["Jxx"] - p["Jzz"])])
