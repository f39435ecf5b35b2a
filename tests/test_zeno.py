"""Zeno behaviour: a ball bouncing on the ground comes to rest in finitely many events.

A particle (x, y) above the ground y = 0 with restitution e: the impact times form a
geometric series t_k = t_1 + 2 v_1 e (1 - e^(k-1)) / (g (1 - e)) that accumulates at
t_inf = t_1 + 2 v_1 e / (g (1 - e)), v_1 the speed at the first impact.  The engine's
multi-jump counter must hand over to persistent contact (a mode with y = 0 embedded)
just before t_inf, after which the ball slides on at rest vertically.
"""

import math

import numpy as np
import pytest
import sympy as sp
from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

from embed import Automaton, Guard, Jump, Mode, Model, Simulator, ZenoError, holonomic
from embed.hybrid.impact import resolve

FLIGHT, REST = 1, 2


def ball_automaton(with_rest_mode=True):
    x, y = dynamicsymbols("x y")
    vx, vy = dynamicsymbols("vx vy")
    m, g = sp.symbols("m g")
    N = ReferenceFrame("N")
    O = Point("O")
    P = O.locatenew("P", x * N.x + y * N.y)
    P.set_vel(N, vx * N.x + vy * N.y)
    model = Model(N, [x, y], [vx, vy], [x.diff() - vx, y.diff() - vy], [Particle("b", P, m)],
                  [(P, -m * g * N.y)], params=[m, g], name="ball")
    ground = holonomic(model, "ground", y)
    modes = {FLIGHT: Mode(FLIGHT, "flight", (), guards=(Guard("touch", y, -1),)),
             REST: Mode(REST, "rest", ("ground",))}

    def transition(ctx, guard):
        Jn, _ = ctx.row("ground")
        r = resolve(ctx.mass_matrix(), Jn, np.array([1.0, 0.0]), ctx.u, law="newton",
                    e=ctx.param("e"), mu_s=0.0, mu_d=0.0)
        return Jump(FLIGHT, u=r.u_plus, impact=True)

    zeno = (lambda ctx, guard: Jump(REST)) if with_rest_mode else None
    return Automaton(model, {"ground": ground}, modes, {}, {"y": y, "vy": vy}, transition,
                     lambda ctx: Jump(FLIGHT), zeno)


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_bouncing_ball_comes_to_rest(e):
    g, h0 = 9.81, 1.0
    sim = Simulator(ball_automaton(), {"m": 1.0, "g": g, "e": e}, h_max=1e-3)
    sim.start(0.0, [0.0, h0], [0.3, 0.0])
    sim.advance(5.0)
    t1 = math.sqrt(2 * h0 / g)
    v1 = g * t1
    t_inf = t1 + 2 * v1 * e / (g * (1 - e))
    impacts = [t for t, name, *_ in sim.events if name == "touch"]
    zeno = [t for t, name, *_ in sim.events if name.startswith("zeno:")]
    assert len(zeno) == 1 and sim.mode == REST
    assert len(impacts) < 60                              # finitely many events
    for k, t in enumerate(impacts[:8]):                   # the geometric series, to 1e-6 s
        assert t == pytest.approx(t1 + 2 * v1 * e * (1 - e ** k) / (g * (1 - e)), abs=1e-6)
    assert t1 < zeno[0] <= t_inf + 1e-9
    assert zeno[0] == pytest.approx(t_inf, abs=2e-3)
    assert sim.q[1] == pytest.approx(0.0, abs=1e-10) and sim.u[1] == pytest.approx(0.0, abs=1e-10)
    assert sim.u[0] == pytest.approx(0.3, abs=1e-12)     # no friction: the ball slides on
    # energy at the impacts only ever decreases
    for t, _, q, u_minus, u_plus in sim.impacts:
        assert 0.5 * u_plus @ u_plus <= 0.5 * u_minus @ u_minus + 1e-12


def test_zeno_without_persistent_mode_stops_with_a_clear_error():
    sim = Simulator(ball_automaton(with_rest_mode=False), {"m": 1.0, "g": 9.81, "e": 0.5})
    sim.start(0.0, [0.0, 1.0], [0.0, 0.0])
    with pytest.raises(ZenoError, match="no persistent mode"):
        sim.advance(5.0)


@pytest.mark.parametrize("name, t_end", [("disk_fence", 9.5), ("pendulum_belt", 3.0),
                                         ("disk_ramp", 3.0)])
def test_rehearsing_an_event_changes_nothing(name, t_end, monkeypatch):
    """rehearsal.rehearse (an approaching event's reset map, entry terms, partition,
    activation solve, new monitors and a step of the new mode evaluated a step ahead, parts
    of them two and three steps ahead: rehearsal.warm; to warm the caches of a real-time
    loop) leaves the run bit for bit as it is without it; and it did run before the events."""
    import scenarios
    from embed.hybrid import events, rehearsal
    from scenarios.disk_fence.announce import announce_arc

    sc = scenarios.load(name).build()

    def run():
        sim = sc.simulator(embedding="symbolic")
        if name == "disk_fence":
            sim.advance(7.0)
            announce_arc(sim, 10.0, 6.7)
        while sim.t < t_end - 1e-12:
            sim.advance(min(t_end, sim.t + 1e-3))
        return sim

    calls, warmed = [], []
    rehearse, warm = rehearsal.rehearse, rehearsal.warm
    monkeypatch.setattr(rehearsal, "rehearse", lambda sim, gi: calls.append(rehearse(sim, gi)))
    monkeypatch.setattr(rehearsal, "warm",       # its parts two and three steps ahead
                        lambda sim, gi, k: (warmed.append(k), warm(sim, gi, k)))
    a = run()
    monkeypatch.setattr(events, "approaching", lambda *args: None)
    b = run()
    assert any(calls) and a.events
    assert {2, 3} <= set(warmed)
    assert a.events == b.events
    assert np.array_equal(a.x, b.x) and np.array_equal(a.mon, b.mon)
