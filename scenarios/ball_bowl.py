"""Ball rolling without slip inside a spherical bowl: braun_goldfarb2012 Sec 3.1 (Fig 1-2).

A homogeneous ball (mass m, radius r, central inertia I = 2/5 m r^2 about every axis) rolls
without slipping inside a spherical bowl of radius R > r.  Fixed frame (i, j, k) at the bowl
centre, k up, gravity -g k.  The ball centre C is at rho e_rho in the paper's spherical
coordinates (footnote 5):

    e_rho   =  cos(alpha) cos(beta) i + cos(alpha) sin(beta) j - sin(alpha) k
    e_alpha = -sin(alpha) cos(beta) i - sin(alpha) sin(beta) j - cos(alpha) k  (= d e_rho/d alpha)
    e_beta  = -sin(beta) i + cos(beta) j                  (= d e_rho/d beta / cos(alpha))

so alpha > 0 is below the bowl centre and v_C = rho' e_rho + rho alpha' e_alpha
+ rho cos(alpha) beta' e_beta.  (The paper prints e_beta = -sin(alpha) i + ..., a typo.)

Coordinates q = [rho, alpha, beta, e0, e1, e2, e3]: the paper's rho, alpha, beta, and the
ball's orientation as Euler parameters (e0 the scalar part, A(p) = N.dcm(B) as in
haug_pavesic2023 eq 36) instead of the paper's nine direction cosines e_1, e_2, e_3.
Speeds u = [drho, dalpha, dbeta, omega_x, omega_y, omega_z, u_e]: the rates of rho, alpha,
beta, the ball's angular velocity omega in the fixed frame, and u_e, the rate of
normalization of the Euler parameters, defined by the kinematical equations

    pdot = 1/2 E(p)^T omega + p u_e,   E(p) = [-e, e~ + e0 I]   (so 2 E pdot = |p|^2 omega,
                                                                   p^T pdot = |p|^2 u_e).

The central inertia of a homogeneous ball is I times the unit dyadic in every frame, so the
orientation never enters the dynamics: the kinetic energy is 1/2 m v_C^2 + 1/2 I omega^2,
u_e has no inertia, and p is only integrated along (it starts at [1, 0, 0, 0]: the paper's
e_i(0) = i, j, k of footnote 6).

Active constraints (one mode, "rolling"), as in the paper's Phi_q and Phi_v:
  contact     rho - (R - r) = 0                            holonomic (the paper's first row)
  roll_alpha  v_P . e_alpha = 0                            nonholonomic, Phi_v row 1
  roll_beta   v_P . e_beta = 0                             nonholonomic, Phi_v row 2
  euler_norm  1/2 (p^T p - 1) = 0                          holonomic (replaces the paper's six
                                                           orthonormality rows of e_1, e_2, e_3)
where v_P = v_C + omega x (r e_rho) is the velocity of the ball's material point in contact.
Its third component v_P . e_rho = rho' is the derivative of the contact constraint, so the
three no-slip conditions of a sphere rolling on a surface are all held.  7 speeds, 4
constraints: 3 degrees of freedom.

The unconstrained terms reproduce the paper's M qddot = Q for rho, alpha, beta, with the
gravity terms of Q of opposite sign: the paper's Q belongs to V = +m g rho sin(alpha),
while its energy law Phi_e (and a bowl, with the ball below its centre) has
V = -m g rho sin(alpha), which is what we use.

Start (Sec 3.1, footnote 6): rho(0) = R - r, rho'(0) = 0 (fixed by the contact, so they are
no parameters), alpha(0) = pi/4, beta(0) = 0, alpha'(0) = 0.5 1/s, beta'(0) = 1 1/s, and
omega(0) = omega_p(0) e_rho + ((R - r) cos(alpha)/r) beta'(0) e_alpha - ((R - r)/r) alpha'(0)
e_beta with omega_p(0) = 1 1/s (footnote 6).  Sizes: m = 1 kg, r = 1 m, R = 8 m, g = 9.81.

First integral (Fig 2 caption): with omega_p = omega . e_rho (the paper's
1/2 sum_i (e_i x e_i')^T e_rho),

    first_integral = beta' cos(alpha)^2 + 2 r / (7 (R - r)) omega_p sin(alpha) = const,

and the paper plots epsilon = |first_integral(t) - first_integral(0)| (Fig 2(d)).  The spin
omega_p itself is constant too (the contact force has no moment about e_rho, and
omega . e_rho' = 0 while rolling), so alpha moves between the two roots of the energy
equation with alpha' = 0 and beta' = (first_integral - 2 r/(7 (R - r)) omega_p sin(alpha))
/ cos(alpha)^2.

Limitation (the paper's coordinates): alpha = +-pi/2, the bowl's bottom, is their pole.
The first integral keeps the ball off it unless it is near 0 (beta'(0) and omega_p(0) near 0):
then beta' = first_integral / cos(alpha)^2 grows without bound near the bottom, and a run that
does not resolve it stops with an IntegrationError or ConstraintRankError.  An exactly planar
motion through the bottom (beta'(0) = omega_p(0) = 0) is fine.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

from embed import (Automaton, InputError, Mode, Model, Output, Scenario, Var, holonomic,
                   motion)
from embed import Curve, Sphere, Visuals

ROLLING = 1
COORDS = ("rho", "alpha", "beta", "e0", "e1", "e2", "e3")
SPEEDS = ("drho", "dalpha", "dbeta", "omega_x", "omega_y", "omega_z", "u_e")


def E_matrix(p):
    """E(p) = [-e, e~ + e0 I] (haug_pavesic2023 Appendix): omega = 2 E(p) pdot in the fixed frame."""
    e0, e1, e2, e3 = p
    return sp.Matrix([[-e1, e0, -e3, e2],
                      [-e2, e3, e0, -e1],
                      [-e3, -e2, e1, e0]])


def spherical_basis(alpha, beta):
    """e_rho, e_alpha, e_beta of footnote 5 as (3,) sympy matrices in (i, j, k)."""
    ca, sa, cb, sb = sp.cos(alpha), sp.sin(alpha), sp.cos(beta), sp.sin(beta)
    return (sp.Matrix([ca * cb, ca * sb, -sa]),
            sp.Matrix([-sa * cb, -sa * sb, -ca]),
            sp.Matrix([-sb, cb, 0]))


def build_model():
    """Unconstrained Kane terms of the free ball in q = [rho, alpha, beta, p], u = [rates, omega, u_e].

    The centre's velocity is written in the frame S = (e_rho, e_beta, -e_alpha) (S turned
    by beta about k, then by alpha about e_beta), so that sympy's terms stay compact.
    """
    q = dynamicsymbols(" ".join(COORDS))
    u = dynamicsymbols(" ".join(SPEEDS))
    R, r, m, g = sp.symbols("R r m g")
    alpha_start, dbeta_start, omega_p_start = sp.symbols("alpha_start dbeta_start omega_p_start")
    rho, alpha, beta = q[:3]
    drho, dalpha, dbeta, wx, wy, wz, u_e = u
    p = sp.Matrix(q[3:])
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [beta, N.z])
    S = A.orientnew("S", "Axis", [alpha, A.y])
    er, ea, eb = S.x, -S.z, S.y                # footnote 5 (with e_beta corrected)
    omega = wx * N.x + wy * N.y + wz * N.z
    Bf = ReferenceFrame("B")
    Bf.orient_quaternion(N, tuple(p))          # orientation of the ball (kinematics only)
    Bf.set_ang_vel(N, omega)                   # the ball's angular velocity, a speed
    O = Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", rho * er)
    C.set_vel(N, drho * er + rho * dalpha * ea + rho * sp.cos(alpha) * dbeta * eb)
    I = sp.Rational(2, 5) * m * r ** 2
    # I times the unit dyadic, written in the fixed frame: the same in every frame
    ball = RigidBody("ball", C, Bf, m, (inertia(N, I, I, I), C))
    loads = [(C, -m * g * N.z)]
    pdot = E_matrix(p).T * sp.Matrix([wx, wy, wz]) / 2 + p * u_e
    kd = [rho.diff() - drho, alpha.diff() - dalpha, beta.diff() - dbeta] + \
        [pk.diff() - pdot[k] for k, pk in enumerate(p)]
    model = Model(N, q, u, kd, [ball], loads,
                  params=[R, r, m, g, alpha_start, dbeta_start, omega_p_start], name="ball_bowl")
    return model, q, u


def visuals(model) -> Visuals:
    """The ball (radius r, its body frame marked) and the bowl, the sphere of radius R about O:
    its rim and two meridians of the lower half."""
    body = model.bodies[0]
    C, B = body.masscenter, body.frame
    O = next(iter(C._pos_dict))
    R, r, s = sp.symbols("R r s")
    return Visuals(model.frame, [
        Curve((R * sp.cos(s), R * sp.sin(s), 0), s, 0, 2 * sp.pi, name="rim"),
        Curve((R * sp.sin(s), 0, -R * sp.cos(s)), s, -sp.pi / 2, sp.pi / 2, name="meridian x"),
        Curve((0, R * sp.sin(s), -R * sp.cos(s)), s, -sp.pi / 2, sp.pi / 2, name="meridian y"),
        Sphere(C, r, frame=B, name="ball")], origin=O, points={"C": C}, dim=3)


def build() -> Scenario:
    model, q, u = build_model()
    R, r, m, g = sp.symbols("R r m g")
    alpha_start, dbeta_start, omega_p_start = sp.symbols("alpha_start dbeta_start omega_p_start")
    rho, alpha, beta = q[:3]
    drho, dalpha, dbeta = u[:3]
    w = sp.Matrix(u[3:6])
    p = sp.Matrix(q[3:])
    er, ea, eb = spherical_basis(alpha, beta)
    # v_P = v_C + omega x (r e_rho), with (omega x e_rho) . e_alpha = omega . e_beta and
    # (omega x e_rho) . e_beta = -omega . e_alpha: the paper's Phi_v
    cons = {
        "contact": holonomic(model, "contact", rho - (R - r)),
        "roll_alpha": motion(model, "roll_alpha", rho * dalpha + r * w.dot(eb)),
        "roll_beta": motion(model, "roll_beta", rho * sp.cos(alpha) * dbeta - r * w.dot(ea)),
        "euler_norm": holonomic(model, "euler_norm", ((p.T * p)[0] - 1) / 2),
    }
    omega_p = w.dot(er)
    k = 2 * r / (7 * (R - r))
    first_integral = dbeta * sp.cos(alpha) ** 2 + k * omega_p * sp.sin(alpha)
    first_integral_0 = dbeta_start * sp.cos(alpha_start) ** 2 + k * omega_p_start * sp.sin(alpha_start)
    I = sp.Rational(2, 5) * m * r ** 2
    v2 = drho ** 2 + rho ** 2 * (dalpha ** 2 + sp.cos(alpha) ** 2 * dbeta ** 2)    # v_C . v_C
    parameters = [
        Var("R", 8.0, "bowl radius", "m"),
        Var("r", 1.0, "ball radius (R > r)", "m"),
        Var("m", 1.0, "ball mass", "kg"),
        Var("g", 9.81, "gravitational acceleration (along -k)", "m/s2"),
        Var("alpha_start", math.pi / 4, "initial alpha (angle of the centre below the bowl "
            "centre's horizontal plane)", "rad"),
        Var("beta_start", 0.0, "initial beta (azimuth of the centre)", "rad"),
        Var("dalpha_start", 0.5, "initial d alpha/dt", "rad/s"),
        Var("dbeta_start", 1.0, "initial d beta/dt", "rad/s"),
        Var("omega_p_start", 1.0, "initial spin omega . e_rho about the contact normal "
            "(footnote 6)", "rad/s"),
    ]
    s0 = start_outputs({v.name: v.start for v in parameters})
    rows = (    # name, expression, description, unit
        ("rho", rho, "distance of the ball centre from the bowl centre (R - r)", "m"),
        ("alpha", alpha, "angle of the centre below the bowl centre's horizontal plane", "rad"),
        ("beta", beta, "azimuth of the centre", "rad"),
        ("drho", drho, "d rho/dt", "m/s"),
        ("dalpha", dalpha, "d alpha/dt", "rad/s"),
        ("dbeta", dbeta, "d beta/dt", "rad/s"),
        ("omega_x", u[3], "angular velocity of the ball along i", "rad/s"),
        ("omega_y", u[4], "angular velocity of the ball along j", "rad/s"),
        ("omega_z", u[5], "angular velocity of the ball along k", "rad/s"),
        ("kinetic_energy", m * v2 / 2 + I * w.dot(w) / 2, "1/2 m v_C^2 + 1/5 m r^2 omega^2", "J"),
        ("potential_energy", -m * g * rho * sp.sin(alpha),
         "-m g rho sin(alpha) (zero at the bowl centre's height)", "J"),
        ("first_integral", first_integral, "dbeta cos(alpha)^2 + 2 r/(7 (R - r)) omega_p "
         "sin(alpha), constant (braun_goldfarb2012 Fig 2 caption)", "1/s"),
        ("epsilon", sp.Abs(first_integral - first_integral_0),
         "|first_integral - its value at the start| (Fig 2(d))", "1/s"))
    outputs = [Output(n, e, desc, unit, start=s0.get(n, 0.0)) for n, e, desc, unit in rows]
    aut = Automaton(model, cons, {ROLLING: Mode(name="rolling", constraints=tuple(cons))},
                    outputs=outputs)
    return Scenario("ball_bowl", aut, parameters, visuals=visuals(model), initial_state=initial_state,
                    positive=("R", "r", "m"), nonnegative=("g",))


def initial_omega(P):
    """omega(0) of footnote 6 as a numpy (3,) vector in the fixed frame."""
    a, b = P["alpha_start"], P["beta_start"]
    rho = P["R"] - P["r"]
    er = np.array([math.cos(a) * math.cos(b), math.cos(a) * math.sin(b), -math.sin(a)])
    ea = np.array([-math.sin(a) * math.cos(b), -math.sin(a) * math.sin(b), -math.cos(a)])
    eb = np.array([-math.sin(b), math.cos(b), 0.0])
    return (P["omega_p_start"] * er + rho * math.cos(a) / P["r"] * P["dbeta_start"] * ea
            - rho / P["r"] * P["dalpha_start"] * eb)


def start_outputs(P):
    """Output values at the start state (the FMU's start values), in plain floats."""
    q0, u0 = initial_state(P)
    rho, a = q0[0], q0[1]
    w = u0[3:6]
    er = np.array([math.cos(a) * math.cos(q0[2]), math.cos(a) * math.sin(q0[2]), -math.sin(a)])
    v2 = rho ** 2 * (u0[1] ** 2 + math.cos(a) ** 2 * u0[2] ** 2)
    k = 2 * P["r"] / (7 * rho)
    out = dict(zip(("rho", "alpha", "beta"), q0[:3].tolist()))
    out.update(zip(("drho", "dalpha", "dbeta", "omega_x", "omega_y", "omega_z"), u0[:6].tolist()))
    out["kinetic_energy"] = float(P["m"] * v2 / 2 + 0.2 * P["m"] * P["r"] ** 2 * (w @ w))
    out["potential_energy"] = float(-P["m"] * P["g"] * rho * math.sin(a))
    out["first_integral"] = float(u0[2] * math.cos(a) ** 2 + k * (w @ er) * math.sin(a))
    return out


def initial_state(P):
    """Consistent start of Sec 3.1 / footnote 6: rho = R - r, rho' = 0, p = [1, 0, 0, 0], u_e = 0."""
    if not P["R"] > P["r"]:
        raise InputError(f"bowl radius R = {P['R']} must exceed the ball radius r = {P['r']}")
    q0 = np.array([P["R"] - P["r"], P["alpha_start"], P["beta_start"], 1.0, 0.0, 0.0, 0.0])
    u0 = np.concatenate(([0.0, P["dalpha_start"], P["dbeta_start"]], initial_omega(P), [0.0]))
    return q0, u0
