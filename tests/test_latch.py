"""pendulum_chain's latch opened before it catches the tip (issue 10).

The latch's switching conditions are pin-dependent: (pin - 1) (x_p - tip_x) and its mirror,
identically zero while the latch is open (pin 1).  Closing it (pin 2) and opening it again
before the tip reaches x_p must leave the tip free: no catch, no jump of the tip, and the
motion on the line the same as if the latch had never been closed (the latch does no work
before it catches).  ``pin`` takes 1 or 2 only.
"""

import numpy as np
import pytest

from embed import InputError
from scenarios import pendulum_chain


@pytest.fixture(scope="module")
def chain():
    return pendulum_chain.build(4)


def run(sc, sim, t_end, pin_at=()):
    """Step in 1 ms, setting pin as ``pin_at`` = [(t, pin)] says; tip_x at every step."""
    xs, k, todo = [], 0, list(pin_at)
    while sim.t < t_end - 1e-12:
        k += 1
        while todo and todo[0][0] <= k * 1e-3 + 1e-12:
            sim.set_inputs({"pin": todo.pop(0)[1]})
        sim.advance(k * 1e-3)
        xs.append(sc.observe(sim)["tip_x"])
    return np.array(xs)


@pytest.mark.parametrize("t_open", [0.005, 0.02, 0.05, 0.1, 0.2])
def test_latch_opened_before_the_catch_leaves_the_tip_free(chain, t_open):
    x_p = chain.defaults()["x_p"]
    free = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 1})
    x_free = run(chain, free, 0.5)
    sim = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    x0 = chain.observe(sim)["tip_x"]
    assert abs(x0 - x_p) > 0.1                 # the tip starts far from the latch
    xs = run(chain, sim, 0.5, [(t_open, 1)])
    assert sim.mode == 1 and sim.events == []
    # before the latch is opened the tip never reached x_p: nothing to catch
    k_open = round(t_open / 1e-3)
    assert np.all(np.sign(xs[:k_open] - x_p) == np.sign(x0 - x_p))
    # no jump: a step of 1 ms moves the tip by at most |tip_vx| 1 ms (below 2 m/s here)
    assert np.max(np.abs(np.diff(np.concatenate(([x0], xs))))) < 2e-3
    # an open latch does no work: the same motion as a run that never closed it
    assert xs == pytest.approx(x_free, abs=1e-12)


def test_latch_closed_again_catches_where_the_tip_passes(chain):
    """Opened and closed again, the latch still catches the tip at x_p (and nowhere else)."""
    x_p = chain.defaults()["x_p"]
    sim = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    run(chain, sim, 0.06, [(0.02, 1), (0.04, 2)])
    t = 0.06
    while sim.mode == 1 and t < 3.0:
        t += 1e-3
        sim.advance(t)
    assert sim.mode == 2 and [e[1] for e in sim.events] in (["latch_from_left"],
                                                            ["latch_from_right"])
    o = chain.observe(sim)
    assert abs(o["tip_x"] - x_p) <= 1e-10 and abs(o["tip_vx"]) <= 1e-10


@pytest.mark.parametrize("bad", [0, 3, 1.5, -1, 2.0000001])
def test_pin_other_than_1_or_2_is_rejected_naming_it(chain, bad):
    sim = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    sim.advance(0.01)
    before = sim.get_state()
    with pytest.raises(InputError, match=r"pin .* allowed values \[1, 2\]"):
        sim.set_inputs({"pin": bad})
    assert sim.param("pin") == 2.0
    sim.advance(0.02)                       # and the run goes on with the latch armed
    ref = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    ref.advance(0.01)
    ref.advance(0.02)
    assert np.array_equal(sim.x, ref.x) and before["t"] == 0.01
