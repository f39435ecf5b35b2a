"""disk_fence through the loader's fast path (issue 30, "Python only on events"): its fence
extension and background compiler let the C loader step while both are idle
(``FenceGeometry.idle``, ``BackgroundCompiler.idle``, fmu_src/runtime/fast_step.py).  Checked
against the Python path of the same FMU (EMBED_FAST_STEP=0): every output at every step bit for
bit (but embed_latency, a wall-clock time), offline, with an arc fence and with a free-form
fence (the background workers' answers) announced mid-run; most doSteps ran in C, the
announcement's and the events' in Python; every output is served by the loader after a C step;
an error routed to the idle client while C steps wakes the slave, whose next doStep logs it."""

import gc
import os
import threading
from pathlib import Path

import pytest

from test_fast_step import Run, same

H = 1e-3
CURVE = "0.0002*(abs(s - 2)**5 - 32 + 80*s) + 0.01*s**2"    # as test_disk_fence's
# a jet whose tape (fast_step.c runs it) has most of a tape's operations in it
TRANSCENDENTAL = ("0.004*s**2*(3 + sin(1.3*s) + tanh(s) + cos(s) + atan(s) "
                  "+ exp(-0.2*s)*log(s + 2)/sqrt(s**2 + 1))")


@pytest.fixture(scope="module")
def fence_fmu(tmp_path_factory):
    """disk_fence.fmu, built from this tree (or taken from EMBED_TEST_FMUS)."""
    if os.environ.get("EMBED_TEST_FMUS"):
        return Path(os.environ["EMBED_TEST_FMUS"]) / "disk_fence.fmu"
    import build_fmu
    out = tmp_path_factory.mktemp("fence_fmu")
    build_fmu.main(["disk_fence", "--out", str(out)])
    return out / "disk_fence.fmu"


def fence_run(run, announce_at, n, curve=""):
    """n doSteps, the fence (arc or ``curve``) announced before step ``announce_at``."""
    if curve:
        run.f.setString([run.vr["fence_curve"]], [curve])
    rows = run.step(announce_at)
    run.f.setInteger([run.vr["fence_version"]], [1])
    return rows + run.step(n - announce_at)


@pytest.mark.parametrize("curve", ["", CURVE, TRANSCENDENTAL],
                         ids=["arc", "free_form", "transcendental"])
def test_fence_bit_for_bit(fence_fmu, curve):
    """9.5 s offline, the fence announced at 7 s: the disk rolls down the ramp, onto the fence
    and off it; the same outputs at every step, fast path on and off; the fence was used, and
    most doSteps ran in C (the ramp's, after the fence, on the arc's fence), the
    announcement's in Python.  A free-form fence's mode (``JetMode``: its RK4 stages over the
    family's right-hand side with the profile's jet) steps in C as well (fast_step.c's
    ``staged``), to the bits of its numpy stages."""
    n, at = 9500, 7000
    fast, slow = Run(fence_fmu, True), Run(fence_fmu, False)
    try:
        a, b = fence_run(fast, at, n, curve), fence_run(slow, at, n, curve)
        ints = {k: fast.f.getInteger([fast.vr[k]])[0]
                for k in ("event_count", "geometry_version_active", "geometry_status")}
    finally:
        fast.close()
        slow.close()
    # embed_latency is a wall-clock time (perf_counter): compared apart, as "was it set"
    i = fast.reals.index(fast.vr["embed_latency"])
    a, b = wall_apart(a, i), wall_apart(b, i)
    k = same(a, b)
    assert k is None, f"step {k}: {a[k][0]} != {b[k][0]}"
    assert ints["geometry_version_active"] == 1 and ints["geometry_status"] == 0
    assert ints["event_count"] >= 2               # onto the fence and off it
    assert sum(d for _, d in b) == 0
    assert sum(d for _, d in a[:at]) >= 0.95 * at     # the ramp's steps in C
    assert a[at][1] == 0                              # the announcement: Python's
    assert sum(d for _, d in a[-300:]) >= 290         # parked after the fence: C again
    # the fence's mode too: the arc family's (CompiledMode, monitors apart), a free-form
    # fence's (JetMode, staged)
    assert sum(d for _, d in a) >= 0.95 * n


def test_a_real_time_run_keeps_a_free_form_fence_mode_in_python(fence_fmu):
    """Real time: the ramp's doSteps run in C, but on a free-form fence (JetMode, stepped
    stage by stage) the doSteps are Python's, the fast path saying why: stepped in C, the
    contact's projection and event steps ran cold and a rig missed twice the deadlines
    (docs/design.md, stop 44's facts)."""
    import time
    run = Run(fence_fmu, True, booleans={"real_time": True})
    try:
        run.f.setString([run.vr["fence_curve"]], [CURVE])
        ramp = run.step(1000)
        run.f.setInteger([run.vr["fence_version"]], [1])
        for _ in range(5000):            # the workers answer in wall time: waited for
            run.step(1)
            if not run.f.getBoolean([run.vr["embed_pending"]])[0]:
                break
            time.sleep(1e-3)
        sl = slave_of(run)
        for _ in range(9500 - run.k):
            if type(sl.sim.state.compiled_mode).__name__ == "JetMode":
                break
            run.step(1)
        assert type(sl.sim.state.compiled_mode).__name__ == "JetMode", run.k
        on_fence = run.step(100)
        assert sum(d for _, d in ramp) >= 950
        assert sum(d for _, d in on_fence) == 0
        assert "stepped stage by stage" in sl.fast.reason, sl.fast.reason
    finally:
        run.close()


def wall_apart(rows, i):
    """The rows with output ``i`` (a wall-clock time) replaced by whether it is positive."""
    return [(x[:i] + (x[i] > 0,) + x[i + 1:], d) for x, d in rows]


def slave_of(run):
    """The slave behind an fmpy instance (this process's interpreter runs it)."""
    gc.unfreeze()           # (the FMU freezes what it made at start-up)
    mine = [o for o in gc.get_objects() if type(o).__name__ == "disk_fence"
            and "ScenarioSlave" in [c.__name__ for c in type(o).__mro__]
            and getattr(o, "instance_name", None) == "fast" and o.sim is not None
            and o.sim.compiler is not None and not o.sim.compiler._closed]   # (not closed)
    assert len(mine) == 1
    return mine[0]


def test_outputs_served_without_python(fence_fmu):
    """After a doStep run in C, every output (those a HIL rig reads: q1 q2 q4 u4 N
    embed_latency, mode event_count geometry_version_active status, and the rest) is answered
    by the loader: no call reached Python, which would have synced the record first."""
    run = Run(fence_fmu, True)
    try:
        assert run.step(200)[-1][1] == 1
        rec = slave_of(run).fast.rec
        assert rec.pending == 1 and rec.on == 1
        run.outputs()
        assert rec.pending == 1, "an output was read through Python"
        run.f.getString([run.vr["embedding"]])      # a call the loader does not serve: synced
        assert rec.pending == 0
    finally:
        run.close()


def test_answer_while_c_steps_wakes_the_slave(fence_fmu):
    """Something routed to the background compiler's idle client by another thread (a restart
    notice, ``Workers._tell``) while the C loader steps: the next doStep is Python's, and
    takes it (the error logged, the inbox empty), then the C steps resume."""
    run = Run(fence_fmu, True)
    try:
        rows = run.step(200)
        assert rows[-1][1] == 1                   # stepping in C
        bc = slave_of(run).sim.compiler
        assert bc is not None and bc.idle()
        told = threading.Thread(target=lambda: bc._w._tell(
            bc.id, "error", ("background workers", "a notice for the test", "")))
        told.start()
        told.join()
        assert not bc.idle()
        rows = run.step(3)
        assert [d for _, d in rows] == [0, 1, 1]  # Python takes it, then C again
        assert bc.idle() and not bc._errors       # drained and logged by do_step
    finally:
        run.close()
