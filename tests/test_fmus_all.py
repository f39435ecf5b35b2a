"""Every scenario's FMU, built by build_fmu.py, validated and stepped by fmpy."""

import math

import pytest
from fmpy.validation import validate_fmu

import scenarios
from fmu_src.host.master import FmuRunner

# scenarios whose only forces are conservative: energy is a first integral
CONSERVATIVE = {"pendulum_line", "top", "ball_bowl"}


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_fmu_validates_and_steps(fmu_dir, name):
    path = str(fmu_dir / f"{name}.fmu")
    assert validate_fmu(path) == []
    r = FmuRunner(path, instance=name)
    try:
        names = [v.name for v in r.md.modelVariables if v.causality == "output"]
        for required in ("mode", "event_count", "last_event_time", "constraint_residual", "status"):
            assert required in names
        o0 = r.outputs()
        for _ in range(300):
            r.step(1e-3)
        o = r.outputs()
        assert o["status"] == 0, r.messages
        assert all(math.isfinite(v) for v in o.values() if isinstance(v, float))
        assert o["constraint_residual"] <= 1e-10
        if name in CONSERVATIVE:
            e0 = o0["kinetic_energy"] + o0["potential_energy"]
            e1 = o["kinetic_energy"] + o["potential_energy"]
            assert e1 == pytest.approx(e0, rel=1e-8, abs=1e-8)
    finally:
        r.close()


def test_chain_latch_through_the_fmu(fmu_dir):
    r = FmuRunner(str(fmu_dir / "pendulum_chain.fmu"), {"u_start": 2.0}, instance="chain")
    try:
        r.set(pin=2)
        for _ in range(1500):
            r.step(1e-3)
            if r.get("mode")["mode"] == 2:
                break
        o = r.outputs()
        assert o["mode"] == 2 and o["event_count"] == 1 and o["status"] == 0
        assert abs(o["tip_x"]) <= 1e-9 and abs(o["tip_vx"]) <= 1e-9
        r.set(pin=1)
        r.step(1e-3)
        assert r.outputs()["mode"] == 1
    finally:
        r.close()


def test_pendulum_belt_story_through_the_fmu(fmu_dir):
    r = FmuRunner(str(fmu_dir / "pendulum_belt.fmu"), instance="belt")
    try:
        seen = []
        for _ in range(1000):
            r.step(1e-3)
            o = r.get("mode", "impact_count", "contact", "last_impulse_n", "status")
            if not seen or seen[-1][0] != o["mode"]:
                seen.append((o["mode"], o["impact_count"], o["contact"]))
            assert o["status"] == 0
        # free with two rebounds, a strike that slides, then stuck on the belt
        assert [m for m, _, _ in seen[:3]] == [1, 2, 3]
        assert seen[1][1] == 3 and seen[1][2] == 1 and seen[0][2] == 0
        assert r.get("last_impulse_n")["last_impulse_n"] > 0
    finally:
        r.close()
