"""N-link planar pendulum whose tip is pinned to a line or to a point (issue: general embedding).

N massless rods of length l with a particle of mass m at the end of each (the
double pendulum of gillespie2005 Example 3 generalized); q1..qN the absolute angles
of the links from the downward vertical, u1..uN their rates.  Constraints, each a
configuration constraint compiled on its own: ``tip_y`` (the tip on the horizontal
line at depth d), ``tip_x`` (with tip_y: the tip pinned at (x_p, -d)), and
``mid_x``, ``mid_y`` pinning the middle joint (N // 2) at (x_m, y_m).  Mode 1 holds
the tip on the line, mode 2 pins it to the point x_p on the line: a latch that the
integer input ``pin`` arms (2) or opens (1).  Armed, it catches the tip the moment
the tip passes x_p (a located event) with the momentum-consistent velocity jump of
mueller eq 7; opened, the tip slides on along the line.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Guard, InputError, Jump, Mode, Model, Output, Scenario, Var,
                   holonomic)
from embed import Curve, Segment, Sphere, Visuals

LINE, POINT = 1, 2


def build_model(N=10):
    q = dynamicsymbols(f"q1:{N + 1}")
    u = dynamicsymbols(f"u1:{N + 1}")
    l, m, d, g, x_p, x_m, y_m, pin = sp.symbols("l m d g x_p x_m y_m pin")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    pts, bodies, loads = [], [], []
    x = y = 0
    for i in range(N):
        x = x + l * sp.sin(q[i])
        y = y - l * sp.cos(q[i])
        P = O.locatenew(f"P{i + 1}", x * frame.x + y * frame.y)
        P.set_vel(frame, sum(l * u[j] * (sp.cos(q[j]) * frame.x + sp.sin(q[j]) * frame.y)
                             for j in range(i + 1)))
        pts.append((x, y))
        bodies.append(Particle(f"p{i + 1}", P, m))
        loads.append((P, -m * g * frame.y))
    model = Model(frame, q, u, [qi.diff() - ui for qi, ui in zip(q, u)], bodies, loads,
                  params=[l, m, d, g, x_p, x_m, y_m], inputs=[pin], name=f"pendulum_chain{N}")
    return model, q, u, pts, (l, m, d, g, x_p, x_m, y_m, pin)


def visuals(model) -> Visuals:
    """The links between the particles, the line y = -d the tip slides on, the latch point
    (x_p, -d) and the middle point's target (x_m, y_m)."""
    pts = [b.point for b in model.bodies]
    O = next(iter(pts[0]._pos_dict))
    s, d, x_p = sp.symbols("s d x_p")
    ends = [O] + pts
    return Visuals(model.frame, [Curve((s, -d), s, -3, 3, samples=2, name="line"),
                                 Sphere((x_p, -d), 0.04, name="latch", color="#27ae60")]
                   + [Segment(a, b, name=f"link {i + 1}") for i, (a, b) in
                      enumerate(zip(ends, ends[1:]))],
                   origin=O, points={p.name: p for p in pts})


def build(N=10) -> Scenario:
    N = int(N)
    if not 2 <= N <= 40:
        raise InputError(f"pendulum_chain: N = {N} links; use 2 <= N <= 40")
    model, q, u, pts, (l, m, d, g, x_p, x_m, y_m, pin) = build_model(N)
    (xt, yt), (xm, ym) = pts[-1], pts[N // 2 - 1]
    constraints = {
        "tip_y": holonomic(model, "tip_y", yt + d),
        "tip_x": holonomic(model, "tip_x", xt - x_p),
        "mid_x": holonomic(model, "mid_x", xm - x_m),
        "mid_y": holonomic(model, "mid_y", ym - y_m),
    }
    armed = pin - 1        # 1 when the latch is armed, 0 when open
    caught = lambda ctx: Jump(POINT)      # noqa: E731 - mueller eq 7 activates tip_x
    modes = {
        LINE: Mode(name="tip_on_line", constraints=("tip_y",), guards=(
            Guard("latch_from_left", armed * (x_p - xt), -1, reset=caught),
            Guard("latch_from_right", armed * (xt - x_p), -1, reset=caught))),
        POINT: Mode(name="tip_at_point", constraints=("tip_x", "tip_y"), guards=(
            Guard("latch_opened", pin - 1.5, -1, reset=lambda ctx: Jump(LINE)),)),
    }
    vx = sum(l * ui * sp.cos(qi) for qi, ui in zip(q, u))
    ke, pe, vxi, vyi = 0, 0, 0, 0
    for i in range(N):
        vxi = vxi + l * u[i] * sp.cos(q[i])
        vyi = vyi + l * u[i] * sp.sin(q[i])
        ke = ke + m * (vxi ** 2 + vyi ** 2) / 2
        pe = pe + m * g * pts[i][1]
    outputs = [Output(f"q{i + 1}", q[i], f"angle of link {i + 1} from the vertical", "rad")
               for i in range(N)]
    outputs += [Output(f"u{i + 1}", u[i], f"rate of q{i + 1}", "rad/s") for i in range(N)]
    outputs += [
        Output("tip_x", xt, "horizontal position of the tip", "m"),
        Output("tip_y", yt, "vertical position of the tip", "m"),
        Output("tip_vx", vx, "horizontal velocity of the tip", "m/s"),
        Output("normal_force", multiplier="tip_y",
               description="force of the line on the tip along n2 (up)", unit="N"),
        Output("pin_force_x", multiplier="tip_x",
               description="horizontal force of the pin on the tip (mode 2)", unit="N"),
        Output("kinetic_energy", ke, "kinetic energy", "J"),
        Output("potential_energy", pe, "potential energy", "J"),
    ]
    aut = Automaton(model, constraints, modes, outputs=outputs, allowed={"pin": (1, 2)})
    parameters = [
        Var("l", 0.2, "length of every link", "m"), Var("m", 0.1, "mass at the end of every link", "kg"),
        Var("d", 0.2 * N * 0.8, "depth of the line below the pivot", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("x_p", 0.0, "x of the latch on the line", "m"),
        Var("x_m", 0.0, "x of the middle joint's pin (constraint mid_x)", "m"),
        Var("y_m", 0.0, "y of the middle joint's pin (constraint mid_y)", "m"),
        Var("q_start", 0.6, "initial angle of every link but the last (the last reaches the line)", "rad"),
        Var("u_start", 0.0, "initial rate of q1 (the others follow from the line)", "rad/s"),
    ]
    inputs = [Var("pin", 1, "latch at x_p on the line: 1 open, 2 armed (catches the tip when it "
                  "passes x_p)", type="Integer", min=1, max=2)]

    def initial_state(p):
        th = p["q_start"]
        c = (p["d"] - (N - 1) * p["l"] * math.cos(th)) / p["l"]
        if not -1.0 <= c <= 1.0:
            raise InputError(f"pendulum_chain: with q_start = {th} the tip cannot reach the line "
                             f"at depth d = {p['d']}")
        qs = np.full(N, th)
        qs[-1] = math.acos(c)
        us = np.zeros(N)
        us[0] = p["u_start"]
        # tip_y: sum_i l sin(q_i) u_i = 0 -> last rate from the first
        s_last = math.sin(qs[-1])
        us[-1] = -math.sin(qs[0]) * us[0] / s_last if s_last else 0.0
        return qs, us

    return Scenario("pendulum_chain", aut, parameters, inputs, visuals=visuals(model), initial_state=initial_state,
                    mode_description="active mode: 1 tip on the line, 2 tip at the point",
                    positive=("l", "m", "g"), embedding="background")
