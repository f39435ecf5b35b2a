"""A gripper jaw closing on a block held by a compliant mount: a user's model, public API only.

Along one line: the jaw (mass m_j, position x_j of its face, speed v_j), pushed by the
input force F, and the block (mass m_b, position x_b of its near face, speed v_b) on a
mount of stiffness k that holds it at x_b = 0.  The gap x_b - x_j >= 0 closes:

- mode 1, open (2 dof): the contact force N is 0; the gap reaching 0 is an impact with
  Newton's restitution e between the two bodies (gillespie2005 Sec 5.3); they separate
  again, or with e = 0 the jaw grips.
- mode 2, gripping (1 dof): the contact x_b - x_j = 0 embedded; N, declared as a force of
  the model, is the constraint force, solved with the accelerations.  The jaw lets go when
  N falls through 0 (F pulled back).

Pushed on, the rebounds accumulate (a Zeno sequence): the automaton then grips with a
plastic impact (the activation jump of mueller eq 7).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Guard, Jump, Mode, Model, Output, Scenario, Start, Var,
                   holonomic)

OPEN, GRIPPING = 1, 2


def build_model() -> Model:
    x_j, x_b, v_j, v_b = dynamicsymbols("x_j x_b v_j v_b")
    m_j, m_b, k, N, F = sp.symbols("m_j m_b k N F")
    frame = ReferenceFrame("A")
    O = Point("O")
    O.set_vel(frame, 0)
    jaw = O.locatenew("J", x_j * frame.x)
    jaw.set_vel(frame, v_j * frame.x)
    block = O.locatenew("B", x_b * frame.x)
    block.set_vel(frame, v_b * frame.x)
    loads = [(jaw, (F - N) * frame.x), (block, (N - k * x_b) * frame.x)]
    return Model(frame, [x_j, x_b], [v_j, v_b], [x_j.diff() - v_j, x_b.diff() - v_b],
                 [Particle("jaw", jaw, m_j), Particle("block", block, m_b)], loads,
                 forces=[N], params=[m_j, m_b, k], inputs=[F], name="gripper")


def touch(ctx) -> Jump:
    """Newton's restitution along the contact normal J (the gap's row, B of eq 7):
    u+ = u- - (1 + e) (J u-) M^-1 J^T / (J M^-1 J^T)."""
    J, _ = ctx.row("contact")
    Minv_J = np.linalg.solve(ctx.mass_matrix(), J)
    e = ctx.param("e")
    u = ctx.u - (1 + e) * (J @ ctx.u) * Minv_J / (J @ Minv_J)
    return Jump(OPEN if e > 0 and J @ u > 0 else GRIPPING, u=u, impact=True)


def build() -> Scenario:
    x_j, x_b, v_j, v_b = dynamicsymbols("x_j x_b v_j v_b")
    m_j, m_b, k, N, F = sp.symbols("m_j m_b k N F")
    model = build_model()
    gap = x_b - x_j
    modes = {
        OPEN: Mode(name="open", laws=((N, 0),), guards=(Guard("touch", gap, -1, reset=touch),)),
        GRIPPING: Mode(name="gripping", constraints=("contact",), guards=(
            Guard("let_go", N, -1, reset=lambda ctx: Jump(OPEN)),)),
    }
    energy = (m_j * v_j ** 2 + m_b * v_b ** 2 + k * x_b ** 2) / 2 - F * x_j
    outputs = [
        Output("x_j", x_j, "position of the jaw's face", "m"),
        Output("x_b", x_b, "position of the block's face", "m"),
        Output("v_j", v_j, "speed of the jaw", "m/s"),
        Output("v_b", v_b, "speed of the block", "m/s"),
        Output("gap", gap, "gap between jaw and block", "m"),
        Output("grip_force", N, "contact force of the jaw on the block", "N"),
        Output("energy", energy, "kinetic and mount energy less F x_j (constant for a constant F "
               "between impacts)", "J"),
        Output("impact_count", description="impacts so far", type="Integer"),
    ]
    aut = Automaton(model, [holonomic(model, "contact", gap)], modes, outputs=outputs,
                    zeno=lambda ctx, guard: Jump(GRIPPING))
    parameters = [Var("m_j", 0.5, "mass of the jaw", "kg"),
                  Var("m_b", 0.2, "mass of the block", "kg"),
                  Var("k", 200.0, "stiffness of the block's mount", "N/m"),
                  Var("e", 0.5, "coefficient of restitution jaw-block", "", min=0.0, max=1.0)]
    start = [Start("x_j", -0.02, "initial position of the jaw's face", "m"),
             Start("v_j", 0.3, "initial speed of the jaw", "m/s")]
    inputs = [Var("F", 2.0, "closing force on the jaw", "N")]
    return Scenario("gripper", aut, parameters, inputs, start=start,
                    positive=("m_j", "m_b", "k"), nonnegative=("e",))
