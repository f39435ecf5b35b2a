"""A cart on a rail whose pendulum bob strikes a wall: a user's model, public API only.

Cart (mass M, position x) on a horizontal rail, pushed toward the wall by the input F;
pendulum (massless rod l, bob m, angle th from the downward vertical) hinged on it.  The
bob is at (x + l sin th, -l cos th); the wall is the plane X = w, and the gap
gap = w - x - l sin th >= 0 is a unilateral constraint.

- mode 1, free (2 dof): the gap falling to zero is an impact, Newton restitution e on the
  frictionless wall (``embed.hybrid.impact.resolve``, gillespie2005 Sec 5.3); with a rebound
  (Jn u+ > 0) the bob flies free again, else it stays on the wall.
- mode 2, on the wall (1 dof): gap = 0 embedded; the wall's push N (along -X on the bob) is
  the constraint force; the bob leaves when N falls through zero.

Pushed toward the wall the rebounds accumulate (a Zeno sequence) and the automaton hands
over to mode 2 with a plastic impact (mueller eq 7, the activation jump).

``free_rhs`` is the free-flight ODE written out by hand (Lagrange, not Kane, not the
engine): the independent reference of the property tests.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Guard, Jump, Mode, ModeLibrary, Model, Scenario, Simulator, Var,
                   engine_outputs, holonomic)
from embed.hybrid.impact import resolve

FREE, WALL = 1, 2


def automaton():
    x, th = dynamicsymbols("x th")
    v, w_ = dynamicsymbols("v w")
    M, m, l, g, wall = sp.symbols("M m l g wall")
    N, F = sp.symbols("N F")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    C = O.locatenew("C", x * frame.x)
    C.set_vel(frame, v * frame.x)
    P = C.locatenew("P", l * (sp.sin(th) * frame.x - sp.cos(th) * frame.y))
    P.set_vel(frame, (v + l * sp.cos(th) * w_) * frame.x + l * sp.sin(th) * w_ * frame.y)
    loads = [(C, F * frame.x), (P, -m * g * frame.y - N * frame.x)]
    model = Model(frame, [x, th], [v, w_], [x.diff() - v, th.diff() - w_],
                  [Particle("cart", C, M), Particle("bob", P, m)], loads, forces=[N],
                  params=[M, m, l, g, wall], inputs=[F], name="cart_wall")
    gap = wall - x - l * sp.sin(th)
    constraints = {"wall": holonomic(model, "wall", gap)}
    modes = {FREE: Mode(FREE, "free", (), ((N, 0),), (Guard("strike", gap, -1),)),
             WALL: Mode(WALL, "on_wall", ("wall",), (), (Guard("release", N, -1),))}

    def transition(ctx, guard):
        if guard == "release":
            return Jump(FREE)
        Jn, _ = ctx.row("wall")
        r = resolve(ctx.mass_matrix(), Jn, np.array([0.0, 1.0]), ctx.u, law="newton",
                    e=ctx.param("e"), mu_s=0.0, mu_d=0.0)
        if float(Jn @ r.u_plus) > 0:
            return Jump(FREE, u=r.u_plus, impact=True)
        return Jump(WALL, u=r.u_plus, impact=True)

    def zeno(ctx, guard):
        return Jump(WALL)             # plastic: the activation jump of mueller eq 7

    outputs = {"x": x, "th": th, "v": v, "w": w_, "gap": gap, "bob_x": x + l * sp.sin(th),
               "normal_force": N}
    return Automaton(model, constraints, modes, {}, outputs, transition,
                     lambda ctx: Jump(FREE), zeno)


PARAMS = {"M": 2.0, "m": 0.5, "l": 0.8, "g": 9.81, "wall": 0.5}


def build(e_default=0.5) -> Scenario:
    """The cart and wall as a Scenario (its FMU interface; the restitution ``e`` a parameter the
    reset map reads), in the style of the bundled scenarios: a user's model file."""
    parameters = [Var("M", PARAMS["M"], "cart mass", "kg"),
                  Var("m", PARAMS["m"], "bob mass", "kg"),
                  Var("l", PARAMS["l"], "rod length", "m"),
                  Var("g", PARAMS["g"], "gravity", "m/s2"),
                  Var("wall", PARAMS["wall"], "wall position", "m"),
                  Var("e", e_default, "coefficient of restitution", "", min=0.0, max=1.0),
                  Var("x_start", 0.0, "initial cart position", "m"),
                  Var("th_start", 0.0, "initial pendulum angle", "rad"),
                  Var("v_start", 1.0, "initial cart speed", "m/s"),
                  Var("w_start", 0.0, "initial pendulum rate", "rad/s")]
    outputs = [Var("x", 0.0, "cart position", "m"), Var("th", 0.0, "pendulum angle", "rad"),
               Var("v", 0.0, "cart speed", "m/s"), Var("w", 0.0, "pendulum rate", "rad/s"),
               Var("gap", 0.0, "bob to wall", "m"),
               Var("normal_force", 0.0, "push of the wall on the bob", "N")]
    outputs += engine_outputs(FREE, "active mode: 1 free, 2 on the wall")

    def initial_state(p):
        return (np.array([p["x_start"], p["th_start"]]), np.array([p["v_start"], p["w_start"]]))

    return Scenario("cart_wall", automaton(), parameters,
                    [Var("F", 0.0, "push on the cart", "N")], outputs, initial_state,
                    positive=("M", "m", "l"))
_AUT = None


def simulator(e, F, q0=(0.0, 0.0), u0=(0.0, 0.0), *, solver="rk4", h_max=1e-3, **params):
    """A started simulator of the cart and wall (the automaton is built once per process)."""
    global _AUT
    if _AUT is None:
        _AUT = automaton()
    sim = Simulator(_AUT, {**PARAMS, **params, "e": e}, solver=solver, h_max=h_max,
                    library=_LIBRARIES.setdefault(solver, ModeLibrary()))
    sim.set_inputs({"F": F})
    sim.start(0.0, list(q0), list(u0))
    return sim


_LIBRARIES = {}   # one mode library per solver: its simulators share the compiled modes


def mass(th, p=PARAMS):
    """Mass matrix of (x, th) (Lagrange): [[M+m, m l cos th], [m l cos th, m l^2]]."""
    M, m, l = p["M"], p["m"], p["l"]
    c = math.cos(th)
    return np.array([[M + m, m * l * c], [m * l * c, m * l * l]])


def free_rhs(F, p=PARAMS):
    """d/dt (x, th, v, w) in free flight, from the Lagrangian
    L = (M+m) v^2/2 + m l cos(th) v w + m l^2 w^2/2 + m g l cos(th)."""
    m, l, g = p["m"], p["l"], p["g"]

    def f(t, y):
        x, th, v, w = y
        rhs = np.array([F + m * l * math.sin(th) * w * w, -m * g * l * math.sin(th)])
        a = np.linalg.solve(mass(th, p), rhs)
        return [v, w, a[0], a[1]]
    return f


def gap(y, p=PARAMS):
    return p["wall"] - y[0] - p["l"] * math.sin(y[1])


def jn(th, p=PARAMS):
    """d gap / d(v, w): the wall's normal row (separating speed Jn u)."""
    return np.array([-1.0, -p["l"] * math.cos(th)])


def newton_impact(y, e, p=PARAMS):
    """Newton restitution on the frictionless wall by hand: u+ = u- - (1+e) vn M^-1 Jn^T / (Jn M^-1 Jn^T)."""
    th, u = y[1], np.array(y[2:])
    J = jn(th, p)
    Minv_J = np.linalg.solve(mass(th, p), J)
    vn = J @ u
    return np.concatenate((y[:2], u - (1 + e) * vn * Minv_J / (J @ Minv_J)))
