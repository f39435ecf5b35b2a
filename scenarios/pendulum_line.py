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

from embed import Automaton, Jump, Mode, Model, Scenario, Var, engine_outputs, holonomic

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


def build() -> Scenario:
    model, (q1, q2, u1, u2), (l1, l2, m1, m2, d, g), r2 = build_model()
    line = holonomic(model, "tip_on_line", d - l1 * sp.cos(q1) - l2 * sp.cos(q2))
    tip_x = l1 * sp.sin(q1) + l2 * sp.sin(q2)
    ke = (m1 * l1 ** 2 * u1 ** 2 + m2 * ((l1 * sp.cos(q1) * u1 + l2 * sp.cos(q2) * u2) ** 2
                                          + (l1 * sp.sin(q1) * u1 + l2 * sp.sin(q2) * u2) ** 2)) / 2
    pe = -g * (m1 * l1 * sp.cos(q1) + m2 * (l1 * sp.cos(q1) + l2 * sp.cos(q2)))
    outputs = {"q1": q1, "q2": q2, "u1": u1, "u2": u2, "tip_x": tip_x,
               "tip_y": -l1 * sp.cos(q1) - l2 * sp.cos(q2),
               "kinetic_energy": ke, "potential_energy": pe}
    modes = {SLIDER_CRANK: Mode(SLIDER_CRANK, "slider_crank", ("tip_on_line",))}

    def transition(ctx, guard):
        raise AssertionError(f"pendulum_line has no switching condition ({guard})")

    aut = Automaton(model, {"tip_on_line": line}, modes, {}, outputs, transition,
                    lambda ctx: Jump(SLIDER_CRANK))
    parameters = [
        Var("l1", 1.0, "length of rod R1", "m"), Var("l2", 1.0, "length of rod R2", "m"),
        Var("m1", 1.0, "mass of particle P1", "kg"), Var("m2", 1.0, "mass of particle P2", "kg"),
        Var("d", 1.2, "depth of the line below the pivot O", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("q1_start", -math.pi / 9, "initial angle of R1 from the vertical", "rad"),
        Var("q2_start", -4 * math.pi / 9,
            "initial angle of R2; only its sign is used: q2 follows from the line", "rad"),
        Var("u1_start", 3.0, "initial rate of q1 (u2 follows from the line)", "rad/s"),
        Var("u2_start", -0.3, "not used: u2 follows from u1 and the line", "rad/s"),
    ]
    interface = [Var(k, 0.0, desc, unit) for k, desc, unit in (
        ("q1", "angle of R1 from the vertical", "rad"), ("q2", "angle of R2 from the vertical", "rad"),
        ("u1", "rate of q1", "rad/s"), ("u2", "rate of q2", "rad/s"),
        ("tip_x", "horizontal position of P2", "m"), ("tip_y", "vertical position of P2", "m"),
        ("normal_force", "force of the line on P2 along n2 (up)", "N"),
        ("kinetic_energy", "kinetic energy", "J"), ("potential_energy", "potential energy", "J"))]
    interface += engine_outputs(1, "active mode: 1 slider-crank (tip on the line)")

    def initial_state(p):
        return start_on_line(p)

    return Scenario("pendulum_line", aut, parameters, [], interface, initial_state,
                    positive=("l1", "l2", "m1", "m2", "g"), nonnegative=(),
                    extra_outputs={"normal_force": ("lambda", "tip_on_line")})


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
