"""The loader's fast path (issue 30, fmu_src/runtime/loader/fast_step.c, fmu_src/runtime/fast_step.py):
communication steps with no event run in C without entering Python.  Checked against the Python
path of the same FMU (EMBED_FAST_STEP=0), which is the engine's loop unchanged: every output at
every step bit for bit, in fmpy and in C masters, with events, an FMU state restored, an input
changed mid-run, and a configuration the fast path does not cover; the loader's counter of the
doSteps it ran shows the fast path ran (or did not)."""

import ctypes
import csv
import os
import subprocess
import threading
from pathlib import Path

import fmpy
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

import masters

H = 1e-3
_ENV = threading.Lock()    # EMBED_FAST_STEP set around an instantiate
STEPS = 8000          # 8 s at 1 ms


@pytest.fixture(scope="module")
def fmus(fmu_dir):
    """Every scenario's FMU (the session's, tests/conftest.py)."""
    return fmu_dir


class Run:
    """An FMU instance in fmpy, its fast path on or off (read by the slave at instantiate)."""

    def __init__(self, fmu, fast, strings=None, booleans=None):
        self.md = md = read_model_description(str(fmu))
        self.unzip = extract(str(fmu))
        out = [v for v in md.modelVariables if v.causality == "output"]
        self.reals = [v.valueReference for v in out if v.type == "Real"]
        self.ints = [v.valueReference for v in out if v.type in ("Integer", "Enumeration")]
        self.bools = [v.valueReference for v in out if v.type == "Boolean"]
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        with _ENV:      # (instances made from two threads: the variable is the process's)
            old = os.environ.get("EMBED_FAST_STEP")
            os.environ["EMBED_FAST_STEP"] = "1" if fast else "0"
            try:
                self.f = f = FMU2Slave(guid=md.guid, unzipDirectory=self.unzip,
                                       modelIdentifier=md.coSimulation.modelIdentifier,
                                       instanceName="fast" if fast else "python")
                f.instantiate()
                f.setupExperiment(startTime=0.0)
                f.enterInitializationMode()
                for name, value in (strings or {}).items():
                    f.setString([self.vr[name]], [value])
                for name, value in (booleans or {}).items():
                    f.setBoolean([self.vr[name]], [value])
                f.exitInitializationMode()
            finally:
                if old is None:
                    os.environ.pop("EMBED_FAST_STEP")
                else:
                    os.environ["EMBED_FAST_STEP"] = old
        counter = f.dll.embed_fast_steps
        counter.restype, counter.argtypes = ctypes.c_long, [ctypes.c_void_p]
        self.counter = lambda: counter(f.component)
        self.k = 0

    def outputs(self):
        """Every Real, Integer and Boolean output, as read by the master."""
        return (tuple(self.f.getReal(self.reals)) + tuple(self.f.getInteger(self.ints))
                + tuple(self.f.getBoolean(self.bools) if self.bools else ()))

    def step(self, n, h=H):
        """n doSteps of h; per step (outputs, whether the loader ran it without Python)."""
        rows = []
        for _ in range(n):
            before = self.counter()
            self.f.doStep(self.k * h, h)
            self.k += 1
            rows.append((self.outputs(), self.counter() - before))
        return rows

    def close(self):
        self.f.terminate()
        self.f.freeInstance()


def same(a, b):
    """Index of the first step whose outputs differ (bits: repr of floats), or None."""
    for k, ((x, _), (y, _)) in enumerate(zip(a, b)):
        if list(map(repr, x)) != list(map(repr, y)):
            return k
    return None if len(a) == len(b) else min(len(a), len(b))


@pytest.mark.parametrize("name, h", [("disk_ramp", 1e-3), ("pendulum_belt", 1e-3),
                                     ("disk_ramp", 1e-2)])
def test_every_output_bit_for_bit(fmus, name, h):
    """8 s with the scenario's events: the same outputs at every step, fast path on and off;
    most doSteps ran in C, the event steps in Python, and the off path never in C."""
    n = int(round(8.0 / h))
    fast, slow = Run(fmus / f"{name}.fmu", True), Run(fmus / f"{name}.fmu", False)
    try:
        a, b = fast.step(n, h), slow.step(n, h)
        events = fast.f.getInteger([fast.vr["event_count"]])[0]
        last_ok = fast.f.getRealStatus(2)          # fmi2LastSuccessfulTime
        assert last_ok == pytest.approx(8.0, abs=1e-12)
    finally:
        fast.close()
        slow.close()
    assert same(a, b) is None, f"step {same(a, b)}: {a[same(a, b)][0]} != {b[same(a, b)][0]}"
    assert events >= 2                           # events happened on the way
    in_c = sum(d for _, d in a)
    assert in_c >= 0.9 * n and sum(d for _, d in b) == 0
    # an event step is Python's (the guard due or approaching): some steps were handed over
    assert in_c < n


def test_approaching_event_hands_four_steps_to_python(fmus):
    """The loader's approach test is the rehearsal's (``embed.hybrid.rehearsal.STEPS``) and one
    step more (``fast_step.LEAD``): a guard falling steadily is seen four steps ahead, so that
    Python takes an ordinary step first (the first after C's pays the interpreter's cold
    path), warms the event's parts two and three steps ahead and rehearses it one ahead.
    pendulum_belt's slip-stick events: the four doSteps before each event's ran in Python, the
    fifth before in C (the build before LEAD: the fourth in C)."""
    run = Run(fmus / "pendulum_belt.fmu", True)
    try:
        rows = run.step(3000)
        at = len(run.reals) + run.ints.index(run.vr["event_count"])
    finally:
        run.close()
    events = [k for k in range(5, len(rows)) if rows[k][0][at] != rows[k - 1][0][at]]
    assert len(events) >= 5
    before = {tuple(rows[j][1] for j in range(k - 5, k)) for k in events}
    assert before == {(1, 0, 0, 0, 0)}, before


@pytest.mark.parametrize("name", ["top", "swing_bar", "biped7", "metamorphic_palm",
                                  "pendulum_chain"])
def test_program_modes_bit_for_bit(fmus, name):
    """Modes whose step is one compiled program (``ProgramMode``; ``TermsProgramMode``, the
    partition as data) keep a memo in the compiled code: the last step's final stage, reused
    by the next step where its arguments are the same to the bit.  The C steps read and write
    it as Python's do: 3 s with the scenario's events (biped7's impacts, the background
    compiler's answers of pendulum_chain), the same outputs at every step on and off."""
    n = 3000
    fast, slow = Run(fmus / f"{name}.fmu", True), Run(fmus / f"{name}.fmu", False)
    try:
        a, b = fast.step(n), slow.step(n)
    finally:
        fast.close()
        slow.close()
    assert same(a, b) is None, f"step {same(a, b)}: {a[same(a, b)][0]} != {b[same(a, b)][0]}"
    in_c = sum(d for _, d in a)
    assert in_c >= 0.8 * n and sum(d for _, d in b) == 0


def test_projection_in_c_steps_and_watch(fmus):
    """slider_crank3's closed loop: the configuration projection and the re-selection watch
    (``switching.after_step``) are on; the loader steps in C, calls Python back for the
    projection where the residual monitor passes PHI_TOL (``fast_project``: 80-90 steps of
    2000 here) and would give Python a step where kappa(B1) asks for a re-selection: the
    outputs bit for bit all along, and the projected steps in C (before the callback, 86 of
    them went to Python whole)."""
    n = 2000
    fast = Run(fmus / "slider_crank3.fmu", True)
    slow = Run(fmus / "slider_crank3.fmu", False)
    try:
        a, b = fast.step(n), slow.step(n)
    finally:
        fast.close()
        slow.close()
    assert same(a, b) is None
    in_c = sum(d for _, d in a)
    assert in_c >= n - 20 and a[0][1] == 1


def test_fallback_where_not_eligible(fmus):
    """The adaptive integrator is not the fast path's: no doStep runs in C and the outputs
    are the Python path's."""
    fmu = fmus / "disk_ramp.fmu"
    fast = Run(fmu, True, {"solver": "adaptive"})
    slow = Run(fmu, False, {"solver": "adaptive"})
    try:
        a, b = fast.step(2000), slow.step(2000)
    finally:
        fast.close()
        slow.close()
    assert same(a, b) is None
    assert sum(d for _, d in a) == 0


def test_state_got_while_fast_restores_bit_for_bit(fmus):
    """A state got after fast steps (the loader syncs Python first) and restored, also through
    its serialized bytes, repeats the run to the bit; the run matches the Python path."""
    fmu = fmus / "disk_ramp.fmu"
    r = Run(fmu, True)
    slow = Run(fmu, False)
    try:
        head = r.step(2000)
        assert sum(d for _, d in head) >= 1900
        s = r.f.getFMUstate()
        data = r.f.serializeFMUstate(s)
        a = r.step(2000)
        r.f.setFMUstate(s)
        r.k = 2000
        b = r.step(2000)
        s2 = r.f.deSerializeFMUstate(data)
        r.f.setFMUstate(s2)
        r.k = 2000
        c = r.step(2000)
        ref = slow.step(4000)
        r.f.freeFMUstate(s)
        r.f.freeFMUstate(s2)
    finally:
        r.close()
        slow.close()
    assert same(head + a, ref) is None
    assert same(a, b) is None and same(a, c) is None
    # the restored instance steps in C again after its first (Python) step
    assert sum(d for _, d in b) >= 1800 and b[0][1] == 0


def test_input_change_hands_over_to_python(fmus):
    """An input set mid-run: the next doStep runs in Python (it takes the input), the
    following ones in C again; every output as on the Python path with the same input."""
    fmu = fmus / "disk_ramp.fmu"
    runs = [Run(fmu, True), Run(fmu, False)]
    rows = []
    try:
        for r in runs:
            out = r.step(3000)
            r.f.setReal([r.vr["F_ext"]], [1.5])
            out += r.step(2000)
            rows.append(out)
    finally:
        for r in runs:
            r.close()
    a, b = rows
    assert same(a, b) is None
    assert a[2999][1] == 1 and a[3000][1] == 0          # C, then Python takes the input
    assert sum(d for _, d in a[3001:]) >= 1800          # then C again
    assert a[3000][0] != a[2999][0]


def _csv_rows(path):
    with open(path, newline="") as f:
        return [r for r in csv.reader(f) if r]


@pytest.mark.skipif(not masters.MASTERS.is_dir(),
                    reason=f"the C/C++ masters are not at {masters.MASTERS}")
@pytest.mark.parametrize("name", ["disk_ramp", "top"])
def test_fmusim_bit_for_bit(fmus, tmp_path, name):
    """fmusim (17 digits) at 1 ms for 8 s writes the same file with the fast path on and off
    (top: a program mode, whose C steps take the GIL from the master's thread)."""
    fmu = fmus / f"{name}.fmu"
    got = {}
    for fast in ("1", "0"):
        proc, out = masters.simulate("fmusim", fmu, tmp_path / fast, step=H, EMBED_FAST_STEP=fast)
        assert proc.returncode == 0, proc.stderr[-2000:]
        got[fast] = _csv_rows(out)
    assert len(got["1"]) == STEPS + 2 and got["1"] == got["0"]


def test_c_master_runs_the_steps_in_c(fmus, tmp_path):
    """benchmarks/c_master.c (a process without Python until the loader starts one): with the
    fast path all doSteps but the event steps ran in C, without it none."""
    fmu = fmus / "disk_ramp.fmu"
    md = read_model_description(str(fmu))
    unzip = extract(str(fmu))
    exe = tmp_path / "c_master"
    root = Path(__file__).resolve().parents[1]
    subprocess.run(["gcc", "-O2", "-I", str(Path(fmpy.__file__).parent / "c-code"), "-o",
                    str(exe), str(root / "benchmarks" / "c_master.c"), "-ldl"], check=True)
    vrs = [str(v.valueReference) for v in md.modelVariables if v.name in ("q1", "q2", "u1")]
    counts = {}
    for fast in ("1", "0"):
        env = {**masters.env(), "EMBED_FAST_STEP": fast}
        proc = subprocess.run([str(exe), unzip, md.coSimulation.modelIdentifier, md.guid,
                               str(STEPS), str(H), *vrs], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        import json
        counts[fast] = json.loads(proc.stdout)["fast_steps"]
    assert counts["1"] >= 0.9 * STEPS and counts["0"] == 0


@pytest.mark.parametrize("name, force, values", [("disk_ramp", "F_ext", (0.5, -0.7)),
                                                  ("metamorphic_palm", "tau1", (0.02, -0.03))])
def test_two_instances_from_two_threads(fmus, name, force, values):
    """Two instances of one FMU stepped from two threads at once (the C steps run without the
    GIL, on one compiled function, each on buffers of its own; a program mode's, whose memo
    the instances share, under the GIL): each gives its run alone."""
    import sys
    fmu = fmus / f"{name}.fmu"

    def run(value, out, key):
        r = Run(fmu, True)
        try:
            r.f.setReal([r.vr[force]], [value])
            out[key] = r.step(3000)
        finally:
            r.close()

    alone, both = {}, {}
    for key, value in zip("ab", values):
        run(value, alone, key)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(value, both, key))
                   for key, value in zip("ab", values)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    for key in "ab":
        assert same(alone[key], both[key]) is None
        assert sum(d for _, d in both[key]) >= 2500
    assert alone["a"][-1][0] != alone["b"][-1][0]
