"""Passive walker with knees on a slope: wang2019 Sec 3.2 (eq 18-19, Fig 7-10).

The floating base of eq 18: the hip at (q_x, q_y) (world frame, x horizontal downhill, y up)
and four absolute segment angles, measured from the downward vertical and positive towards
+x: thigh q_i1 and shank q_i2 of the inner leg, q_o1 and q_o2 of the outer leg.  A segment
at angle q points along (sin q, -cos q).  Each leg is a thigh of length l_t = a2 + b2 and a
shank of length l_s = a1 + b1 (0.5 m each); point masses: m_H at the hip, m_t on each thigh
b2 below the hip, m_s on each shank b1 below the knee (a1 above the foot).  The ground is the
line y = -x tan(slope) through the origin.

Constraints (eq 18, with the stance foot pinned at the discrete p_x on the slope):
C1/C4 ``i_foot_x``/``o_foot_x``: foot_x - p_x; C2/C5 ``i_foot_y``/``o_foot_y``:
foot_y + p_x tan(slope); C3/C6 ``i_knee``/``o_knee``: q_2 - q_1 (the knee locked straight).

The six phases of Fig 8 (named as in the ANDY example that produced it, JMechW/ANDY
``Example_PassiveWalker/Modeling.m``: inner foot fixed, outer knee open; ...):

1. IFixOOpen  {i_knee, i_foot}: the outer (swing) knee free, 3 dof.  Knee strike
   (q_o2 - q_o1 rising through 0, the knee's hyperextension stop): the outer knee locks,
   a plastic impact by the momentum-consistent activation of mueller eq 7 -> 2.
2. IFixOLock  {o_knee, i_knee, i_foot}: 2 dof.  Heel strike (the outer foot's height above
   the slope falling through 0) -> 4: a plastic impact (eq 19) over its own constraint set,
   the new stance foot pinned *and both knees locked* (the trailing knee is kept locked
   through the impact, as in Hsu Chen's walker), p_x moved to the new stance foot, the legs'
   roles swapped; the trailing foot leaves the ground without impulse.  Knee bend (An and
   Chen's knee-bend behaviour, ANDY's ``ba``): when the stance thigh has turned
   ``bend_angle`` past its angle at knee strike (``p_k``), the stance knee is released -> 3.
3. IBendOLock {o_knee, i_foot}: the stance knee free.  Heel strike -> 4, the impact over the
   next mode's constraints (the bent trailing knee stays free).
4.-6. IOpenOFix, ILockOFix, ILockOBend: the same with the legs' roles swapped; heel strike
   from 5 or 6 returns to 1.

Hsu Chen's walker keeps its stance knee straight to heel strike: with the default
``bend_angle`` (1 rad, more than the stance thigh turns after knee strike) phases 3 and 6 are
not reached and the gait visits 1 -> 2 -> 4 -> 5 -> 1.

Parameters: Hsu Chen's point-foot kneed walker (V. F. Hsu Chen, "Passive dynamic walking
with knees: a point foot model", MIT CSAIL M.Eng. thesis, 2007; wang2019 takes its own from
An and Chen, whose numbers the text does not give): a1 = 0.375, b1 = 0.125, a2 = 0.175,
b2 = 0.325 m, m_H = 0.5, m_t = 0.5, m_s = 0.05 kg and the slope 0.0504 rad, as tabulated
with her start state in the public re-implementation hope-yao/Bipedal (README table of the
"csail master thesis", ``robo/robo.py``: ``_gamma = 0.0504``; found with the project's
``search`` tool); g = 9.81 m/s2.  The default start is the period-one gait found here by
Newton on the stride map (``benchmarks/walker_gait.py``), started from her state (stance
leg 0.1877 rad, swing leg -0.2884 rad, rates -1.1014 and -0.0399 rad/s) just after heel
strike; the inner leg stands on the foot at x = 0.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Curve, Guard, Jump, Mode, Model, Output, Scenario, Segment, Sphere,
                   Start, Var, Visuals, holonomic)

I_OPEN, I_LOCK, I_BEND, O_OPEN, O_LOCK, O_BEND = 1, 2, 3, 4, 5, 6
NAMES = {I_OPEN: "IFixOOpen", I_LOCK: "IFixOLock", I_BEND: "IBendOLock",
         O_OPEN: "IOpenOFix", O_LOCK: "ILockOFix", O_BEND: "ILockOBend"}
Q_NAMES = ("qx", "qy", "qi1", "qi2", "qo1", "qo2")
U_NAMES = ("ux", "uy", "wi1", "wi2", "wo1", "wo2")

# the period-one gait at slope 0.0504 rad (benchmarks/walker_gait.py): just after a heel
# strike, inner leg on the foot at the origin; stance angle, swing thigh, swing shank, rates
FIXED_POINT = (0.18818546025261035, -0.2889854602521767, -0.2889854602521767, -1.109587331164192, -0.05714810632594326, -0.05714810632594326)


def leg_points(q, leg, lt=0.5, ls=0.5):
    """(knee, foot) of ``leg`` ("i" or "o") at the coordinates q, numerically (lengths in m)."""
    k = 2 if leg == "i" else 4
    knee = (q[0] + lt * math.sin(q[k]), q[1] - lt * math.cos(q[k]))
    foot = (knee[0] + ls * math.sin(q[k + 1]), knee[1] - ls * math.cos(q[k + 1]))
    return knee, foot


def start_state(z, lt=0.5, ls=0.5):
    """Full (q, u) of the reduced heel-strike state z = (stance angle, swing thigh, swing
    shank, their rates), the inner leg straight on the foot at the origin."""
    th, s1, s2, w, v1, v2 = z
    L = lt + ls
    q = np.array([-L * math.sin(th), L * math.cos(th), th, th, s1, s2])
    u = np.array([-L * math.cos(th) * w, -L * math.sin(th) * w, w, w, v1, v2])
    return q, u


def build_model():
    """The unconstrained floating-base walker: Kane's F_r + F_r* = 0 (gillespie2005 eq 1-4)."""
    q = dynamicsymbols(" ".join(Q_NAMES))
    u = dynamicsymbols(" ".join(U_NAMES))
    qx, qy, qi1, qi2, qo1, qo2 = q
    mH, mt, ms, a1, b1, a2, b2, g = sp.symbols("mH mt ms a1 b1 a2 b2 g")
    slope, bend = sp.symbols("slope bend_angle")
    lt = a2 + b2
    N = ReferenceFrame("N")                    # N.x horizontal downhill, N.y up
    O = Point("O")
    O.set_vel(N, 0)
    sub = {qd.diff(): ud for qd, ud in zip(q, u)}
    d = lambda a: sp.sin(a) * N.x - sp.cos(a) * N.y     # noqa: E731 - along a segment
    H = O.locatenew("H", qx * N.x + qy * N.y)
    pts = [("hip", H, mH)]
    for leg, (t1, t2) in (("i", (qi1, qi2)), ("o", (qo1, qo2))):
        T = H.locatenew(f"T{leg}", b2 * d(t1))
        K = H.locatenew(f"K{leg}", lt * d(t1))
        S = K.locatenew(f"S{leg}", b1 * d(t2))
        pts += [(f"thigh_{leg}", T, mt), (f"shank_{leg}", S, ms)]
    for _, P, _m in pts:
        P.set_vel(N, P.pos_from(O).dt(N).subs(sub))
    loads = [(P, -m * g * N.y) for _, P, m in pts]
    return Model(N, list(q), list(u), [qd.diff() - ud for qd, ud in zip(q, u)],
                 [Particle(n, P, m) for n, P, m in pts], loads,
                 params=[mH, mt, ms, a1, b1, a2, b2, g, slope, bend], name="kneed_walker"), pts, N


def visuals(N) -> Visuals:
    """The slope y = -x tan(slope) as a surface under the walker (2 m about the hip), the hip
    mass as a sphere, each leg a thigh and a shank (inner leg blue, outer leg orange), the
    stance foot's pin (p_x on the slope) marked."""
    qx, qy, qi1, qi2, qo1, qo2 = dynamicsymbols(" ".join(Q_NAMES))
    a1, b1, a2, b2, slope, p_x, s = sp.symbols("a1 b1 a2 b2 slope p_x s")
    lt, ls = a2 + b2, a1 + b1
    hip = (qx, qy)
    items = [Curve((s, -s * sp.tan(slope)), s, qx - 1, qx + 1, samples=2, name="slope",
                   color="#7f8c8d", width=3),
             Sphere((p_x, -p_x * sp.tan(slope)), 0.025, name="stance foot", color="#2c3e50")]
    points = {"hip": hip}
    for leg, (t1, t2), color in (("i", (qi1, qi2), "#1f4e79"), ("o", (qo1, qo2), "#d35400")):
        knee = (qx + lt * sp.sin(t1), qy - lt * sp.cos(t1))
        foot = (knee[0] + ls * sp.sin(t2), knee[1] - ls * sp.cos(t2))
        items += [Segment(hip, knee, name=f"thigh_{leg}", color=color, width=5),
                  Segment(knee, foot, name=f"shank_{leg}", color=color, width=4)]
        points.update({f"knee_{leg}": knee, f"foot_{leg}": foot})
    items.append(Sphere(hip, 0.05, name="hip", color="#c0392b"))
    return Visuals(N, items, points=points)


def heel_strike(swing, ctx, impact_constraints, mode):
    """Heel strike of leg ``swing``: the foot pinned where it struck (p_x), the legs' roles
    swapped, the speeds by the plastic impact map over ``impact_constraints`` (eq 19)."""
    lt = ctx.param("a2") + ctx.param("b2")
    ls = ctx.param("a1") + ctx.param("b1")
    _, foot = leg_points(ctx.q, swing, lt, ls)
    return Jump(mode, {"p_x": foot[0], "step_count": ctx.discrete["step_count"] + 1},
                impact=True, impact_constraints=impact_constraints)


def build() -> Scenario:
    model, pts, N = build_model()
    q = dynamicsymbols(" ".join(Q_NAMES))
    qx, qy, qi1, qi2, qo1, qo2 = q
    a1, b1, a2, b2, g = sp.symbols("a1 b1 a2 b2 g")
    slope, bend = sp.symbols("slope bend_angle")
    p_x, p_k = sp.symbols("p_x p_k")
    lt, ls = a2 + b2, a1 + b1
    foot = {"i": (qx + lt * sp.sin(qi1) + ls * sp.sin(qi2), qy - lt * sp.cos(qi1) - ls * sp.cos(qi2)),
            "o": (qx + lt * sp.sin(qo1) + ls * sp.sin(qo2), qy - lt * sp.cos(qo1) - ls * sp.cos(qo2))}
    cons = []
    for leg, (t1, t2) in (("i", (qi1, qi2)), ("o", (qo1, qo2))):
        fx, fy = foot[leg]
        cons += [holonomic(model, f"{leg}_foot_x", fx - p_x),                    # C1, C4
                 holonomic(model, f"{leg}_foot_y", fy + p_x * sp.tan(slope)),    # C2, C5
                 holonomic(model, f"{leg}_knee", t2 - t1)]                        # C3, C6
    # height of a foot above the slope (vertical gap)
    gap = {leg: fy + fx * sp.tan(slope) for leg, (fx, fy) in foot.items()}
    i_fix, o_fix = ("i_foot_x", "i_foot_y"), ("o_foot_x", "o_foot_y")

    def knee_strike(mode, stance_thigh):
        return lambda ctx: Jump(mode, {"p_k": ctx.q[stance_thigh]}, impact=True)

    def bend_guard(thigh, mode):
        return Guard("stance_knee_bend", thigh - p_k + bend, -1,
                     reset=lambda ctx: Jump(mode))

    def strike_guard(swing, locked, mode):
        new = (f"{swing}_foot_x", f"{swing}_foot_y", f"{swing}_knee")
        trailing = ("i_knee",) if swing == "o" else ("o_knee",)
        keep = new + trailing if locked else new
        return Guard("heel_strike", gap[swing], -1,
                     reset=lambda ctx: heel_strike(swing, ctx, keep, mode))

    modes = {
        I_OPEN: Mode(name=NAMES[I_OPEN], constraints=("i_knee",) + i_fix, guards=(
            Guard("knee_strike", qo2 - qo1, +1, reset=knee_strike(I_LOCK, 2)),)),
        I_LOCK: Mode(name=NAMES[I_LOCK], constraints=("i_knee", "o_knee") + i_fix, guards=(
            strike_guard("o", True, O_OPEN), bend_guard(qi1, I_BEND))),
        I_BEND: Mode(name=NAMES[I_BEND], constraints=("o_knee",) + i_fix, guards=(
            strike_guard("o", False, O_OPEN),)),
        O_OPEN: Mode(name=NAMES[O_OPEN], constraints=("o_knee",) + o_fix, guards=(
            Guard("knee_strike", qi2 - qi1, +1, reset=knee_strike(O_LOCK, 4)),)),
        O_LOCK: Mode(name=NAMES[O_LOCK], constraints=("o_knee", "i_knee") + o_fix, guards=(
            strike_guard("i", True, I_OPEN), bend_guard(qo1, O_BEND))),
        O_BEND: Mode(name=NAMES[O_BEND], constraints=("i_knee",) + o_fix, guards=(
            strike_guard("i", False, I_OPEN),)),
    }
    ke = sum(m * P.vel(N).dot(P.vel(N)) for _, P, m in pts) / 2
    pe = sum(m * g * P.pos_from(pts[0][1]).dot(N.y) for _, P, m in pts[1:])
    pe += sum(m for _, _, m in pts) * g * qy
    outputs = [
        Output("hip_x", qx, "horizontal position of the hip (x downhill)", "m"),
        Output("hip_y", qy, "height of the hip", "m"),
        Output("qi1", qi1, "inner thigh angle from the downward vertical", "rad"),
        Output("qi2", qi2, "inner shank angle from the downward vertical", "rad"),
        Output("qo1", qo1, "outer thigh angle from the downward vertical", "rad"),
        Output("qo2", qo2, "outer shank angle from the downward vertical", "rad"),
        Output("stance_foot_x", discrete="p_x", unit="m",
               description="horizontal position of the stance foot (p_x)"),
        Output("step_count", discrete="step_count", type="Integer", start=0,
               description="heel strikes so far"),
        Output("kinetic_energy", ke, "kinetic energy", "J"),
        Output("potential_energy", pe, "gravitational potential energy (zero at y = 0)", "J"),
        Output("impact_count", description="impacts so far (knee and heel strikes)",
               start=0, type="Integer"),
    ]
    aut = Automaton(model, cons, modes, {"p_x": 0.0, "p_k": 0.0, "step_count": 0.0}, outputs)
    parameters = [
        Var("mH", 0.5, "hip mass (Hsu Chen 2007)", "kg"),
        Var("mt", 0.5, "thigh mass (Hsu Chen 2007)", "kg"),
        Var("ms", 0.05, "shank mass (Hsu Chen 2007)", "kg"),
        Var("a1", 0.375, "foot to shank mass (Hsu Chen 2007)", "m"),
        Var("b1", 0.125, "shank mass to knee (Hsu Chen 2007)", "m"),
        Var("a2", 0.175, "knee to thigh mass (Hsu Chen 2007)", "m"),
        Var("b2", 0.325, "thigh mass to hip (Hsu Chen 2007)", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("slope", 0.0504, "slope angle, downhill towards +x (Hsu Chen 2007)", "rad"),
        Var("bend_angle", 1.0, "stance thigh rotation after knee strike at which the stance "
            "knee is released (An and Chen's knee bend; 1 rad: never)", "rad"),
    ]
    q0, u0 = start_state(FIXED_POINT)
    start = ([Start(n, float(v), f"initial {n} (period-one gait)", "m" if i < 2 else "rad")
              for i, (n, v) in enumerate(zip(Q_NAMES, q0))]
             + [Start(n, float(v), f"initial {n} (period-one gait)", "m/s" if i < 2 else "rad/s")
                for i, (n, v) in enumerate(zip(U_NAMES, u0))])
    return Scenario("kneed_walker", aut, parameters, [], start=start, precompile=True,
                    visuals=visuals(N),
                    positive=("mH", "mt", "ms", "a1", "b1", "a2", "b2"),
                    nonnegative=("g",))
