"""Bounded, finite, slicing-independent steps (issue 10).

- An advance that would need more internal steps than the budget (MAX_STEPS) raises
  StepBudgetError at once, naming h_max, and keeps the state; the run goes on after it.
- Nothing non-finite is accepted: a huge input that overflows any output (not only the
  state) raises IntegrationError with the last good state kept, and with the input restored
  the run continues as if the bad steps had never been tried.
- The answer does not depend on how the master slices the run: the fixed-step grid is
  anchored (t0 + k h_max), so slider_crank3 stepped in 0.01, 1, 10 or 100 s communication
  steps takes the same steps and gives the same state at 60 s.
"""

import math

import numpy as np
import pytest

from embed import InputError, IntegrationError, StepBudgetError
from embed.hybrid.simulator import MAX_STEPS
from embed.hybrid.state import check_finite
from fmu_src.runtime.status import status_of


def same_state(a, b):
    return a.t == b.t and np.array_equal(a.x, b.x) and np.array_equal(a.mon, b.mon) \
        and a.mode == b.mode and a.events == b.events


@pytest.mark.parametrize("solver", ["rk4", "adaptive"])
@pytest.mark.parametrize("h_max, step", [(1e-12, 1e-3), (1e-3, 1e6), (1e-3, 2.5e3)])
def test_an_advance_beyond_the_step_budget_is_refused_at_once(belt, solver, h_max, step):
    sim = belt.simulator(solver=solver, h_max=h_max)
    if h_max == 1e-3:
        sim.advance(0.01)
    ref = belt.simulator(solver=solver, h_max=h_max)
    if h_max == 1e-3:
        ref.advance(0.01)
    with pytest.raises(StepBudgetError, match=f"h_max = {h_max:g} s") as exc:
        sim.advance(sim.t + step)
    assert isinstance(exc.value, IntegrationError) and status_of(exc.value) == 5
    assert same_state(sim, ref)                     # nothing of it was done
    if h_max == 1e-3:                               # and the run goes on
        sim.advance(0.02)
        ref.advance(0.02)
        assert same_state(sim, ref)


def test_a_collapsing_adaptive_step_is_stopped_by_the_budget(belt, monkeypatch):
    """The counted budget (adaptive steps have no length known up front): with a budget of
    50 steps, h_max 1 ms and rtol 1e-15 (59 steps measured), 45 ms pass the check up
    front (at least 45 steps) but are not reached; the state is kept."""
    import embed.hybrid.stepping as es
    monkeypatch.setattr(es, "MAX_STEPS", 50)
    sim = belt.simulator(solver="adaptive", rtol=1e-15)
    t, x = sim.t, sim.x
    with pytest.raises(StepBudgetError, match="did not reach"):
        sim.advance(0.045)
    assert sim.t == t and sim.x is x


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_advance_to_a_bad_time_is_refused(belt, bad):
    sim = belt.simulator()
    sim.advance(0.01)
    with pytest.raises(InputError, match="t_end"):
        sim.advance(bad)
    assert sim.t == pytest.approx(0.01)


@pytest.mark.parametrize("h_max", [0.0, -1e-3, math.nan, math.inf])
def test_h_max_must_be_a_finite_positive_length(belt, h_max):
    with pytest.raises(InputError, match="h_max"):
        belt.simulator(h_max=h_max)


@pytest.mark.parametrize("solver", ["rk4", "adaptive"])
def test_huge_input_never_reaches_outputs_and_the_run_recovers(belt, solver):
    """F_tip_x = 1e30 N: the step overflows the kinetic energy (the state itself stays
    finite): refused, state kept; the input restored, the run continues exactly like a run
    that never saw it (the same steps from the same state)."""
    sim = belt.simulator(solver=solver)
    ref = belt.simulator(solver=solver)
    for k in range(1, 5):
        sim.advance(k * 1e-3)
        ref.advance(k * 1e-3)
    sim.set_inputs({"F_tip_x": 1e30})
    for _ in range(3):
        with pytest.raises(IntegrationError, match="non-finite"):
            sim.advance(5e-3)
        assert same_state(sim, ref)
        assert all(math.isfinite(v) for v in belt.observe(sim).values()
                   if isinstance(v, float))
    sim.set_inputs({"F_tip_x": 0.0})
    for k in range(5, 400):
        sim.advance(k * 1e-3)
        ref.advance(k * 1e-3)
    assert same_state(sim, ref) and sim.impact_count >= 1


def test_a_non_finite_monitor_anywhere_is_refused(belt):
    """Not only the state and its last entry: a monitor (an output) that is not finite."""
    sim = belt.simulator()
    sim.advance(1e-3)
    y = np.concatenate((sim.x, sim.mon, [1.0]))
    y[sim.compiled_mode.nx + len(sim.mon) // 2] = math.inf
    with pytest.raises(IntegrationError, match="non-finite"):
        check_finite(sim, y, "state")
    y[sim.compiled_mode.nx + len(sim.mon) // 2] = math.nan
    with pytest.raises(IntegrationError, match="non-finite"):
        check_finite(sim, y, "state")


def run_60(sc, dt, solver="rk4", t_end=60.0):
    sim = sc.simulator(solver=solver)
    res, k = 0.0, 0
    while sim.t < t_end - 1e-9:
        k += 1
        sim.advance(min(k * dt, t_end))
        res = max(res, sim.residual())
    return sim, res


def test_slider_crank3_answer_does_not_depend_on_the_communication_step(crank):
    """Fixed steps on an anchored grid: whatever the slicing (0.01, 1, 10, 100 s), the
    same steps are taken, so the states at 60 s agree to round-off of the grid points
    (1e-12; measured: bit for bit), and every run stays on the manifold |Phi| <= 1e-10
    at every communication point.  (The motion is sensitive: before, a difference of
    2.6e-14 after 1 s from where the steps were cut grew to O(1) by 60 s.)"""
    assert MAX_STEPS * 1e-3 >= 2 * 100.0     # 100 s communication steps fit the budget
    runs = {dt: run_60(crank, dt) for dt in (0.01, 1.0, 10.0, 100.0)}   # 100: one call
    ref, _ = runs[0.01]
    for dt, (sim, res) in runs.items():
        assert sim.t == pytest.approx(60.0, abs=1e-12)
        assert res <= 1e-10, dt
        assert np.max(np.abs(sim.x - ref.x)) <= 1e-12, dt
        assert sim.reselections == ref.reselections


def test_slider_crank3_adaptive_slicing_changes_only_round_off(crank):
    """Adaptive steps are cut at communication points (and, cut, do not shrink the next
    step): the runs differ by what the error control allows a cut step, amplified by the
    motion's sensitivity (measured: 1e-14 at 2 s, 2e-11 at 10 s); they agree to 1e-8 (rtol)
    over 10 s and stay on the manifold."""
    runs = {dt: run_60(crank, dt, "adaptive", 10.0) for dt in (0.01, 1.0, 10.0)}
    ref, _ = runs[0.01]
    for dt, (sim, res) in runs.items():
        assert res <= 1e-10
        assert np.max(np.abs(np.array(sim.q) - np.array(ref.q))) <= 1e-8, dt
