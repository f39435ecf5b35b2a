"""The disk on the ramp through the engine's Simulator against the piecewise analytic solution."""

import math

import pytest

from disk_analytic import DiskAnalytic
from scenarios import disk_ramp

SC = disk_ramp.build()

VARIANTS = {
    "paper": ({}, {}),
    "small_disk_with_inputs": (dict(r=0.5, J=0.125, u2_start=-2.0), dict(F_ext=0.4, T_ext=0.05)),
}


@pytest.mark.parametrize("solver", ["rk4", "adaptive"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_events_and_states_match_analytic(solver, variant):
    params, inputs = VARIANTS[variant]
    P = {**SC.defaults(), **params}
    ref = DiskAnalytic(P, 8.0, [(0.0, inputs.get("F_ext", 0.0), inputs.get("T_ext", 0.0))])
    sim = SC.simulator(params, solver=solver, inputs=inputs)
    for k in range(1, 17):
        sim.advance(0.5 * k)
        st = ref.state(0.5 * k)
        for name, i in (("q1", 0), ("q2", 1)):
            assert sim.q[i] == pytest.approx(st[name], abs=1e-6)
        for name, i in (("u1", 0), ("u2", 1)):
            assert sim.u[i] == pytest.approx(st[name], abs=1e-6)
        assert sim.mode == st["mode"]
    got = [(t, g, to) for t, g, _, to in sim.events]
    assert [(g, to) for _, g, to in got] == [(k, m) for _, k, m in ref.events]
    for (t, _, _), (tr, _, _) in zip(got, ref.events):
        assert t == pytest.approx(tr, abs=1e-9)


def test_paper_story():
    """gillespie2005 Fig 7: rolling at 0.37 s, sliding at 1.72 s, back in the friction zone, rolling at 6.13 s."""
    sim = SC.simulator()
    sim.advance(8.0)
    kinds = [(g, frm, to) for _, g, frm, to in sim.events]
    assert kinds == [("rolling_constraint_satisfied", 1, 2), ("zone_boundary", 2, 1),
                     ("zone_boundary", 1, 1), ("rolling_constraint_satisfied", 1, 2)]
    times = [t for t, *_ in sim.events]
    assert times[0] == pytest.approx(0.37, abs=0.01)
    assert times[1] == pytest.approx(1.72, abs=0.01)
    assert times[3] == pytest.approx(6.13, abs=0.02)


def test_friction_cone_violation_by_input():
    """A torque applied while rolling that needs more friction than mu N makes the disk slide at once."""
    P = SC.defaults()
    ref = DiskAnalytic(P, 1.5, [(0.0, 0.0, 0.0), (1.0, 0.0, 6.0)])
    sim = SC.simulator()
    sim.advance(1.0)
    assert sim.mode == 2
    sim.set_inputs({"T_ext": 6.0})
    sim.advance(1.5)
    assert [g for _, g, _, _ in sim.events] == ["rolling_constraint_satisfied", "friction_cone"]
    assert sim.events[-1][0] == pytest.approx(1.0, abs=1e-12)
    st = ref.state(1.5)
    assert sim.mode == st["mode"] == 1
    assert sim.u[0] == pytest.approx(st["u1"], abs=1e-9)
    assert sim.u[1] == pytest.approx(st["u2"], abs=1e-9)
    # sliding with saturated friction: |F_f| = mu N
    o = sim.outputs_now()
    assert abs(o["F_f"]) == pytest.approx(P["mu"] * o["N"], rel=1e-12)


def test_rolling_conserves_energy_with_no_inputs():
    """Rolling without slip does no friction work: kinetic + potential energy is constant."""
    P = SC.defaults()
    sim = SC.simulator()
    sim.advance(0.5)
    assert sim.mode == 2

    def energy():
        u1, u2 = sim.u
        return (0.5 * P["m"] * u1 ** 2 + 0.5 * P["J"] * (u2 / P["r"]) ** 2
                + P["m"] * P["g"] * math.sin(P["phi"]) * sim.q[0])

    e0 = energy()
    sim.advance(1.7)
    assert sim.mode == 2
    assert energy() == pytest.approx(e0, rel=1e-12)
    assert sim.residual() <= 1e-12
