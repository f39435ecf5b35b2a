"""The embed-fmu command line (issue 13), each command run as a subprocess of the installed
console script, on a bundled scenario and on a user's model written in a folder outside the
project: built (checked first), validated, stepped by fmpy, carrying no other model's code;
``info`` of the model and of its FMU agree; ``simulate`` writes what fmpy gives directly;
bad input exits non-zero naming what was wrong."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.util import read_csv
from fmpy.validation import validate_fmu

import scenarios
from fmu_files import SLAVE_MODULES, resources

ROOT = Path(__file__).resolve().parents[1]
EMBED_FMU = Path(sys.executable).parent / "embed-fmu"
COMMANDS = ("list", "build", "check", "info", "simulate", "sweep")

# A user's model, public API only: tests/cart_wall.py (a cart whose pendulum bob strikes a
# wall), copied to a folder outside the project.  Before the strike the bob hangs (th = 0) and
# the cart coasts at v_start, so the strike comes at t = (wall - x_start) / v_start; with e = 1
# the impact keeps the energy.
USER_MODEL = (ROOT / "tests" / "cart_wall.py").read_text()
USER_DESCRIPTION = ast.get_docstring(ast.parse(USER_MODEL)).splitlines()[0]


def embed_fmu(*args, cwd, ok=True):
    """Run the console script; ``ok``: assert it succeeded."""
    proc = subprocess.run([str(EMBED_FMU), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=900)
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder outside the project, the user's."""
    d = tmp_path_factory.mktemp("user")
    assert ROOT not in d.parents
    return d


@pytest.fixture(scope="module")
def user_model(work):
    path = work / "my_models" / "cart.py"
    path.parent.mkdir()
    path.write_text(USER_MODEL)
    return path


@pytest.fixture(scope="module")
def user_fmu(work, user_model):
    out = work / "fmus"
    proc = embed_fmu("build", user_model, "--out", out, cwd=work)
    assert Path(proc.stdout.split()[-1]) == out / "cart_wall.fmu"
    return out / "cart_wall.fmu"


@pytest.fixture(scope="module")
def disk_ramp_fmu(work):
    embed_fmu("build", "disk_ramp", "--out", work / "fmus", cwd=work)
    return work / "fmus" / "disk_ramp.fmu"


def test_the_console_script_is_installed_and_every_command_has_help(work):
    assert EMBED_FMU.is_file()
    top = embed_fmu("--help", cwd=work).stdout
    for cmd in COMMANDS:
        assert cmd in top
        text = embed_fmu(cmd, "--help", cwd=work).stdout
        assert text.startswith(f"usage: embed-fmu {cmd}")
    assert "--stop-time" in embed_fmu("simulate", "--help", cwd=work).stdout
    # the module runs the same command line
    proc = subprocess.run([sys.executable, "-m", "fmu_src.host.cli", "list", "--help"], cwd=work,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: embed-fmu list")


def test_list_names_every_bundled_scenario_with_its_description(work):
    lines = embed_fmu("list", cwd=work).stdout.splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines}
    for name in scenarios.NAMES:
        doc = scenarios.load(name).__doc__.strip().splitlines()[0]
        assert listed[name] == doc


def test_check_a_bundled_scenario_and_a_user_model(work, user_model):
    assert embed_fmu("check", "disk_ramp", cwd=work).returncode == 0
    proc = embed_fmu("check", user_model, "--set", "e=0.8", cwd=work)
    assert "0 error(s)" in proc.stderr


def test_a_model_with_an_error_is_reported_and_not_built(work):
    bad = work / "typo" / "cart_typo.py"
    bad.parent.mkdir()
    text = USER_MODEL.replace('Guard("strike", gap, -1)', 'Guard("strike", gap - sp.Symbol("wal"), -1)')
    bad.write_text(text.replace('Scenario("cart_wall"', 'Scenario("cart_typo"'))
    proc = embed_fmu("check", bad, cwd=work, ok=False)
    assert proc.returncode == 1
    assert "strike" in proc.stdout and "wal" in proc.stdout
    proc = embed_fmu("build", bad, "--out", work / "typo_out", cwd=work, ok=False)
    assert proc.returncode == 1 and "not built" in proc.stderr
    assert not (work / "typo_out" / "cart_typo.fmu").exists()


def test_user_model_fmu_validates_and_carries_that_model_only(user_fmu):
    assert validate_fmu(str(user_fmu)) == []
    md = read_model_description(str(user_fmu))
    assert md.coSimulation.modelIdentifier == "cart_wall"
    assert md.description == USER_DESCRIPTION
    from fmu_src.host.simulate import mode_names          # the plot's names of an FMU's modes
    assert mode_names(md) == {1: "free", 2: "on_wall"}    # its Mode type: the Modes' names
    res = resources(user_fmu)
    assert res["scenarios"] == {"__init__.py", "cart_wall.py"}
    assert res["fmu_src"] == SLAVE_MODULES
    assert "engine" not in res and "embed" in res and "background/worker.py" in res["embed"]
    with zipfile.ZipFile(user_fmu) as z:
        names = z.namelist()
    for other in scenarios.NAMES:
        assert not [n for n in names if f"/{other}" in n], other


def test_a_package_model_travels_with_its_own_modules(work, user_fmu):
    """A model folder (``__init__`` defines build(), importing a module of its own
    relatively) builds into an FMU holding that folder, which steps as the one-file model."""
    pkg = work / "cart_package"
    pkg.mkdir()
    (pkg / "numbers.py").write_text('"""Mode numbers."""\nFREE, WALL = 1, 2\n')
    (pkg / "__init__.py").write_text(
        USER_MODEL.replace("FREE, WALL = 1, 2\n", "from .numbers import FREE, WALL\n")
        .replace('Scenario("cart_wall"', 'Scenario("cart_package"'))
    embed_fmu("build", pkg, "--out", work / "pkg_out", cwd=work)
    fmu = work / "pkg_out" / "cart_package.fmu"
    assert resources(fmu)["scenarios"] == {"__init__.py", "cart_package/__init__.py",
                                           "cart_package/numbers.py"}
    a = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.01)
    b = simulate_fmu(str(user_fmu), stop_time=1.0, output_interval=0.01)
    assert a[-1]["event_count"] >= 1 and a.tolist() == b.tolist()


def test_a_module_named_like_the_fmu_in_the_process_does_not_stand_in_for_it(work, user_model,
                                                                           user_fmu):
    """A user's script imports their model file as the module ``cart_wall`` and steps
    cart_wall.fmu with fmpy in the same process: the FMU's pythonfmu entry module has a name of
    its build's own, so the user's module is not taken for it (which crashed the process in
    fmi2Instantiate).  Run in a subprocess: a crash must fail this test, not the suite."""
    script = f"""
import shutil, sys
shutil.copy({str(user_model)!r}, {str(work / "cart_wall.py")!r})
sys.path.insert(0, {str(work)!r})
import cart_wall                        # the user's own module, named like the FMU
from fmpy import simulate_fmu
rows = simulate_fmu({str(user_fmu)!r}, stop_time=1.0, output_interval=0.01)
print("events", int(rows[-1]["event_count"]), cart_wall.build().name)
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events, name = proc.stdout.split()[-2:]
    assert int(events) >= 1 and name == "cart_wall"


def test_a_process_that_stepped_an_fmu_in_process_builds_whole_fmus(work, user_model, user_fmu):
    """fmpy stepping an FMU in process imports pythonfmu (without its binaries) and the FMU's
    entry module from the FMU's resources: a build in that process afterwards still gets
    pythonfmu's binaries and its own entry class (the test suite builds after such runs)."""
    again = work / "again"
    script = f"""
from pathlib import Path
from fmpy import simulate_fmu
simulate_fmu({str(user_fmu)!r}, stop_time=0.1)
from fmu_src.builder.build import build
from fmu_src.builder.source import resolve
fmu = build(resolve({str(user_model)!r}), Path({str(again)!r}))
print(int(simulate_fmu(str(fmu), stop_time=0.6)["event_count"][-1]))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "1"            # the strike at 0.5 s
    assert validate_fmu(str(again / "cart_wall.fmu")) == []


def test_bundled_fmu_carries_its_own_scenario_only(disk_ramp_fmu):
    res = resources(disk_ramp_fmu)
    assert res["scenarios"] == {"__init__.py", "disk_ramp.py"}
    assert res["fmu_src"] == SLAVE_MODULES


def test_user_fmu_stepped_by_fmpy_meets_the_analytic_strike_and_keeps_energy(user_fmu):
    """Elastic (e = 1): the strike at t = wall / v_start = 0.5 s and the energy
    (M+m) v^2/2 + m l cos(th) v w + m l^2 w^2/2 - m g l cos(th) the same before and after."""
    r = simulate_fmu(str(user_fmu), stop_time=1.0, output_interval=0.01, start_values={"e": 1.0})
    M, m, l, g = 2.0, 0.5, 0.8, 9.81

    def energy(row):
        x, th, v, w = (float(row[k]) for k in ("x", "th", "v", "w"))
        return ((M + m) * v * v / 2 + m * l * math.cos(th) * v * w + m * l * l * w * w / 2
                - m * g * l * math.cos(th))

    before = r[r["time"] < 0.5]
    assert np.allclose(before["x"], before["time"], atol=1e-12, rtol=0)
    assert r["event_count"][-1] >= 1 and r["status"][-1] == 0
    first = r[np.argmax(r["event_count"] >= 1)]
    assert first["last_event_time"] == pytest.approx(0.5, abs=1e-9)
    assert abs(r["th"][-1]) > 0.01                       # the strike set the bob swinging
    e0 = energy(r[0])
    assert max(abs(energy(row) - e0) for row in r) < 1e-6


def test_info_of_the_model_and_of_its_fmu_agree(work, user_model, user_fmu, disk_ramp_fmu):
    for model, fmu in ((user_model, user_fmu), ("disk_ramp", disk_ramp_fmu)):
        of_model = embed_fmu("info", model, cwd=work).stdout
        of_fmu = embed_fmu("info", fmu, cwd=work).stdout
        assert of_model == of_fmu
        table = of_fmu.split("\n\nhybrid automaton")[0]   # the automaton follows (issue 26)
        rows = {line.split()[0]: line.split() for line in table.splitlines()[3:]}
        for v in read_model_description(str(fmu)).modelVariables:
            assert rows[v.name][1:3] == [v.causality, v.type]
            if v.type == "Real":
                assert rows[v.name][3] == v.unit or rows[v.name][3] == v.declaredType.unit
    assert "cart position" in embed_fmu("info", user_fmu, cwd=work).stdout


def test_simulate_a_user_model_writes_fmpy_rows_and_a_plot(work, user_model, user_fmu):
    inputs = work / "push.csv"
    inputs.write_text("time,F\n0,0\n0.4,0\n0.4,3\n1.5,3\n")
    out, png = work / "sim" / "cart.csv", work / "sim" / "cart.png"
    embed_fmu("simulate", user_model, "--stop-time", 1.5, "--step", 0.01, "--set", "e=0.7",
              "--input", inputs, "--out", out, "--plot", png, cwd=work)
    got = read_csv(str(out))
    direct = simulate_fmu(str(user_fmu), stop_time=1.5, output_interval=0.01,
                          start_values={"e": 0.7}, input=read_csv(str(inputs)))
    assert set(got.dtype.names) == set(direct.dtype.names)
    assert len(got) == len(direct) == 151
    for name in direct.dtype.names:
        assert np.array_equal(got[name], direct[name].astype(float)), name
    assert got["event_count"][-1] >= 1              # the strike happened, and is in the plot
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_simulate_a_bundled_scenario_records_the_chosen_outputs(work, disk_ramp_fmu):
    out, png = work / "sim" / "disk.csv", work / "sim" / "disk.png"
    embed_fmu("simulate", "disk_ramp", "--stop-time", 3, "--step", 0.05, "--outputs",
              "q1,slip", "--set", "mu=0.3", "--out", out, "--plot", png, cwd=work)
    got = read_csv(str(out))
    assert set(got.dtype.names) == {"time", "q1", "slip", "mode", "event_count", "last_event_time"}
    direct = simulate_fmu(str(disk_ramp_fmu), stop_time=3, output_interval=0.05,
                          start_values={"mu": 0.3}, output=["q1", "slip", "mode"])
    for name in ("time", "q1", "slip", "mode"):
        assert np.array_equal(got[name], direct[name].astype(float)), name
    assert png.stat().st_size > 10_000
    # an FMU directly, its start values checked against its variables
    embed_fmu("simulate", disk_ramp_fmu, "--stop-time", 0.5, "--out", work / "sim" / "d2.csv",
              cwd=work)
    assert len(read_csv(str(work / "sim" / "d2.csv"))) == 51


@pytest.mark.parametrize("args, named", [
    (("build", "disk_rampp"), "disk_rampp"),
    (("check", "no_such_model.py"), "no_such_model.py"),
    (("build", "disk_ramp", "--set", "N=20"), "--set N"),
    (("build", "pendulum_chain", "--set", "N=twenty"), "N=twenty"),
    (("check", "disk_ramp", "--set", "nonsense"), "nonsense"),
    (("check", "disk_ramp", "--set", "mu=abc"), "mu=abc"),
    (("info", "pendulum_chain", "--set", "N=1.5"), "N=1.5"),
])
def test_bad_input_exits_non_zero_naming_it(work, args, named):
    proc = embed_fmu(*args, cwd=work, ok=False)
    assert proc.returncode != 0
    assert named in proc.stderr and "Traceback" not in proc.stderr


def test_a_file_without_build_or_with_a_bad_name_is_refused(work, user_fmu):
    no_build = work / "bad" / "helpers.py"
    no_build.parent.mkdir(exist_ok=True)
    no_build.write_text('"""Not a model."""\n\ndef make():\n    return None\n')
    proc = embed_fmu("build", no_build, cwd=work, ok=False)
    assert proc.returncode != 0 and "helpers.py" in proc.stderr and "build()" in proc.stderr
    bad_name = work / "bad" / "dash.py"
    bad_name.write_text(USER_MODEL.replace('Scenario("cart_wall"', 'Scenario("cart-wall"'))
    proc = embed_fmu("check", bad_name, cwd=work, ok=False)
    assert proc.returncode != 0 and "'cart-wall'" in proc.stderr and "identifier" in proc.stderr
    failing = work / "bad" / "failing.py"
    failing.write_text(USER_MODEL.replace("    x, th = dynamicsymbols", "    1 / 0\n    x, th = dynamicsymbols"))
    proc = embed_fmu("info", failing, cwd=work, ok=False)
    assert proc.returncode == 1 and "failing.py" in proc.stderr
    assert "ZeroDivisionError" in proc.stderr and "Traceback" in proc.stderr
    sibling = work / "bad" / "uses_helpers.py"
    sibling.write_text(USER_MODEL.replace("import numpy as np\n",
                                          "import helpers\nimport numpy as np\n", 1))
    proc = embed_fmu("build", sibling, cwd=work, ok=False)
    assert proc.returncode != 0 and "helpers" in proc.stderr and "package" in proc.stderr
    # simulate: an input column that is no input, a start value of an output
    csv = work / "bad" / "in.csv"
    csv.write_text("time,G\n0,1\n")
    proc = embed_fmu("simulate", user_fmu, "--input", csv, cwd=work, ok=False)
    assert proc.returncode != 0 and "'G'" in proc.stderr
    proc = embed_fmu("simulate", user_fmu, "--set", "gap=1", cwd=work, ok=False)
    assert proc.returncode != 0 and "gap" in proc.stderr and "output" in proc.stderr
    proc = embed_fmu("simulate", user_fmu, "--stop-time", "-1", cwd=work, ok=False)
    assert proc.returncode == 2 and "--stop-time -1" in proc.stderr
