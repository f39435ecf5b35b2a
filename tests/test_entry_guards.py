"""Engine guards a closed spherical loop needed (issue 32): the symbolic embedding's size budget,
no non-finite state on entering a mode, the checker on the scenario's embedding and entering
each mode with consistent discrete values."""

import math

import numpy as np
import pytest
import sympy as sp
import symengine as se
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import (Automaton, Guard, IntegrationError, Jump, Mode, Model, Output, Scenario,
                   Start, Var, holonomic)
from embed.check.check import check_scenario
from embed.embedding.embedding import tree_size
from embed.embedding.equations import _ops_within
from embed.modes.library import ModeLibrary


def test_ops_within_is_count_ops_and_stops_on_huge_trees():
    x, y, z = se.symbols("x y z")
    exprs = [x, x + y, -x, x - y, x * y * z, se.sin(x) ** 2, 1 / (x + y), se.sqrt(x + y),
             2 * x + 3 * y - z / 4, se.exp(-x) * se.cos(y - z) ** 3 / (1 + x ** 2),
             se.atan2(x, y) + se.Abs(z)]
    for k in range(len(exprs)):
        group = exprs[:k + 1]
        ops = se.count_ops(*group)
        assert tree_size(group, 10 ** 6) <= 2 * ops + len(group)     # the bound it relies on
        for budget in (ops - 1, ops, ops + 1):
            assert _ops_within(group, budget) == (ops <= budget)
    e = x
    for _ in range(80):                 # 2^80 tree nodes, 240 distinct: count_ops never ends
        e = (e + y) * (e - z)
    assert tree_size([e], 1000) == 1001
    assert _ops_within([e], 2000) is False


def _sqrt_model():
    """Two unit masses on a line (q1, q2); mode 2 holds sqrt(q1) = c, c a discrete variable
    set by the reset map that enters it (c = sqrt(q1) there)."""
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2 = dynamicsymbols("u1 u2")
    go, c = sp.symbols("go c")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P1, P2 = O.locatenew("P1", q1 * N.x), O.locatenew("P2", q2 * N.x)
    P1.set_vel(N, u1 * N.x)
    P2.set_vel(N, u2 * N.x)
    model = Model(N, [q1, q2], [u1, u2], [q1.diff() - u1, q2.diff() - u2],
                  [Particle("p1", P1, 1), Particle("p2", P2, 1)], [], inputs=[go], name="sqrt")
    hold = holonomic(model, "hold", sp.sqrt(q1) - c)
    modes = {1: Mode(name="free", guards=(Guard("go", 0.5 - go, -1, reset=lambda ctx: Jump(
                 2, {"c": math.sqrt(ctx.q[0])})),)),
             2: Mode(name="held", constraints=("hold",), guards=(
                 Guard("stop", go - 0.5, -1, reset=lambda ctx: Jump(1)),))}
    aut = Automaton(model, {"hold": hold}, modes, {"c": -5.0},
                    [Output("q1", q1, "q1", "m"), Output("u1", u1, "u1", "m/s")])
    return Scenario("sqrt", aut, [], [Var("go", 0.0, "1 holds")],
                    start=[Start("q1", 1.0, "initial q1", "m")], embedding="numeric")


def test_jump_to_an_inconsistent_discrete_value_raises_and_keeps_the_state():
    """sqrt(q1) = -5 has no solution: Newton leaves the domain (NaN).  Entering the mode raises
    a named IntegrationError and the simulator keeps its state (it returned NaN speeds)."""
    sc = _sqrt_model()
    sim = sc.simulator({"u1_start": 0.5, "u2_start": 0.25})
    before = sim.get_state()
    with pytest.raises(IntegrationError, match=r"hold.*(not finite|inconsistent)"):
        sim.jump_to(2, c=-5.0)
    assert sim.mode == 1 and np.array_equal(sim.u, [0.5, 0.25]) and np.isfinite(sim.q).all()
    sim.advance(0.1)                                 # and it runs on from there
    assert sim.q[0] == pytest.approx(1.05)
    sim.set_state(before)
    sim.jump_to(2, c=1.0)                            # a consistent value: entered, held
    assert sim.mode == 2 and sim.u[0] == 0.0 and sim.u[1] == 0.25


def test_checker_enters_modes_with_the_reset_maps_discrete_values():
    """The held mode is entered through the reset map that sets c = sqrt(q1): the checker finds
    nothing (entered with the initial c = -5 it could not be)."""
    sc = _sqrt_model()
    findings = check_scenario(sc)
    assert findings == [], findings


def test_checker_runs_on_the_scenarios_embedding():
    """A numeric scenario is checked on the numeric path: its modes land in the numeric
    library, the symbolic one stays empty."""
    sc = _sqrt_model()
    assert check_scenario(sc) == []
    numeric = ModeLibrary.of(sc.automaton, "numeric")
    symbolic = ModeLibrary.of(sc.automaton, "symbolic")
    assert {k[0] for k in numeric.numeric_modes} == {1, 2}
    assert not symbolic.modes and not symbolic.numeric_modes
