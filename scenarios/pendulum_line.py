"""Double pendulum with its tip on a smooth horizontal line: gillespie2005 Example 3 (Sec 6.3, Table II).

Massless rods of lengths l1, l2 with particles m1, m2 at their ends; q1, q2 the
rods' angles from the downward vertical, u1, u2 their rates.  The tip P2 is held
on a fixed, frictionless horizontal line at depth d below the pivot: the
slider-crank mode of the paper's Fig 13 alone, a configuration constraint
Phi = d - l1 cos q1 - l2 cos q2 = 0, differentiated and embedded on line and held
at the configuration level by Newton iteration.  The normal force on the tip is
the constraint's multiplier.  Energy is conserved.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import Automaton, Mode, Model, Output, Scenario, Start, Var, holonomic
from embed import Curve, Segment, Sphere, Visuals

SLIDER_CRANK = 1


def build_model():
    """The unconstrained double pendulum (mode 1 of the paper's Fig 13)."""
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2 = dynamicsymbols("u1 u2")
    l1, l2, m1, m2, d, g = sp.symbols("l1 l2 m1 m2 d g")
    N = ReferenceFrame("N")                       # n1 horizontal, n2 vertically up
    O = Point("O")
    O.set_vel(N, 0)
    P1 = O.locatenew("P1", l1 * (sp.sin(q1) * N.x - sp.cos(q1) * N.y))
    P2 = P1.locatenew("P2", l2 * (sp.sin(q2) * N.x - sp.cos(q2) * N.y))
    P1.set_vel(N, P1.pos_from(O).dt(N).subs({q1.diff(): u1, q2.diff(): u2}))
    P2.set_vel(N, P2.pos_from(O).dt(N).subs({q1.diff(): u1, q2.diff(): u2}))
    bodies = [Particle("p1", P1, m1), Particle("p2", P2, m2)]
    loads = [(P1, -m1 * g * N.y), (P2, -m2 * g * N.y)]
    model = Model(N, [q1, q2], [u1, u2], [q1.diff() - u1, q2.diff() - u2], bodies, loads,
                  params=[l1, l2, m1, m2, d, g], name="pendulum_line")
    return model, (q1, q2, u1, u2), (l1, l2, m1, m2, d, g), P2.pos_from(O)


def visuals(model) -> Visuals:
    """The rods R1, R2, the particles and the line the tip slides on (y = -d)."""
    P1, P2 = (b.point for b in model.bodies)
    O = next(iter(P1._pos_dict))
    s, d = sp.symbols("s d")
    return Visuals(model.frame, [Curve((s, -d), s, -2.5, 2.5, samples=2, name="line"),
                                 Segment(O, P1, name="R1"), Segment(P1, P2, name="R2"),
                                 Sphere(P1, 0.06, name="P1"), Sphere(P2, 0.06, name="P2")],
                   origin=O, points={"P1": P1, "P2": P2})


def build() -> Scenario:
    model, (q1, q2, u1, u2), (l1, l2, m1, m2, d, g), r2 = build_model()
    line = holonomic(model, "tip_on_line", d - l1 * sp.cos(q1) - l2 * sp.cos(q2))
    ke = (m1 * l1 ** 2 * u1 ** 2 + m2 * ((l1 * sp.cos(q1) * u1 + l2 * sp.cos(q2) * u2) ** 2
                                          + (l1 * sp.sin(q1) * u1 + l2 * sp.sin(q2) * u2) ** 2)) / 2
    pe = -g * (m1 * l1 * sp.cos(q1) + m2 * (l1 * sp.cos(q1) + l2 * sp.cos(q2)))
    outputs = [
        Output("q1", q1, "angle of R1 from the vertical", "rad"),
        Output("q2", q2, "angle of R2 from the vertical", "rad"),
        Output("u1", u1, "rate of q1", "rad/s"), Output("u2", u2, "rate of q2", "rad/s"),
        Output("tip_x", l1 * sp.sin(q1) + l2 * sp.sin(q2), "horizontal position of P2", "m"),
        Output("tip_y", -l1 * sp.cos(q1) - l2 * sp.cos(q2), "vertical position of P2", "m"),
        Output("normal_force", multiplier="tip_on_line",
               description="force of the line on P2 along n2 (up)", unit="N"),
        Output("kinetic_energy", ke, "kinetic energy", "J"),
        Output("potential_energy", pe, "potential energy", "J"),
    ]
    aut = Automaton(model, [line], {SLIDER_CRANK: Mode(name="slider_crank",
                                                       constraints=("tip_on_line",))},
                    outputs=outputs)
    parameters = [
        Var("l1", 1.0, "length of rod R1", "m"), Var("l2", 1.0, "length of rod R2", "m"),
        Var("m1", 1.0, "mass of particle P1", "kg"), Var("m2", 1.0, "mass of particle P2", "kg"),
        Var("d", 1.2, "depth of the line below the pivot O", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
    ]
    start = [
        Start("q1", -math.pi / 9, "initial angle of R1 from the vertical", "rad"),
        Start("q2", -4 * math.pi / 9,
              "initial angle of R2; only its sign is used: q2 follows from the line", "rad"),
        Start("u1", 3.0, "initial rate of q1 (u2 follows from the line)", "rad/s"),
        Start("u2", -0.3, "not used: u2 follows from u1 and the line", "rad/s"),
    ]
    return Scenario("pendulum_line", aut, parameters, visuals=visuals(model), initial_state=start_on_line, start=start,
                    mode_description="active mode: 1 slider-crank (tip on the line)",
                    positive=("l1", "l2", "m1", "m2", "g"), nonnegative=())


def start_on_line(p):
    """q1, u1 from the parameters; q2 and u2 from the line (branch: the sign of q2_start)."""
    c = (p["d"] - p["l1"] * math.cos(p["q1_start"])) / p["l2"]
    if not -1.0 <= c <= 1.0:
        from embed import InputError
        raise InputError(f"the line at depth d = {p['d']} cannot be reached with q1_start = "
                         f"{p['q1_start']}: |cos q2| = {abs(c):.3g} > 1")
    q2 = math.copysign(math.acos(c), p["q2_start"] if p["q2_start"] != 0 else 1.0)
    q1, u1 = p["q1_start"], p["u1_start"]
    s2 = math.sin(q2)
    u2 = -p["l1"] * math.sin(q1) * u1 / (p["l2"] * s2) if s2 != 0 else 0.0
    return np.array([q1, q2]), np.array([u1, u2])
