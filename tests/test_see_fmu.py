"""`embed-fmu animate` from an FMU (stepped by fmpy), from a `simulate` CSV and with `--input`
(issue 26): the drawn run is the engine's, through the scenario the FMU carries.  The FMUs are
the session's (``fmu_dir``, built once for every FMU test), so these runs cost a second each."""

import numpy as np
import pytest

import scenarios
from fmu_src.host.cli import main, parser
from fmu_src.host.see import kinematics, record
from fmu_src.host.see.commands import recorded, scenario_of


def _engine(name, stop, fps, inputs_csv=None):
    sc = scenarios.load(name).build()
    return record.from_engine(sc, stop_time=stop, fps=fps, inputs_csv=inputs_csv)


def _same_drawing(sc, got, want, atol):
    """Every shape and point of the two runs, drawn by ``sc``'s visuals, within ``atol``."""
    kin = kinematics.Kinematics(sc)
    np.testing.assert_allclose(kin.points(got), kin.points(want), atol=atol)
    for a, b in zip(kin.strokes(got), kin.strokes(want)):
        both = np.isfinite(a.xyz) & np.isfinite(b.xyz)
        # a curve drawn where an expression is > 0 (the belt's marks) may differ where it is 0
        assert both.sum() >= 0.95 * max(np.isfinite(a.xyz).sum(), np.isfinite(b.xyz).sum())
        np.testing.assert_allclose(a.xyz[both], b.xyz[both], atol=atol, err_msg=a.name)


def test_animate_an_fmu(fmu_dir, tmp_path):
    """pendulum_belt.fmu stepped by fmpy at the frames: the page is written, and the run drawn
    (from the FMU's outputs, with the scenario imported from the FMU) is the engine's, modes
    included, through its two strikes."""
    fmu = str(fmu_dir / "pendulum_belt.fmu")
    argv = ["animate", fmu, "--stop-time", "0.5", "--fps", "10", "--out", str(tmp_path / "a.html")]
    assert main(argv) == 0 and (tmp_path / "a.html").stat().st_size > 1e6
    sc, params = scenario_of(fmu, {})
    got = recorded(parser().parse_args(argv), sc, params)
    want = _engine("pendulum_belt", 0.5, 10)
    assert sc.name == "pendulum_belt" and got.frames == want.frames == 6
    np.testing.assert_array_equal(got.mode, want.mode)
    assert sum(e.impact for e in got.events) == 2
    _same_drawing(sc, got, want, 1e-6)


def test_animate_a_simulate_csv(fmu_dir, tmp_path):
    """kneed_walker's `simulate` CSV (its outputs name the hip hip_x, hip_y and the stance foot
    stance_foot_x, not qx, qy, p_x) drawn as the engine's run of it, through a heel strike that
    moves the stance foot."""
    csv = tmp_path / "walk.csv"
    assert main(["simulate", str(fmu_dir / "kneed_walker.fmu"), "--stop-time", "0.8", "--step",
                 "0.1", "--out", str(csv)]) == 0
    argv = ["animate", "kneed_walker", "--csv", str(csv), "--out", str(tmp_path / "w.html")]
    assert main(argv) == 0
    sc = scenarios.load("kneed_walker").build()
    got = recorded(parser().parse_args(argv), sc, {})
    want = _engine("kneed_walker", 0.8, 10)
    assert got.column("p_x")[-1] > 0.1 and got.column("p_x")[0] == 0     # the heel strike
    np.testing.assert_array_equal(got.mode, want.mode)
    _same_drawing(sc, got, want, 1e-6)


def test_animate_an_fmu_with_input(fmu_dir, tmp_path):
    """pendulum_belt.fmu with the belt speed from a CSV (fmpy sets it at each communication
    step): the engine's run with the same input, held over each frame's step."""
    path = tmp_path / "belt.csv"
    path.write_text("time,v_b_in\n0,0.5\n1.2,-1.5\n")
    fmu = str(fmu_dir / "pendulum_belt.fmu")
    argv = ["animate", fmu, "--input", str(path), "--stop-time", "1.2", "--fps", "10",
            "--out", str(tmp_path / "b.html")]
    sc, params = scenario_of(fmu, {})
    got = recorded(parser().parse_args(argv), sc, params)
    want = _engine("pendulum_belt", 1.2, 10, inputs_csv=path)
    np.testing.assert_allclose(got.column("v_b_in"), want.column("v_b_in"), atol=1e-12)
    np.testing.assert_array_equal(got.mode, want.mode)
    _same_drawing(sc, got, want, 1e-6)
    with pytest.raises(AssertionError):         # and the input mattered
        _same_drawing(sc, got, _engine("pendulum_belt", 1.2, 10), 1e-3)
