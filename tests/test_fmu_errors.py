"""Bad input never escapes do_step: it is logged, reported in status, and the last good state is kept."""

import math

import pytest

from fmu_src.master import FmuRunner

WARNING, ERROR = 1, 3


@pytest.fixture
def runner(disk_fmu):
    r = FmuRunner(disk_fmu)
    yield r
    r.close()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_input_rejected(disk_fmu, bad):
    good = FmuRunner(disk_fmu, instance="good")
    r = FmuRunner(disk_fmu, instance="bad")
    try:
        r.set(T_ext=bad)
        r.step(0.01)
        good.step(0.01)
        o = r.outputs()
        assert o["status"] == 9
        assert any(s == WARNING and "T_ext" in m and "not finite" in m for s, m in r.messages)
        # the rejected input was replaced by its last good value (0): same motion as the good run
        assert o["q1"] == good.outputs()["q1"]
        r.set(T_ext=0.0)
        r.step(0.01)
        good.step(0.01)
        assert r.outputs() == good.outputs()
    finally:
        r.close()
        good.close()


def test_bad_parameters_replaced_by_defaults(disk_fmu):
    r = FmuRunner(disk_fmu, {"m": -2.0, "J": math.nan, "h_max": -1.0, "mu": -0.1}, {"solver": "euler"})
    try:
        msgs = " | ".join(m for _, m in r.messages)
        for name in ("m = -2.0", "J = nan", "h_max = -1.0", "mu = -0.1", "'euler'"):
            assert name in msgs
        assert r.outputs()["status"] == 9
        r.step(0.5)
        o = r.outputs()
        assert o["status"] == 0 and o["mode"] == 2      # runs with the defaults: rolling at 0.365 s
    finally:
        r.close()


def test_engine_error_keeps_last_good_state(runner):
    runner.step(0.1)
    before = runner.outputs()
    runner.set(F_ext=1.7e308)        # finite, but the speed overflows after about 1 s
    runner.step(2.0)
    o = runner.outputs()
    assert o["status"] == 5          # IntegrationError
    assert any(s == ERROR and "non-finite state" in m for s, m in runner.messages)
    for k in ("q1", "q2", "u1", "u2", "mode", "event_count"):
        assert o[k] == before[k]
    runner.set(F_ext=0.0)
    runner.step(0.1)
    o = runner.outputs()
    assert o["status"] == 0 and o["q1"] != before["q1"] and math.isfinite(o["q1"])
