"""FMI 3.0 early return used by a master (issue 27).

1. The two-FMU co-simulation of fmu_src/host/cosim3.py (pi_controller drives disk_ramp's F_ext,
   both FMI 3.0, stepped by fmpy's FMU3Slave): the controller's commands replayed by the PI law
   written here (an independent model of fmu_src/runtime/controller.py) from the disk's speeds at
   the communication points; with early return the first command computed from the state after
   each located event is issued at the event time (to 1e-9 s), without it at the next grid point,
   up to one communication step late.
2. pendulum_belt and disk_fence built as FMI 3.0 and stepped by fmpy and fmusim: without early return the
   FMI 2.0 FMU's results bit for bit; with it the located event times are the FMI 2.0 FMU's
   ``last_event_time`` values (1e-12 s)."""

import csv
import itertools
import subprocess

import masters
import numpy as np
import pytest
from fmpy import simulate_fmu

from fmu_src.builder.build import build
from fmu_src.host.cosim3 import run

H, STOP = 0.01, 8.0
SETPOINT, KP, KI, LIMIT = 2.0, 4.0, 2.0, 20.0       # controller.py's parameter starts


@pytest.fixture(scope="module")
def fmu3_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("fmi3_cosim")
    for name in ("disk_ramp", "pi_controller"):
        build(name, out, fmi=(3,), log=lambda m: None)
    return out


@pytest.fixture(scope="module")
def runs(fmu3_dir):
    return {er: run(fmu3_dir, er, stop=STOP, h=H, disk="disk_ramp.fmu", pi="pi_controller.fmu")
            for er in (False, True)}


def _replayed_commands(rows):
    """The PI law at each communication point t_k after the first: e = setpoint - u1(t_k),
    I += e (t_k - t_k-1), command = kp e + ki I limited to +-limit."""
    out, integral = [], 0.0
    for a, b in itertools.pairwise(rows):
        e = SETPOINT - b["u1"]
        integral += e * (b["time"] - a["time"])
        out.append(max(-LIMIT, min(LIMIT, KP * e + KI * integral)))
    return out


def _reactions(rows):
    """(located event time, the first time a command is computed from a state after it)."""
    return [(b["last_event_time"], b["time"]) for a, b in itertools.pairwise(rows)
            if b["event_count"] != a["event_count"]]


@pytest.mark.parametrize("early_return", [False, True])
def test_controller_samples_the_disk_where_the_master_says(runs, early_return):
    rows, early = runs[early_return]
    assert rows[0]["command"] == 0.0
    assert np.allclose([r["command"] for r in rows[1:]], _replayed_commands(rows),
                       rtol=1e-12, atol=1e-12)
    grid = [r["time"] for r in rows if abs(r["time"] / H - round(r["time"] / H)) < 1e-9]
    assert np.allclose(grid, np.arange(round(STOP / H) + 1) * H, rtol=0, atol=1e-12)
    assert len(rows) == len(grid) + len(early)
    assert rows[-1]["u1"] == pytest.approx(SETPOINT, abs=0.05)      # the controller did its work


def test_early_return_lets_the_controller_react_at_the_event(runs):
    (late_rows, late_early), (rows, early) = runs[False], runs[True]
    assert late_early == []
    on_time, late = _reactions(rows), _reactions(late_rows)
    # the slip reverses (sliding on, friction flips), slide -> roll, roll -> slide out of the
    # friction zone at q1 = L: the same story in both runs
    assert [r["mode"] for r in rows if r["time"] in early] == [1, 2, 1]
    assert len(on_time) == len(late) == len(early) == 3
    for (t_e, t_r), t_ret in zip(on_time, early):
        assert t_ret == t_e and abs(t_r - t_e) <= 1e-9
    for t_e, t_r in late:
        assert 0 < t_r - t_e <= H + 1e-12 and abs(t_r / H - round(t_r / H)) < 1e-9
    # before the first event the two runs are the same: so is its located time, bit for bit
    assert on_time[0][0] == late[0][0]
    # a new command at each event time (the law replayed above: from the disk's speed there)
    for t_e in early:
        at = next(i for i, r in enumerate(rows) if r["time"] == t_e)
        assert rows[at]["command"] != rows[at - 1]["command"]
        assert rows[at]["last_event_time"] == t_e and rows[at - 1]["last_event_time"] < t_e


@pytest.fixture(scope="module", params=["pendulum_belt", "disk_fence"])
def pair(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    return build(request.param, out, fmi=(2, 3), log=lambda m: None)


def test_fmi3_without_early_return_is_fmi2_bit_for_bit(pair):
    fmu2, fmu3 = (str(p) for p in pair)
    r2 = simulate_fmu(fmu2, stop_time=STOP, output_interval=H)
    r3 = simulate_fmu(fmu3, stop_time=STOP, output_interval=H)
    assert np.array_equal(r2["mode_number"], r2["mode"])   # FMI 2.0's alias of the Enumeration
    names2 = tuple(n for n in r2.dtype.names if n != "mode_number")
    assert names2 == r3.dtype.names and len(r2) == len(r3) == 801
    for n in names2:
        assert np.array_equal(r2[n], r3[n]), n
    assert r3["event_count"][-1] >= 1


def test_fmi3_early_return_at_the_fmi2_event_times(pair):
    fmu2, fmu3 = (str(p) for p in pair)
    r2 = simulate_fmu(fmu2, stop_time=STOP, output_interval=H)
    r3 = simulate_fmu(fmu3, stop_time=STOP, output_interval=H, early_return_allowed=True)
    # FMI 2.0: the last event located in each step, read at the step's end
    last = [float(b["last_event_time"]) for a, b in itertools.pairwise(r2)
            if b["event_count"] != a["event_count"]]
    counts2 = [int(b["event_count"]) for a, b in itertools.pairwise(r2)
               if b["event_count"] != a["event_count"]]
    # FMI 3.0 with early return: a sample at each event, at its located time
    seen = [(float(b["time"]), int(b["event_count"])) for a, b in itertools.pairwise(r3)
            if b["event_count"] != a["event_count"]]
    # one early return per step with an event here (no two events in one step of these runs)
    assert [c for _, c in seen] == counts2 == list(range(1, len(last) + 1))
    for (t3, _), t in zip(seen, last):
        assert abs(t3 - t) <= 1e-12, (t3, t)
    assert len(r3) == len(r2) + len(last)


def _fmusim(fmu, out, *flags):
    argv, _ = masters.command("fmusim", fmu, out, STOP, H)
    proc = subprocess.run(argv[:-1] + list(flags) + [argv[-1]], env=masters.env(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    with open(out) as f:
        # FMI 2.0's mode_number is its Integer alias of the Enumeration mode: not in FMI 3.0
        return [{k.strip('"'): v for k, v in r.items() if k.strip('"') != "mode_number"}
                for r in csv.DictReader(f)]


@pytest.mark.skipif(not (masters.MASTERS / "run").exists(), reason="no fmusim (tools/masters)")
def test_fmusim_fmi3_early_return_at_the_fmi2_event_times(pair, tmp_path):
    fmu2, fmu3 = (str(p) for p in pair)
    plain2 = _fmusim(fmu2, tmp_path / "fmi2.csv")
    assert _fmusim(fmu3, tmp_path / "fmi3.csv") == plain2      # the same numbers, printed alike
    changed = [b for a, b in itertools.pairwise(plain2) if b["event_count"] != a["event_count"]]
    for flags, extra in ((["--early-return-allowed"], 1),
                         (["--early-return-allowed", "--event-mode-used"], 2)):
        rows = _fmusim(fmu3, tmp_path / "early.csv", *flags)
        seen = [b for a, b in itertools.pairwise(rows) if b["event_count"] != a["event_count"]]
        assert [int(b["event_count"]) for b in seen] == list(range(1, len(changed) + 1))
        for b, c in zip(seen, changed, strict=True):
            assert abs(float(b["time"]) - float(c["last_event_time"])) <= 1e-12, (b, c)
        assert len(rows) == len(plain2) + extra * len(changed)
