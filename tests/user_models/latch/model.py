"""A flap thrown up against a spring latch: a user's model, written with the public API only.

The flap is a massless rod of length l with a mass m at its end, hinged at O; th is its
angle from the downward vertical, w its rate, T a motor torque about the hinge.  The
latch sits at th = th_c.  A flap that strikes it at w_latch or faster (and with the latch
not released) is caught: the latch holds it at th_c (mode 2, the constraint th - th_c = 0
embedded, 0 degrees of freedom) until the input ``release`` is set to 1; a slower one
bounces back with Newton's restitution, w+ = -e w-.  Gravity swings it down again.

This is the worked example of docs/guide.md: each block of this file is explained there.
"""

from __future__ import annotations

import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Arrow, Automaton, Curve, Guard, Jump, Mode, Model, Output, Scenario, Segment,
                   Sphere, Start, Var, Visuals, holonomic)

FREE, LATCHED = 1, 2


def build_model() -> Model:
    """The unconstrained flap: Kane's F_r + F_r* = 0 (gillespie2005 eq 1-4)."""
    th, w = dynamicsymbols("th w")
    m, l, g, th_c, T, release = sp.symbols("m l g th_c T release")
    N = ReferenceFrame("N")                       # N.x horizontal, N.y up
    A = N.orientnew("A", "Axis", [th, N.z])       # the flap's frame
    A.set_ang_vel(N, w * N.z)
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", -l * A.y)                # the mass at the flap's end
    P.v2pt_theory(O, N, A)
    loads = [(P, -m * g * N.y), (A, T * N.z)]
    return Model(N, [th], [w], [th.diff() - w], [Particle("flap", P, m)], loads,
                 params=[m, l, g, th_c], inputs=[T, release], name="latch")


def strike(ctx) -> Jump:
    """The flap reaches the latch: caught if fast enough and not released, else it bounces."""
    w = ctx.u[0]
    if w >= ctx.param("w_latch") and ctx.param("release") < 0.5:
        return Jump(LATCHED, {"impact_speed": w}, u=[0.0], impact=True)
    return Jump(FREE, {"impact_speed": w}, u=[-ctx.param("e") * w], impact=True)


def visuals() -> Visuals:
    """What `embed-fmu animate` draws, in the model's own symbols: the latch at th_c, the flap
    from O to P and its mass, and the latch's force on the mass, lambda_latch / l along A.x
    (the multiplier of th - th_c is the latch's torque about O; P = l (sin th, -cos th))."""
    th = dynamicsymbols("th")
    l, th_c, s, lam = sp.symbols("l th_c s lambda_latch")
    P = (l * sp.sin(th), -l * sp.cos(th))
    A_x = (sp.cos(th), sp.sin(th))                # the flap's frame's x, along P's path
    return Visuals(ReferenceFrame("N"), [
        Curve((s * sp.sin(th_c), -s * sp.cos(th_c)), s, 0.9 * l, 1.3 * l, samples=2,
              name="latch", color="#7f8c8d", width=8),
        Segment((0, 0), P, name="flap"),
        Sphere(P, 0.04, name="mass"),
        Arrow(P, (lam / l * A_x[0], lam / l * A_x[1]), scale=0.05,
              name="latch force on the mass")],
        points={"O": (0, 0), "P": P})


def build() -> Scenario:
    th, w = dynamicsymbols("th w")
    m, l, g, th_c, release = sp.symbols("m l g th_c release")
    model = build_model()
    latch = holonomic(model, "latch", th - th_c)
    modes = {
        FREE: Mode(name="free", guards=(
            Guard("strike", th_c - th, -1, reset=strike),)),
        LATCHED: Mode(name="latched", constraints=("latch",), guards=(
            Guard("released", 0.5 - release, -1, reset=lambda ctx: Jump(FREE)),)),
    }
    outputs = [
        Output("th", th, "angle of the flap from the downward vertical", "rad"),
        Output("w", w, "angular rate of the flap", "rad/s"),
        Output("holding_torque", multiplier="latch", unit="N.m",
               description="torque of the latch on the flap (multiplier of th - th_c)"),
        Output("energy", m * l ** 2 * w ** 2 / 2 - m * g * l * sp.cos(th),
               "kinetic plus potential energy", "J"),
        Output("impact_speed", discrete="impact_speed", unit="rad/s",
               description="rate of the flap at the last strike"),
        Output("impact_count", description="strikes so far", type="Integer"),
    ]
    aut = Automaton(model, [latch], modes, {"impact_speed": 0.0}, outputs,
                    zeno=lambda ctx, guard: Jump(LATCHED, u=[0.0]))
    parameters = [
        Var("m", 0.4, "mass at the end of the flap", "kg"),
        Var("l", 0.5, "length of the flap", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("th_c", 1.2, "angle of the latch", "rad"),
        Var("e", 0.6, "coefficient of restitution at the latch", "", min=0.0, max=1.0),
        Var("w_latch", 2.0, "slowest strike that engages the latch", "rad/s"),
    ]
    inputs = [Var("T", 0.0, "motor torque on the flap", "N.m"),
              Var("release", 0, "1 releases the latch, 0 holds", type="Integer", min=0, max=1)]
    start = [Start("th", 0.0, "initial angle of the flap", "rad"),
             Start("w", 6.0, "initial rate of the flap", "rad/s")]
    return Scenario("latch", aut, parameters, inputs, start=start, visuals=visuals(),
                    positive=("m", "l"), nonnegative=("g", "e", "w_latch"))
