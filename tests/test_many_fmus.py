"""Many FMUs of this project in one process: each imports its own packages (build_fmu.py renames
them per build), so different scenarios, and FMUs built from different versions of the project,
step side by side or one after another and give what each gives alone."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fmu_src.host.master import FmuRunner, run

ROOT = Path(__file__).resolve().parents[1]

SIMULATE = """
import json, sys
from fmpy import simulate_fmu
out = []
for fmu, stop in json.loads(sys.argv[1]):
    start = {"embedding": "symbolic"} if "disk_fence" in fmu else {}
    r = simulate_fmu(fmu, stop_time=stop, output_interval=0.01, start_values=start)
    out.append([float(x) for x in r[-1]])
print(json.dumps(out))
"""


def simulate(runs):
    """fmpy's simulate_fmu over [(fmu, stop time)] in one fresh process: each run's last row."""
    proc = subprocess.run([sys.executable, "-c", SIMULATE, json.dumps(runs)], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_five_simulate_fmu_calls_over_four_fmus_equal_their_runs_alone(fmu_dir):
    runs = [(str(fmu_dir / f"{n}.fmu"), stop) for n, stop in
            [("disk_ramp", 8.0), ("pendulum_belt", 8.0), ("disk_fence", 8.0),
             ("pendulum_line", 2.0), ("disk_ramp", 8.0)]]
    together = simulate(runs)
    alone = [simulate([r])[0] for r in runs[:4]]
    assert together == alone + [alone[0]]


def test_a_second_run_in_the_process_starts_as_the_first(fmu_dir):
    """Scenarios whose start is made consistent with closed loops (metamorphic_palm's, the
    crank's) or speed constraints: the second instance of the FMU in a process, after the
    first warmed the shared mode library up, starts and runs to the same bits as the first
    (its start once took the compiled entry terms the first one's warm-up installed, and
    omega2 differed in the last bit)."""
    runs = [(str(fmu_dir / f"{n}.fmu"), 1.0) for n in ("metamorphic_palm", "slider_crank3")]
    first, _, second, _ = simulate([runs[0], runs[1], runs[0], runs[1]])
    again = simulate([runs[1], runs[1]])
    assert first == second and again[0] == again[1]


@pytest.fixture(scope="module")
def other_version(tmp_path_factory):
    """disk_ramp.fmu built from a second copy of the project whose friction default is 0.5."""
    copy = tmp_path_factory.mktemp("copy")
    for item in ("embed", "scenarios", "fmu_src"):
        shutil.copytree(ROOT / item, copy / item, ignore=shutil.ignore_patterns("__pycache__"))
    for item in ("build_fmu.py", "pyproject.toml"):
        shutil.copy2(ROOT / item, copy / item)
    src = copy / "scenarios" / "disk_ramp.py"
    text = src.read_text()
    assert 'Var("mu", 0.2,' in text
    src.write_text(text.replace('Var("mu", 0.2,', 'Var("mu", 0.5,'))
    subprocess.run([sys.executable, str(copy / "build_fmu.py"), "disk_ramp", "--out",
                    str(copy / "out")], check=True, capture_output=True, timeout=600)
    return str(copy / "out" / "disk_ramp.fmu")


def test_two_versions_step_side_by_side(disk_fmu, other_version):
    a, b = FmuRunner(disk_fmu, instance="a"), FmuRunner(other_version, instance="b")
    try:
        assert a.get("mu")["mu"] == 0.2 and b.get("mu")["mu"] == 0.5
        for _ in range(800):
            a.step(0.01)
            b.step(0.01)
        names = ("q1", "q2", "u1", "u2", "mode", "event_count", "last_event_time")
        side_a, side_b = a.get(*names), b.get(*names)
    finally:
        a.close()
        b.close()
    alone_a, alone_b = run(disk_fmu, 8.0, 0.01)[-1], run(other_version, 8.0, 0.01)[-1]
    assert side_a == {k: alone_a[k] for k in names}
    assert side_b == {k: alone_b[k] for k in names}
    assert abs(side_a["q1"] - side_b["q1"]) > 0.1       # each shows its own friction
