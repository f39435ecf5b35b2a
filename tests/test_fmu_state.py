"""FMU state: save before the first event, step past every event, restore and replay bit for bit."""

import pytest

from fmu_src.host.master import FmuRunner

DT = 1e-3
N_STEPS = 7000


def _trace(r, n):
    rows = []
    for _ in range(n):
        r.step(DT)
        rows.append(r.outputs())
    return rows


@pytest.mark.parametrize("solver", ["rk4", "adaptive"])
def test_get_set_state_replays_bit_for_bit(disk_fmu, solver):
    r = FmuRunner(disk_fmu, strings={"solver": solver})
    try:
        _trace(r, 100)                                   # t = 0.1 s, before the first event
        assert r.outputs()["event_count"] == 0
        t0 = r.t
        state = r.fmu.getFMUstate()
        blob = r.fmu.serializeFMUstate(state)
        first = _trace(r, N_STEPS)
        assert first[-1]["event_count"] == 4             # every event of the paper's story
        r.fmu.setFMUstate(state)
        r.t = t0
        again = _trace(r, N_STEPS)
        assert again == first                            # identical floats, not approximately
        r.fmu.freeFMUstate(state)
        restored = r.fmu.deSerializeFMUstate(blob)
        r.fmu.setFMUstate(restored)
        r.fmu.freeFMUstate(restored)
        r.t = t0
        assert _trace(r, N_STEPS) == first
    finally:
        r.close()


def test_serialized_state_restores_into_a_fresh_instance(disk_fmu):
    a = FmuRunner(disk_fmu, instance="a")
    b = FmuRunner(disk_fmu, instance="b")
    try:
        _trace(a, 2000)                                  # in the frictionless zone, mode 1
        blob = a.fmu.serializeFMUstate(a.fmu.getFMUstate())
        s = b.fmu.deSerializeFMUstate(blob)
        b.fmu.setFMUstate(s)
        b.t = a.t
        assert b.outputs() == a.outputs()
        assert _trace(b, 3000) == _trace(a, 3000)
    finally:
        a.close()
        b.close()


def test_pendulum_belt_state_replays_through_impacts_and_sticking(fmu_dir):
    """Saved in free flight, then two rebounds, a strike that slides and sticking: the restored
    state (impact counters, Zeno watch, discrete variables) replays bit for bit."""
    r = FmuRunner(str(fmu_dir / "pendulum_belt.fmu"), instance="belt_state")
    try:
        for _ in range(50):
            r.step(DT)
        blob = r.fmu.serializeFMUstate(r.fmu.getFMUstate())
        t0 = r.t
        first = _trace(r, 900)
        assert first[-1]["impact_count"] == 3 and first[-1]["mode"] == 3
        s = r.fmu.deSerializeFMUstate(blob)
        r.fmu.setFMUstate(s)
        r.fmu.freeFMUstate(s)
        r.t = t0
        assert _trace(r, 900) == first
    finally:
        r.close()
