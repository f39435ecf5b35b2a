"""Disk on a ramp with two friction zones: gillespie2005 Example 1 (Sec 6.1, Fig 5-7, Table I).

Mode 1 sliding (u1, u2 independent), mode 2 rolling (u1 + u2 = 0 embedded on line,
D = [-1]).  Coulomb friction mu on the lower part of the ramp (q1 < L), none above.
The normal force N comes from an auxiliary generalized speed normal to the ramp
(Sec 5.4); in the rolling mode the friction force F_f is a constraint force
recovered from the unconstrained equations.  Inputs F_ext (along the ramp, at the
centre) and T_ext (torque on the disk) are what a HIL user applies.
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.physics.mechanics import (KanesMethod, Point, ReferenceFrame, RigidBody,  # noqa: F401
                                     dynamicsymbols, inertia)

from embed import (Automaton, Feasible, Guard, Jump, Mode, Model, Output, Scenario, Start, Var,
                   motion)
from embed import Arrow, Curve, Sphere, Visuals

SLIDING, ROLLING = 1, 2


def build_model():
    """The unconstrained (sliding) disk: eq 21 plus the auxiliary equation for N."""
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2, ua = dynamicsymbols("u1 u2 ua")
    m, J, r, phi, mu, L, g = sp.symbols("m J r phi mu L g")
    N, F_f, F_ext, T_ext = sp.symbols("N F_f F_ext T_ext")
    frame = ReferenceFrame("N")
    A = frame.orientnew("A", "Axis", [phi, frame.z])       # a1 up the ramp, a2 normal
    O = Point("O")
    O.set_vel(frame, 0)
    Bo = O.locatenew("Bo", q1 * A.x + r * A.y)
    Bo.set_vel(frame, u1 * A.x + ua * A.y)                  # ua: auxiliary speed along a2
    B = A.orientnew("B", "Axis", [q2, A.z])
    B.set_ang_vel(frame, u2 / r * A.z)                       # u2 = r dq2/dt
    P = Bo.locatenew("P", -r * A.y)                          # contact point of the disk
    P.v2pt_theory(Bo, frame, B)
    disk = RigidBody("disk", Bo, B, m, (inertia(A, 0, 0, J), Bo))
    loads = [(Bo, -m * g * frame.y + F_ext * A.x),           # R^B of Sec 6.1 plus F_ext
             (P, -F_f * A.x + N * A.y),
             (B, T_ext * A.z)]
    model = Model(frame, [q1, q2], [u1, u2], [q1.diff() - u1, r * q2.diff() - u2], [disk], loads,
                  u_aux=[ua], forces=[N, F_f], params=[m, J, r, phi, mu, L, g],
                  inputs=[F_ext, T_ext], name="disk_ramp")
    return model, (u1, u2)


def visuals(model) -> Visuals:
    """The ramp (frame A at angle phi, the friction zone from q1 = L on, darker), the disk with
    its frame B marked, and the ramp's force on the disk at the contact point: N along a2,
    F_f along -a1."""
    body = model.bodies[0]
    Bo, B = body.masscenter, body.frame
    O = next(iter(Bo._pos_dict))
    phi, r, L, N, F_f, s = sp.symbols("phi r L N F_f s")
    A = model.frame.orientnew("A_view", "Axis", [phi, model.frame.z])
    P = Bo.pos_from(O) - r * A.y
    return Visuals(model.frame, [
        Curve(s * A.x, s, L - 8, L, samples=2, name="ramp", color="#7f8c8d", width=3),
        Curve(s * A.x, s, L, L + 4, samples=2, name="friction zone", color="#2c3e50", width=5),
        Sphere(Bo, r, frame=B, name="disk"),
        Arrow(P, N * A.y - F_f * A.x, scale=0.05, name="ramp force on the disk")],
        origin=O, points={"centre": Bo, "contact": P})


def build() -> Scenario:
    model, (u1, u2) = build_model()
    q1, q2 = dynamicsymbols("q1 q2")
    mu, L, N, F_f = sp.symbols("mu L N F_f")
    s, z = sp.symbols("s z_f")          # friction direction (+-1); 1 in the friction zone
    slip = u1 + u2

    def try_rolling(ctx):
        """Sliding -> rolling if the friction the rolling mode needs lies in the cone."""
        f = ctx.forces_in(ROLLING, z_f=1.0)
        if abs(f["F_f"]) <= ctx.param("mu") * f["N"]:
            return Jump(ROLLING, {"z_f": 1.0})
        return Jump(SLIDING, {"z_f": 1.0, "s": math.copysign(1.0, f["F_f"])})

    def zone_crossed(ctx):
        """Sliding across q1 = L: out of the friction zone, or into it (rolling if it may)."""
        if ctx.discrete["z_f"] == 1:
            return Jump(SLIDING, {"z_f": 0.0})
        sl = ctx.outputs["slip"]
        if sl == 0:
            return try_rolling(ctx)
        return Jump(SLIDING, {"z_f": 1.0, "s": math.copysign(1.0, sl)})

    def initial(ctx):
        zone = 1.0 if ctx.q[0] < ctx.param("L") else 0.0
        sl = ctx.u[0] + ctx.u[1]
        if sl != 0 or zone == 0:
            return Jump(SLIDING, {"z_f": zone, "s": math.copysign(1.0, sl)})
        return try_rolling(ctx)

    in_zone = lambda d: d["z_f"] == 1   # noqa: E731
    modes = {
        SLIDING: Mode(name="sliding", laws=((F_f, z * mu * s * N),), guards=(
            Guard("rolling_constraint_satisfied", s * slip, -1, enabled=in_zone,
                  reset=try_rolling),
            Guard("zone_boundary", (2 * z - 1) * (L - q1), -1, reset=zone_crossed))),
        ROLLING: Mode(name="rolling", constraints=("rolling",), guards=(
            Guard("friction_cone", mu * N - sp.Abs(F_f), -1, reset=lambda ctx: Jump(
                SLIDING, {"s": math.copysign(1.0, ctx.forces["F_f"])})),
            Guard("zone_boundary", L - q1, -1,
                  reset=lambda ctx: Jump(SLIDING, {"z_f": 0.0, "s": 1.0})))),
    }
    outputs = [
        Output("q1", q1, "position of the disk centre along the ramp", "m"),
        Output("q2", q2, "disk angle", "rad"),
        Output("u1", u1, "speed of the centre along the ramp", "m/s"),
        Output("u2", u2, "r dq2/dt", "m/s"),
        Output("slip", slip, "slip velocity of the contact point u1 + u2", "m/s"),
        Output("N", N, "normal force of the ramp on the disk", "N"),
        Output("F_f", F_f, "friction force on the disk (acting along -a1)", "N"),
    ]
    aut = Automaton(model, [motion(model, "rolling", u1 + u2)], modes, {"s": 1.0, "z_f": 1.0},
                    outputs, initial=initial)
    parameters = [
        Var("m", 1.0, "disk mass", "kg"),
        Var("J", 0.5, "central moment of inertia of the disk", "kg.m2"),
        Var("r", 1.0, "disk radius", "m"),
        Var("phi", math.pi / 12, "ramp angle to the horizontal", "rad"),
        Var("mu", 0.2, "Coulomb friction coefficient below q1 = L", ""),
        Var("L", 22.0, "end of the friction zone along the ramp", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
    ]
    start = [Start("q1", 14.0, "initial position of the disk centre along the ramp", "m"),
             Start("q2", 0.0, "initial disk angle", "rad"),
             Start("u1", 7.0, "initial speed of the centre along the ramp", "m/s"),
             Start("u2", -4.0, "initial u2 = r dq2/dt", "m/s")]
    inputs = [Var("F_ext", 0.0, "force on the disk centre along the ramp (up positive)", "N"),
              Var("T_ext", 0.0, "torque on the disk about a3", "N.m")]
    return Scenario("disk_ramp", aut, parameters, inputs, visuals=visuals(model), start=start,
                    positive=("m", "J", "r"), nonnegative=("mu", "g"),
                    feasible=[Feasible("the ramp pulls the disk (a tensile normal force: phi "
                                       "beyond a quarter turn)", output="N")])
