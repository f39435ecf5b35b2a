"""A condition an event leaves at zero is armed when the next step needs it (issue 30, tails):
``switching.apply(lazy=True)`` defers ``events.arm``'s look an instant ahead (an RK4 step of
the entered mode) to ``switching.arm_later``, which takes it only where the first step after
the event ends with that condition at or below zero, another condition due, or the advance
ending there.  The claim is that nothing changes: here the cart's bob rebounds from the wall
again and again (each strike leaves the gap at zero, the case ``events.arm`` looks ahead for)
and the whole run is compared, bit for bit, with the run that arms every entry at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cart_wall  # noqa: E402
from embed.hybrid import events, switching  # noqa: E402


def _run(e, F, solver, eager, monkeypatch):
    """The run to 2 s in 10 ms communication steps: its events, final state and how many
    look-ahead steps (``partial`` of the probe's length) it took."""
    with monkeypatch.context() as mp:
        if eager:
            apply = switching.apply
            mp.setattr(switching, "apply", lambda sim, jump, lazy=False: apply(sim, jump))
        sim = cart_wall.simulator(e, F, solver=solver)
        probe = min(events.PROBE, sim.integrator.h_max / 100)
        partial, probes = sim.integrator.partial, []

        def counted(mode, t, x, p, tau):
            probes.append(tau == probe)
            return partial(mode, t, x, p, tau)
        sim.integrator.partial = counted
        for k in range(1, 201):
            sim.advance(k * 0.01)
        return sim.events, sim.get_state(), sum(probes)


@pytest.mark.parametrize("solver", ["rk4", "adaptive"])
@pytest.mark.parametrize("e", [0.5, 0.8])
def test_deferred_arming_changes_nothing(e, solver, monkeypatch):
    ev_lazy, s_lazy, n_lazy = _run(e, 3.0, solver, False, monkeypatch)
    ev_eager, s_eager, n_eager = _run(e, 3.0, solver, True, monkeypatch)
    strikes = [ev for ev in ev_eager if ev[1] == "strike"]
    assert len(strikes) >= 3            # rebounds: the gap left at zero again and again
    assert ev_lazy == ev_eager          # the same events at the same times, to the bit
    assert set(s_lazy) == set(s_eager)
    for k, v in s_eager.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(s_lazy[k], v), k
        else:
            assert s_lazy[k] == v, k
    assert n_lazy < n_eager             # and the look-ahead steps were not all taken
