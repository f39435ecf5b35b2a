"""The disk_fence scenario itself (``build``; the package's docstring describes it): imports
sympy, and is imported only where the scenario is built (``scenarios.disk_fence.build``)."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

from embed import (Automaton, Feasible, Guard, Jump, Mode, Model, Scenario, Var, engine_outputs,
                   holonomic, motion)
from embed import Curve, Sphere, Visuals

from . import jobs
from .extension import FENCE_INPUTS, FENCE_OUTPUTS, FenceGeometry  # noqa: F401 - the interface
from .modes import ARC, FENCE_BASE, FREE, POLY, POLY_C, RAMP, arc_family, normal_force, poly_family

# the fast worker's jobs (embed.background.worker: "module:function"), and what it runs once at start
WORKER_JOBS = (jobs.PREPARE_FENCE,)
WORKER_SET_UP = jobs.SET_UP_WORKER


def symbols():
    """The coordinates q1..q4, speeds u1..u4 and parameters (m, J, r, phi, L, g)."""
    q = dynamicsymbols("q1:5")
    u = dynamicsymbols("u1:5")
    m, J, r, phi, L, g = sp.symbols("m J r phi L g")
    return q, u, (m, J, r, phi, L, g)


def build_model():
    """The disk in the plane under gravity (``embed.Model``), before any constraint."""
    q, u, (m, J, r, phi, L, g) = symbols()
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    C = O.locatenew("C", q[0] * frame.x + q[1] * frame.y)
    C.set_vel(frame, u[0] * frame.x + u[1] * frame.y)
    B = frame.orientnew("B", "Axis", [q[2], frame.z])
    B.set_ang_vel(frame, u[2] * frame.z)
    disk = RigidBody("disk", C, B, m, (inertia(frame, 0, 0, J), C))
    loads = [(C, -m * g * frame.y)]
    kd = [qi.diff() - ui for qi, ui in zip(q, u)]
    return Model(frame, q, u, kd, [disk], loads, params=[m, J, r, phi, L, g], name="disk_fence")


def over_ramp(d):
    """touch_ramp is watched only while the disk is above the ramp (not past its end)."""
    return d["over_ramp"] == 1.0


def visuals(model) -> Visuals:
    """The disk (its frame marked) and the ramp from O at angle phi to P (q4 = L).  The fence
    announced at run time is not drawn yet (its profile is text held by the FMU's extension)."""
    body = model.bodies[0]
    C, B = body.masscenter, body.frame
    O = next(iter(C._pos_dict))
    phi, r, L, s = sp.symbols("phi r L s")
    return Visuals(model.frame, [
        Curve((s * sp.cos(phi), s * sp.sin(phi)), s, 0, L, samples=2, name="ramp", width=3),
        Sphere(C, r, frame=B, name="disk")], origin=O, points={"C": C})


def build() -> Scenario:
    """The disk_fence scenario (module docstring).

    Returns
    -------
    embed.Scenario
    """
    model = build_model()
    q, u, (m, J, r, phi, L, g) = symbols()
    tx, ty, nx, ny = sp.cos(phi), sp.sin(phi), -sp.sin(phi), sp.cos(phi)
    constraints = {
        "ramp_x": holonomic(model, "ramp_x", q[0] - (q[3] * tx + r * nx)),
        "ramp_y": holonomic(model, "ramp_y", q[1] - (q[3] * ty + r * ny)),
        "park": motion(model, "park", u[3]),
    }
    N_ramp = normal_force("ramp_x", "ramp_y", nx, ny)
    height = q[0] * nx + q[1] * ny - r          # distance of the disk from the ramp line
    modes = {
        FREE: Mode(FREE, "free flight", ("park",), (),
                   (Guard("touch_ramp", height, -1, enabled=over_ramp),),
                   outputs=(("N", sp.Integer(0)),)),
        RAMP: Mode(RAMP, "ramp", ("ramp_x", "ramp_y"), (), (
            Guard("ramp_end", L - q[3], -1),
            Guard("release", N_ramp, -1)), outputs=(("N", N_ramp),)),
    }

    def fence_id(ctx):
        uid = int(ctx.discrete["fence"])
        if uid == -1:
            return ARC
        if uid == -2:
            return POLY
        return FENCE_BASE + uid if uid > 0 and (FENCE_BASE + uid) in ctx.sim.automaton.modes else None

    def transition(ctx, guard):
        if guard == "touch_ramp":
            x, y = ctx.q[0], ctx.q[1]
            phi_v, L_v = ctx.param("phi"), ctx.param("L")
            s = x * math.cos(phi_v) + y * math.sin(phi_v)
            if 0.0 <= s <= L_v:
                qn = np.array(ctx.q)
                qn[3] = s
                un = np.array(ctx.u)
                un[3] = un[0] * math.cos(phi_v) + un[1] * math.sin(phi_v)
                return Jump(RAMP, {"contact": 1.0}, q=qn, u=un, impact=True)
            return Jump(FREE)
        if guard == "release":
            return Jump(FREE, {"contact": 0.0, "over_ramp": float(ctx.mode == RAMP)})
        if guard == "fence_end":
            return Jump(FREE, {"contact": 0.0, "over_ramp": 0.0})
        if guard == "ramp_end":
            f = fence_id(ctx)
            return (Jump(f, {"contact": 1.0}) if f is not None
                    else Jump(FREE, {"contact": 0.0, "over_ramp": 0.0}))
        if guard == "back_to_ramp":
            return Jump(RAMP, {"contact": 1.0})
        raise AssertionError(f"no transition for {guard!r} in mode {ctx.mode}")

    def initial(ctx):
        return Jump(RAMP, {"contact": 1.0})

    outputs = {**{f"q{i + 1}": q[i] for i in range(4)}, **{f"u{i + 1}": u[i] for i in range(4)},
               "N": sp.Integer(0),
               "kinetic_energy": (m * (u[0] ** 2 + u[1] ** 2) + J * u[2] ** 2) / 2,
               "potential_energy": m * g * q[1]}
    arc_cons, arc = arc_family()
    for name, phi_c in arc_cons.items():
        constraints[name] = holonomic(model, name, phi_c)
    modes[ARC] = arc
    poly_cons, modes[POLY] = poly_family()
    for name, phi_c in poly_cons.items():
        constraints[name] = holonomic(model, name, phi_c)
    discrete = {"contact": 1.0, "fence": 0.0, "over_ramp": 1.0, "R_arc": 10.0, "Lf_arc": 6.7,
                **{str(c): 0.0 for c in POLY_C}, "Lf_poly": 6.7}
    aut = Automaton(model, constraints, modes, discrete, outputs, transition, initial)
    parameters = [
        Var("m", 1.0, "disk mass", "kg"), Var("J", 0.125, "central moment of inertia", "kg.m2"),
        Var("r", 0.5, "disk radius", "m"),
        Var("phi", -math.radians(5.0), "ramp angle (negative: the ramp descends along q4)", "rad"),
        Var("L", 25.3, "ramp length from O to P, where the fence begins", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("q4_start", 0.0, "initial path parameter of the contact point on the ramp", "m"),
        Var("u4_start", 0.0, "initial rate of q4", "m/s"),
        Var("q3_start", 0.0, "initial disk angle", "rad"),
        Var("u3_start", 0.0, "initial spin", "rad/s"),
    ]
    interface = [Var(f"q{i}", 0.0, desc, unit) for i, desc, unit in (
        (1, "x of the disk centre", "m"), (2, "y of the disk centre", "m"),
        (3, "disk angle", "rad"), (4, "path parameter of the contact point", "m"))]
    interface += [Var(f"u{i}", 0.0, f"rate of q{i}", "") for i in range(1, 5)]
    interface += [Var("N", 0.0, "normal force of the ramp or fence on the disk", "N"),
                  Var("kinetic_energy", 0.0, "kinetic energy", "J"),
                  Var("potential_energy", 0.0, "potential energy", "J"),
                  Var("contact", 1.0, "the disk touches the ramp or the fence", type="Boolean")]
    interface += engine_outputs(RAMP, "active mode: 1 free flight, 2 ramp, 3 fence")

    def initial_state(p):
        ph, rr = p["phi"], p["r"]
        s = p["q4_start"]
        qv = np.array([s * math.cos(ph) - rr * math.sin(ph), s * math.sin(ph) + rr * math.cos(ph),
                       p["q3_start"], s])
        us = p["u4_start"]
        uv = np.array([us * math.cos(ph), us * math.sin(ph), p["u3_start"], us])
        return qv, uv

    def arc_entry(sim):
        """How ``embed-fmu check`` enters the arc family's mode, which only an announced fence
        enters (its profile is not defined at the start, 25 m before it begins): the disk one
        metre past P, on the ramp line's extension (moved onto the arc by the checker), with the
        discrete values ``announce.activate`` sets."""
        s, ph, rr = sim.param("L") + 1.0, sim.param("phi"), sim.param("r")
        qv = np.array([s * math.cos(ph) - rr * math.sin(ph), s * math.sin(ph) + rr * math.cos(ph),
                       0.0, s])
        return Jump(ARC, {"contact": 1.0, "fence": -1.0}, q=qv, u=np.zeros(4))

    return Scenario("disk_fence", aut, parameters, [], interface, initial_state, visuals=visuals(model),
                    check_entries={ARC: arc_entry},
                    extra_outputs={"contact": ("discrete", "contact")},
                    positive=("m", "J", "r", "L", "g"), embedding="background",
                    precompile=True, extension=FenceGeometry, feasible=[
                        Feasible("the disk starts beyond the ramp's end (q4 > L)",
                                 guard="ramp_end"),
                        Feasible("the ramp pulls the disk (a tensile normal force in contact)",
                                 guard="release"),
                        Feasible("the disk penetrates the ramp", guard="touch_ramp")])
