"""A particle dropped onto a floor: a user's model written with the public API only, and the
mistakes a model author makes (``build(mistake=...)``), for ``embed.check.check`` and its tests.

A particle (mass m) moves in the vertical plane (x, y) under gravity g and a lifting input
force F_lift; the floor is the line y = 0.

- mode 1, flight (2 dof): y falling through 0 is an impact; Newton restitution e
  (v_y+ = -e v_y-), counted in the discrete variable ``bounces``.  A rebound slower than
  v_rest puts the particle at rest on the floor.
- mode 2, resting (1 dof): y = 0 embedded (constraint ``floor``); the floor's push
  N = lambda_floor is the constraint force; the particle lifts off when N falls through 0
  (F_lift > m g).

``MISTAKES`` lists the deliberate errors ``build`` can make, each one a mistake a model
author makes (issue 13): the correct model is ``build()``.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Guard, Jump, Mode, Model, Scenario, Var, engine_outputs,
                   holonomic)

FLIGHT, RESTING = 1, 2

MISTAKES = ("guard_typo", "undefined_mode", "unknown_constraint", "undeclared_discrete",
            "missing_parameter", "redundant_pair", "no_way_out", "output_typo",
            "fmu_output_typo", "no_branch", "law_typo", "unknown_multiplier",
            "initial_undefined_mode", "enabled_typo", "extra_output_typo", "transition_crash",
            "redundant_triple")


def build(mistake: str = "") -> Scenario:
    """The floor scenario, with the deliberate ``mistake`` (one of MISTAKES) or none."""
    if mistake and mistake not in MISTAKES:
        raise ValueError(f"unknown mistake {mistake!r}; one of {MISTAKES}")
    x, y = dynamicsymbols("x y")
    vx, vy = dynamicsymbols("vx vy")
    m, g, e, v_rest = sp.symbols("m g e v_rest")
    F_lift, F_f = sp.symbols("F_lift F_f")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    P = O.locatenew("P", x * frame.x + y * frame.y)
    P.set_vel(frame, vx * frame.x + vy * frame.y)
    model = Model(frame, [x, y], [vx, vy], [x.diff() - vx, y.diff() - vy],
                  [Particle("p", P, m)], [(P, (F_lift - m * g) * frame.y + F_f * frame.x)],
                  forces=[F_f], params=[m, g, e, v_rest], inputs=[F_lift], name="floor")
    constraints = {"floor": holonomic(model, "floor", y)}
    resting_set = ("floor",)
    if mistake == "unknown_constraint":
        resting_set = ("flor",)
    if mistake == "redundant_pair":
        constraints["floor_twice"] = holonomic(model, "floor_twice", 2 * y)
        resting_set = ("floor", "floor_twice")
    if mistake == "redundant_triple":       # no two dependent, the three are
        constraints["wall"] = holonomic(model, "wall", x)
        constraints["diagonal"] = holonomic(model, "diagonal", x + y)
        resting_set = ("floor", "wall", "diagonal")
    touch = sp.Symbol("yy") if mistake == "guard_typo" else y
    push = sp.Symbol("lambda_flor" if mistake == "unknown_multiplier" else "lambda_floor")
    friction = sp.Symbol("mu_typo") if mistake == "law_typo" else sp.Integer(0)
    enabled = (lambda d: d["bounce"] >= 0) if mistake == "enabled_typo" else None
    lift = () if mistake == "no_way_out" else (Guard("lift", push, -1),)
    modes = {
        FLIGHT: Mode(FLIGHT, "flight", (), ((F_f, friction),),
                     (Guard("touch", touch, -1, enabled=enabled),), outputs=(("N", 0),)),
        RESTING: Mode(RESTING, "resting", resting_set, ((F_f, 0),), lift),
    }

    def transition(ctx, guard):
        if mistake == "transition_crash":
            return Jump(ctx.discrete["bounce"])
        if ctx.mode == FLIGHT and guard == "touch":
            vy_plus = -ctx.param("e") * ctx.u[1]
            counted = {"bounce" if mistake == "undeclared_discrete" else "bounces":
                       ctx.discrete["bounces"] + 1}
            if abs(vy_plus) < ctx.param("v_rest"):
                return Jump(RESTING, counted, u=np.array([ctx.u[0], 0.0]), impact=True)
            return Jump(7 if mistake == "undefined_mode" else FLIGHT, counted,
                        u=np.array([ctx.u[0], vy_plus]), impact=True)
        if ctx.mode == RESTING and guard == "lift" and mistake != "no_branch":
            return Jump(FLIGHT)
        raise AssertionError(f"no transition for {guard!r} in mode {ctx.mode}")

    def initial(ctx):
        return Jump(9 if mistake == "initial_undefined_mode" else FLIGHT)

    mass = sp.Symbol("mm") if mistake == "output_typo" else m
    energy = m * (vx ** 2 + vy ** 2) / 2 + mass * g * y
    outputs = {"x": x, "y": y, "vx": vx, "vy": vy, "energy": energy, "N": push}
    aut = Automaton(model, constraints, modes, {"bounces": 0.0}, outputs, transition, initial)
    parameters = [Var("m", 1.0, "mass of the particle", "kg"),
                  Var("g", 9.81, "gravitational acceleration", "m/s2"),
                  Var("e", 0.5, "coefficient of restitution", "", min=0.0, max=1.0),
                  Var("v_rest", 0.5, "rebounds slower than this end at rest", "m/s"),
                  Var("x_start", 0.0, "initial x", "m"), Var("y_start", 1.0, "initial height", "m"),
                  Var("vx_start", 1.0, "initial vx", "m/s"),
                  Var("vy_start", 0.0, "initial vy", "m/s")]
    if mistake == "missing_parameter":
        parameters = [v for v in parameters if v.name != "v_rest"]
    inputs = [Var("F_lift", 0.0, "upward force on the particle", "N")]
    interface = [Var(k, 0.0, k, unit) for k, unit in (
        ("x", "m"), ("y", "m"), ("vx", "m/s"), ("vy", "m/s"), ("energy", "J"), ("N", "N"))]
    interface += [Var("bounces", 0, "impacts so far", type="Integer")]
    if mistake == "fmu_output_typo":
        interface.append(Var("enrgy", 0.0, "a typo of energy", "J"))
    interface += engine_outputs(FLIGHT, "active mode: 1 flight, 2 resting")

    def initial_state(p):
        return (np.array([p["x_start"], p["y_start"]]), np.array([p["vx_start"], p["vy_start"]]))

    extra = {"bounces": ("discrete", "bounce" if mistake == "extra_output_typo" else "bounces")}
    return Scenario("floor", aut, parameters, inputs, interface, initial_state,
                    extra_outputs=extra, positive=("m",), nonnegative=("g", "v_rest"))
