"""A real-time run's loader thread gives the GIL way to FMI calls (fmu_src/runtime/loader/
gil_gate.c; issue 30, tails): while an FMI call of the process is under way its Python stands
still (but for a short run after each 2 ms, so that a master calling without pause still lets
its work through), and it goes on once the call is done; an offline run's loader thread is not
gated; the binary stays loaded while the gate is the loader thread's.  Then the loader thread's
other parts: the switch interval, work held to a step's end, the shared locks."""

import json
import subprocess
import sys
import zipfile

import pytest

from test_keep_warm import OPEN

# the FMI call under way: fmi2SetString refusing text that is not UTF-8 calls the master's
# logger (the loader's refusal, inside the call), and this master's logger sleeps 0.3 s in it
CHILD = OPEN + r"""
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, defaultCallbacks
unzip, real_time = sys.argv[1], sys.argv[2] == "1"
inside = []

def logger(env, name, status, category, message):
    if status == 3:                # (the text comes as an argument of "%s")
        inside.append(time.monotonic())
        time.sleep(0.3)
        inside.append(time.monotonic())

log = fmi2CallbackLoggerTYPE(logger)
cb = fmi2CallbackFunctions(logger=log, allocateMemory=defaultCallbacks.allocateMemory,
                           freeMemory=defaultCallbacks.freeMemory)
md = read_model_description(unzip)
vr = {v.name: v.valueReference for v in md.modelVariables}
f = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
              instanceName="gate")
f.instantiate(callbacks=cb, loggingOn=True)
f.setupExperiment(startTime=0.0)
f.enterInitializationMode()
f.setBoolean([vr["real_time"]], [real_time])
f.exitInitializationMode()
# the FMU's own copy of the engine (its bundle's package), whose loader thread it started
lt = next(m for n, m in sys.modules.items()
          if n.startswith("embed_") and n.endswith(".codegen.loader_thread"))
ticks, stop = [], []

def work():              # Python calls, as placing object code makes: the gate's checkpoints
    while not stop:
        ticks.append(time.monotonic())
        for _ in range(50):
            abs(-1)

done = lt.run_later(work)
time.sleep(0.3)
bad = (ctypes.c_char_p * 1)(b"\xff")
try:
    f.fmi2SetString(f.component, (ctypes.c_uint * 1)(vr["fence_curve"]), 1, bad)
    status = 0
except FMICallException as exc:
    status = exc.status
time.sleep(0.3)
stop.append(1)
done.result(timeout=10)
a, b = inside
before = sum(a - 0.3 <= t < a for t in ticks)
during = sum(a <= t < b for t in ticks)
after = sum(b <= t < b + 0.3 for t in ticks)
lib = ctypes.CDLL(os.path.join(unzip, "binaries", "linux64",
                               md.coSimulation.modelIdentifier + ".so"))
paused = lib.embed_gate_pause()      # (outside an FMI call: nothing to leave)
f.terminate()
f.freeInstance()
f.freeLibrary()          # the gate's code stays (pinned): the loader thread goes on working
later = lt.run_later(lambda: sum(abs(-k) for k in range(1000))).result(timeout=10)
print(json.dumps({"status": status, "before": before, "during": during, "after": after,
                  "later": later, "paused": paused}))
"""


@pytest.fixture(scope="module")
def unzip(fmu_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("gate") / "disk_fence"
    with zipfile.ZipFile(fmu_dir / "disk_fence.fmu") as z:
        z.extractall(out)
    return out


def _run(unzip, real_time):
    res = subprocess.run([sys.executable, "-c", CHILD, str(unzip), str(int(real_time))],
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_real_time_run_s_loader_thread_stands_still_while_an_fmi_call_is_under_way(unzip):
    r = _run(unzip, True)
    assert r["status"] == 3                      # fmi2Error: the text refused, the call done
    assert r["later"] == sum(range(1000))        # after freeLibrary, no crash
    assert r["paused"] == 0                      # no FMI call of this thread to leave
    assert r["before"] > 100 and r["after"] > 100, r      # it runs between calls
    # in the call: only the runs after each 2 ms wait (0.2 ms in 2.2 ms, about 9 %)
    assert r["during"] < 0.3 * min(r["before"], r["after"]), r


def test_an_offline_run_s_loader_thread_is_not_gated(unzip):
    r = _run(unzip, False)
    assert r["status"] == 3
    assert r["during"] > 0.5 * min(r["before"], r["after"]), r


def test_the_interval_is_short_from_the_moment_work_is_posted_until_the_last_is_done():
    """A thread's wait for the GIL reads the switch interval when it begins: set by the
    thread posting the work, before the loader thread can take the GIL, it is short for the
    poster's next wait; the loader thread puts the one before back when its work is done."""
    import time
    from embed.codegen import loader_thread
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        gate = __import__("threading").Event()
        first = loader_thread.run_later(lambda: gate.wait(60) and sys.getswitchinterval())
        try:
            short = sys.getswitchinterval()
            second = loader_thread.run_later(sys.getswitchinterval)
        finally:
            gate.set()
        assert short == pytest.approx(loader_thread.LOADER_SWITCH)
        assert first.result(timeout=60) == second.result(timeout=60) == short
        end = time.monotonic() + 10
        while sys.getswitchinterval() != 0.005 and time.monotonic() < end:
            time.sleep(0.001)
        assert sys.getswitchinterval() == 0.005
    finally:
        sys.setswitchinterval(before)


def test_work_asked_inside_held_is_handed_on_as_it_ends_in_order():
    """``loader_thread.held`` (a real-time instance's doStep): the work asked inside is not
    begun there, even given the loader thread a quarter of a second, and is done, in the
    order asked, once the outermost ``held`` ends; outside it, at once."""
    import threading
    from embed.codegen import loader_thread
    ran, started = [], threading.Event()

    def job(k):
        started.set()
        ran.append(k)
        return k
    with loader_thread.held():
        first = loader_thread.run_later(lambda: job(1))
        with loader_thread.held():
            second = loader_thread.load_later([])
            third = loader_thread.run_later(lambda: job(3))
        assert not started.wait(0.25) and not first.done() and not second.done()
    assert third.result(timeout=60) == 3 and first.result() == 1 and second.result() is None
    assert ran == [1, 3]
    assert loader_thread.run_later(lambda: job(4)).result(timeout=60) == 4


def test_a_thread_that_finds_a_shared_lock_held_leaves_the_gate_while_it_waits():
    """``loader_thread.SharedLock`` (native's, elf_load's locks): a thread that finds one held
    (by the loader thread, which the gate may be keeping still) calls the gate's pause before
    it waits and its resume once it has the lock; one that finds it free calls neither."""
    import threading
    from embed.codegen import loader_thread, native
    calls, holding, let_go = [], threading.Event(), threading.Event()

    def hold():
        with native._LOCK:
            holding.set()
            let_go.wait(60)
    saved = list(loader_thread.GATE)
    loader_thread.GATE[:] = [lambda: calls.append("pause") or 1, lambda: calls.append("resume")]
    try:
        with native._LOCK:
            pass
        assert calls == []
        done = loader_thread.run_later(hold)
        assert holding.wait(60)
        threading.Timer(0.2, let_go.set).start()
        with native._LOCK:
            calls.append("inside")
        done.result(timeout=60)
        assert calls == ["pause", "resume", "inside"]
    finally:
        loader_thread.GATE[:] = saved


# a real-time instance, its page-warming thread sweeping; a job of the loader thread's that
# runs Python for 0.4 s: the pages the thread touched in the 0.4 s before it, during it, after
WARMING = OPEN + r"""
unzip = sys.argv[1]
f, md, vr = instance(unzip, "warm", True)
f.exitInitializationMode()
for k in range(50):
    f.doStep(k * 1e-3, 1e-3)
lt = next(m for n, m in sys.modules.items()
          if n.startswith("embed_") and n.endswith(".codegen.loader_thread"))
lib = ctypes.CDLL(next(line.split()[-1] for line in open("/proc/self/maps")
                       if line.rstrip().endswith(md.coSimulation.modelIdentifier + ".so")))
stats = (ctypes.c_ulong * 4)()

def touched():
    lib.embed_keep_warm_stats(stats)
    return stats[1]

end = time.monotonic() + 60
while touched() == 0 and time.monotonic() < end:     # its first sweep under way
    time.sleep(0.01)
started = threading.Event()

def work():
    started.set()
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        abs(-1)
    return lt.WORKING.value

a = touched()
time.sleep(0.4)
b = touched()
done = lt.run_later(work)
started.wait(60)
c = touched()
working = done.result(timeout=60)
d = touched()
time.sleep(0.4)
e = touched()
f.terminate()
f.freeInstance()
print(json.dumps({"before": b - a, "during": d - c, "after": e - d, "working": working,
                  "idle": lt.WORKING.value}))
"""


def test_the_page_warming_thread_pauses_while_the_loader_thread_works(unzip):
    """keep_warm.c's thread, woken on the loader thread's core, preempted it while it held the
    GIL, and a step waited out its slice (0.7 ms, traced): while the loader runs a job
    (``loader_thread.WORKING``, passed to the gate) it pauses, a slice each 20 ms at most."""
    res = subprocess.run([sys.executable, "-c", WARMING, str(unzip)], capture_output=True,
                         text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert r["working"] == 1 and r["idle"] == 0, r
    assert r["before"] > 2000 and r["after"] > 2000, r      # sweeps of thousands of pages
    assert r["during"] < 0.25 * min(r["before"], r["after"]), r
