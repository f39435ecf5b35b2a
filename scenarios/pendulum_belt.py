"""Double pendulum striking parts on a conveyor belt: gillespie2005 Example 3 (Sec 6.3, Fig 12-14, Table II).

The double pendulum of pendulum_line (massless rods l1, l2, particles m1, m2, q1, q2
from the vertical) swings above a belt at depth d moving at v_b.  The belt carries
parts of two materials: material 2 (e2, mu_s2, mu_d2) where the belt coordinate of
the contact point s = tip_x - v_b t lies in [s2_start, s2_end), material 1 (e1, mu_s1,
mu_d1) elsewhere; the material struck stays in force until the tip leaves the belt.
(The tip keeps pace with the belt: its belt coordinate at the first three impacts of
the default run is -1.292, -1.258, -1.277, so the default part of material 2 is the one
the third impact finds, as in the paper's story.)  The automaton of Fig 13:

- mode 1, free (2 dof): the tip reaching the belt surface (approaching only) is an
  impact, resolved by ``embed.hybrid.impact`` with the contact law of the material (Smith's
  law by default, or Newton restitution with Coulomb friction) in the impulse-momentum
  balance of the free pendulum (gillespie2005 Sec 5.3).  With e > 0 it rebounds; with
  e = 0 the tip stays on the belt, sliding (mode 2) or stuck (mode 3).
- mode 2, sliding (1 dof, the slider-crank): tip_y = -d embedded; Coulomb friction
  -mu_d N sign(slip) with slip = tip_vx - v_b; the normal force N is the constraint
  force.  Leaves when N turns tensile (mode 1) or the slip vanishes (mode 3 if the
  friction needed lies inside mu_s N).
- mode 3, stuck (0 dof): the tip also moves with the belt, tip_x = x_c + v_b t, a
  rheonomic constraint.  Leaves when N turns tensile (mode 1) or the friction needed
  leaves the cone (mode 2), as when the belt has dragged the pendulum out straight.

Impacts accumulating in time (a Zeno rebound sequence) hand over to persistent
contact: a plastic impact into mode 2 or 3.  Inputs: v_b_in (the belt speed from the
master; until set, the parameter v_b) and a force on the tip (F_tip_x, F_tip_y).
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Arrow, Automaton, Curve, Feasible, Guard, Jump, Mode, Model, Output, Scenario,
                   Segment, Sphere, Start, Var, Visuals, holonomic)
from embed.hybrid.impact import resolve

FREE, SLIDING, STUCK = 1, 2, 3


def build_model():
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2 = dynamicsymbols("u1 u2")
    l1, l2, m1, m2, d, g = sp.symbols("l1 l2 m1 m2 d g")
    N, F_t, vb, Fx, Fy = sp.symbols("N F_t v_b_in F_tip_x F_tip_y")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    P1 = O.locatenew("P1", l1 * (sp.sin(q1) * frame.x - sp.cos(q1) * frame.y))
    P2 = P1.locatenew("P2", l2 * (sp.sin(q2) * frame.x - sp.cos(q2) * frame.y))
    sub = {q1.diff(): u1, q2.diff(): u2}
    P1.set_vel(frame, P1.pos_from(O).dt(frame).subs(sub))
    P2.set_vel(frame, P2.pos_from(O).dt(frame).subs(sub))
    loads = [(P1, -m1 * g * frame.y),
             (P2, -m2 * g * frame.y + (F_t + Fx) * frame.x + (N + Fy) * frame.y)]
    model = Model(frame, [q1, q2], [u1, u2], [q1.diff() - u1, q2.diff() - u2],
                  [Particle("p1", P1, m1), Particle("p2", P2, m2)], loads, forces=[N, F_t],
                  params=[l1, l2, m1, m2, d, g], inputs=[vb, Fx, Fy], name="pendulum_belt")
    return model


def visuals(frame, tip_x, tip_y) -> Visuals:
    """The rods R1, R2 and particles P1, P2; the belt surface at depth d, its marks and the part of
    material 2 carried at v_b_in; the contact force (F_t, N) on the tip."""
    q1, l1, d, vb, s2a, s2b = sp.symbols("q1 l1 d v_b_in s2_start s2_end")
    q1 = dynamicsymbols("q1")
    t, s = sp.symbols("t s")
    N, F_t = sp.symbols("N F_t")
    P1 = (l1 * sp.sin(q1), -l1 * sp.cos(q1))
    P2 = (tip_x, tip_y)
    return Visuals(frame, [
        Curve((s, -d), s, -3, 3, samples=2, name="belt", color="#444444", width=3),
        Curve((s, -d - 0.05), s, -3, 3, samples=121, name="belt marks", color="#888888",
              when=sp.sin(2 * sp.pi * (s - vb * t) / 0.4)),
        Curve((s, -d + 0.01), s, s2a + vb * t, s2b + vb * t, samples=2, color="#d35400",
              width=8, name="part of material 2"),
        Segment((0, 0), P1, name="R1"), Segment(P1, P2, name="R2"),
        Sphere(P1, 0.06, name="P1"), Sphere(P2, 0.06, name="P2"),
        Arrow(P2, (F_t, N), scale=0.02, name="belt force on P2")],
        points={"P1": P1, "P2": P2})


def build() -> Scenario:
    model = build_model()
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2 = dynamicsymbols("u1 u2")
    l1, l2, m1, m2, d, g = sp.symbols("l1 l2 m1 m2 d g")
    N, F_t, vb = sp.symbols("N F_t v_b_in")
    s_dir, x_c, mu_d_z, mu_s_z = sp.symbols("s_dir x_c mu_d_z mu_s_z")
    t = sp.Symbol("t")
    tip_x = l1 * sp.sin(q1) + l2 * sp.sin(q2)
    tip_y = -l1 * sp.cos(q1) - l2 * sp.cos(q2)
    tip_vx = l1 * sp.cos(q1) * u1 + l2 * sp.cos(q2) * u2
    slip = tip_vx - vb
    constraints = {"on_belt": holonomic(model, "on_belt", tip_y + d),
                   "with_belt": holonomic(model, "with_belt", tip_x - x_c - vb * t)}

    def material(ctx):
        """(e, mu_s, mu_d) of the part struck: material 2 where the belt coordinate of the
        contact point, s = tip_x - v_b t, lies in [s2_start, s2_end), else material 1."""
        s = ctx.outputs["tip_x"] - ctx.param("v_b_in") * ctx.t
        k = "2" if ctx.param("s2_start") <= s < ctx.param("s2_end") else "1"
        return ctx.param("e" + k), ctx.param("mu_s" + k), ctx.param("mu_d" + k)

    def contact_rows(ctx):
        Jn, _ = ctx.row("on_belt")
        Jt, _ = ctx.row("with_belt")
        return Jn, Jt

    def into_contact(ctx, u_plus, outcome, mu_s, mu_d, Pn, Pt, impact=True):
        common = {"mu_s_z": mu_s, "mu_d_z": mu_d, "last_impulse_n": Pn, "last_impulse_t": Pt,
                  "contact": 1.0}
        if outcome == "stick":
            x_c = ctx.outputs["tip_x"] - ctx.param("v_b_in") * ctx.t
            return Jump(STUCK, {**common, "x_c": x_c}, u=u_plus, impact=impact)
        Jn, Jt = contact_rows(ctx)
        rel = float(Jt @ u_plus) - ctx.param("v_b_in")
        return Jump(SLIDING, {**common, "s_dir": math.copysign(1.0, rel)}, u=u_plus,
                    impact=impact)

    def strike(ctx):
        e, mu_s, mu_d = material(ctx)
        Jn, Jt = contact_rows(ctx)
        law = "smith" if ctx.param("contact_law") < 0.5 else "newton"
        r = resolve(ctx.mass_matrix(), Jn, Jt, ctx.u, law=law, e=e, mu_s=mu_s, mu_d=mu_d,
                    v_surface=ctx.param("v_b_in"))
        if e > 0 and float(Jn @ r.u_plus) > 0:
            return Jump(FREE, {"last_impulse_n": r.Pn, "last_impulse_t": r.Pt, "contact": 0.0},
                        u=r.u_plus, impact=True)
        return into_contact(ctx, r.u_plus, r.outcome, mu_s, mu_d, r.Pn, r.Pt)

    def slip_zero(ctx):
        """Sliding -> stuck if the friction sticking needs lies in the static cone."""
        f = ctx.forces_in(STUCK, x_c=ctx.outputs["tip_x"] - ctx.param("v_b_in") * ctx.t)
        if abs(f["F_t"]) <= ctx.discrete["mu_s_z"] * f["N"]:
            return Jump(STUCK, {"x_c": ctx.outputs["tip_x"] - ctx.param("v_b_in") * ctx.t})
        return Jump(SLIDING, {"s_dir": -math.copysign(1.0, f["F_t"])})

    def zeno(ctx, guard):
        """Rebounds accumulating: persistent contact after a plastic impact (wang2019 eq 19)."""
        e, mu_s, mu_d = material(ctx)
        Jn, Jt = contact_rows(ctx)
        r = resolve(ctx.mass_matrix(), Jn, Jt, ctx.u, law="newton", e=0.0, mu_s=mu_s, mu_d=mu_d,
                    v_surface=ctx.param("v_b_in"))
        return into_contact(ctx, r.u_plus, r.outcome, mu_s, mu_d, r.Pn, r.Pt)

    release = Guard("release", N, -1, reset=lambda ctx: Jump(FREE, {"contact": 0.0}))
    modes = {
        FREE: Mode(name="free", laws=((N, 0), (F_t, 0)),
                   guards=(Guard("strike", tip_y + d, -1, reset=strike),)),
        SLIDING: Mode(name="sliding", constraints=("on_belt",),
                      laws=((F_t, -mu_d_z * s_dir * N),),
                      guards=(release, Guard("slip_zero", s_dir * slip, -1, reset=slip_zero))),
        STUCK: Mode(name="stuck", constraints=("on_belt", "with_belt"), guards=(
            release, Guard("friction_cone", mu_s_z * N - sp.Abs(F_t), -1, reset=lambda ctx: Jump(
                SLIDING, {"s_dir": -math.copysign(1.0, ctx.forces["F_t"])})))),
    }
    ke = (m1 * l1 ** 2 * u1 ** 2 + m2 * (tip_vx ** 2 + (l1 * sp.sin(q1) * u1
                                                       + l2 * sp.sin(q2) * u2) ** 2)) / 2
    outputs = [
        Output("q1", q1, "angle of R1 from the vertical", "rad"),
        Output("q2", q2, "angle of R2 from the vertical", "rad"),
        Output("u1", u1, "rate of q1", "rad/s"), Output("u2", u2, "rate of q2", "rad/s"),
        Output("tip_x", tip_x, "horizontal position of the tip P2", "m"),
        Output("tip_y", tip_y, "vertical position of the tip P2", "m"),
        Output("last_impulse_n", discrete="last_impulse_n",
               description="normal impulse of the last impact", unit="N.s"),
        Output("last_impulse_t", discrete="last_impulse_t",
               description="tangential impulse of the last impact", unit="N.s"),
        Output("tip_vx", tip_vx, interface=False),
        Output("normal_force", N, "normal force of the belt on the tip (up)", "N"),
        Output("tangential_force", F_t, "friction force of the belt on the tip along n1", "N"),
        Output("kinetic_energy", ke, "kinetic energy", "J"),
        Output("contact", discrete="contact", description="the tip is on the belt",
               type="Boolean"),
        Output("impact_count", description="impacts so far", start=0, type="Integer"),
    ]
    discrete = {"s_dir": 1.0, "x_c": 0.0, "mu_d_z": 0.0, "mu_s_z": 0.0, "contact": 0.0,
                "last_impulse_n": 0.0, "last_impulse_t": 0.0}
    aut = Automaton(model, constraints, modes, discrete, outputs,
                    initial=lambda ctx: Jump(FREE, {"contact": 0.0}), zeno=zeno)
    parameters = [
        Var("l1", 1.0, "length of rod R1", "m"), Var("l2", 1.0, "length of rod R2", "m"),
        Var("m1", 1.0, "mass of particle P1", "kg"), Var("m2", 1.0, "mass of particle P2", "kg"),
        Var("d", 1.2, "depth of the belt surface below the pivot O", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("v_b", 2.5, "belt speed (used until the input v_b_in is set)", "m/s"),
        Var("e1", 0.9, "coefficient of restitution of material 1", "", min=0.0, max=1.0),
        Var("mu_s1", 0.4978, "static friction coefficient of material 1", ""),
        Var("mu_d1", 0.4, "dynamic friction coefficient of material 1", ""),
        Var("e2", 0.0, "coefficient of restitution of material 2", "", min=0.0, max=1.0),
        Var("mu_s2", 0.2489, "static friction coefficient of material 2", ""),
        Var("mu_d2", 0.2, "dynamic friction coefficient of material 2", ""),
        Var("s2_start", -1.285, "belt coordinate (tip_x - v_b t) where the part of material 2 "
            "begins", "m"),
        Var("s2_end", -1.265, "belt coordinate where the part of material 2 ends", "m"),
        Var("contact_law", 0.0, "0: Smith's law (the paper's), 1: Newton restitution + Coulomb",
            "", min=0.0, max=1.0),
    ]
    start = [Start("q1", -math.pi / 9, "initial angle of R1 from the vertical", "rad"),
             Start("q2", -4 * math.pi / 9, "initial angle of R2 from the vertical", "rad"),
             Start("u1", 3.0, "initial rate of q1", "rad/s"),
             Start("u2", -0.3, "initial rate of q2", "rad/s")]
    inputs = [Var("v_b_in", 2.5, "belt speed from the master (the parameter v_b until set)", "m/s"),
              Var("F_tip_x", 0.0, "force on the tip P2 along n1", "N"),
              Var("F_tip_y", 0.0, "force on the tip P2 along n2 (up)", "N")]
    return Scenario("pendulum_belt", aut, parameters, inputs, start=start,
                    visuals=visuals(model.frame, tip_x, tip_y),
                    input_defaults={"v_b_in": "v_b"},
                    # three modes, four partitions: all compiled (LLVM) at set-up, so that an
                    # impact step never waits for a compile
                    precompile=True,
                    positive=("l1", "l2", "m1", "m2", "g"),
                    nonnegative=("e1", "mu_s1", "mu_d1", "e2", "mu_s2", "mu_d2"),
                    feasible=[
                        Feasible("the tip starts inside the belt (below its surface y = -d)",
                                 guard="strike"),
                        Feasible("the belt pulls the tip (a tensile normal force in contact)",
                                 guard="release"),
                        Feasible("contact_law must be 0 (Smith) or 1 (Newton)",
                                 params=lambda p: -abs(p["contact_law"] - round(p["contact_law"])))])
