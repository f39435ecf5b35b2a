"""disk_fence.fmu on its background workers (issue 10): two instances in one process each
get their own answers, an older announcement never replaces a newer one, and a worker that
dies is started again with what was outstanding (said in the log)."""

import math
import os
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fmu_src.host.master import FmuRunner
from test_fence_storm import on_its_own_fence

PHI, L, R_DISK = -math.radians(5.0), 25.3, 0.5
NEAR = {"q4_start": 24.0}          # the ramp's end 1.3 m ahead: the fence is met at about 2.1 s
CURVE = "0.05*s**2*(1+0.01*sin(3*s))"


def runner(fmu_dir, name):
    """real_time: the answers arrive while the steps go on (offline a step would wait for
    them: issue 33, tests/test_reliability.py), which these tests are about."""
    return FmuRunner(str(fmu_dir / "disk_fence.fmu"), params={**NEAR, "real_time": True},
                     strings={"embedding": "background"}, instance=name)


def announce(r, version, curve="", radius=10.0):
    r.fmu.setString([r.vr("fence_curve")], [curve])
    r.set(fence_radius=radius, fence_version=version)


def step_all(runs, n, sleep=1e-3, check=None):
    for _ in range(n):
        for r in runs:
            r.step(1e-3)
            if check:
                check(r)
        time.sleep(sleep)           # wall time for the workers, as at a 1 kHz master


def settle(runs, wall=90.0):
    """Step in 10 us steps (the disk barely moves) until no announcement is pending: the
    workers may be slow to answer on a loaded machine (or starting again), and the disk must
    not reach the ramp's end before its fence is known for reasons of wall time alone."""
    t0 = time.monotonic()
    while True:
        for r in runs:                 # a step first: an announcement is read by doStep
            r.step(1e-5)
        if not any(r.get("embed_pending")["embed_pending"] for r in runs):
            return
        assert time.monotonic() - t0 < wall, "an announcement was never answered"
        time.sleep(1e-3)


def outputs(r):
    return r.get("mode", "status", "q1", "q2", "q4", "constraint_residual",
                 "geometry_version_active", "geometry_status", "embed_pending")


def arc_miss(o, R=10.0):
    """Distance of the disk centre from R - r off the arc's centre C = P + R n."""
    cx = L * math.cos(PHI) - R * math.sin(PHI)
    cy = L * math.sin(PHI) + R * math.cos(PHI)
    return abs(math.hypot(o["q1"] - cx, o["q2"] - cy) - (R - R_DISK))


def curve_miss(o, text):
    return on_its_own_fence({"outputs": o, "params": {}, "text": text})[1]


def workers(r=None):
    """pids of the disk_fence workers this process started (children running embed.background.worker);
    with a runner ``r``, those started from its FMU's folder if there are any (an FMU whose
    packages are renamed per build imports them anew for each extraction, with a pair of
    workers of their own: earlier pairs are not this instance's)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        ppid = int(ppid) if state != "Z" else None     # a zombie is gone, only not reaped
        # the module is embed.background.worker, or embed_<build>.worker in an FMU whose packages are
        # renamed per build
        worker = any(a.startswith(b"embed") and a.endswith(b".worker") for a in cmd)
        if ppid == os.getpid() and worker and any(b"disk_fence" in a for a in cmd):
            out.append((int(pid), cwd))
    if r is not None and any(c.startswith(str(r.dir)) for _, c in out):
        out = [(p, c) for p, c in out if c.startswith(str(r.dir))]
    return sorted(p for p, _ in out)


def started_workers(r, wall=20.0):
    """The pids of ``r``'s two workers once both are there: an offline run starts them in a
    thread at its second doStep (``simulation.start_workers_later``)."""
    t0 = time.monotonic()
    while len(workers(r)) < 2 and time.monotonic() - t0 < wall:
        time.sleep(0.05)
    return workers(r)


def test_one_instance_announcing_while_another_only_steps(fmu_dir):
    """A announces a free-form fence, B only steps: A's announcement completes and A's disk
    meets its fence; B, with no fence, runs off the ramp.  (B's polls used to take A's
    answers: A's announcement never completed and A's disk rolled off the ramp.)"""
    a, b = runner(fmu_dir, "inst_a"), runner(fmu_dir, "inst_b")
    try:
        step_all([a, b], 5)
        announce(a, 1, CURVE)
        settle([a, b])
        step_all([a, b], 2600)
        oa, ob = outputs(a), outputs(b)
        assert oa["geometry_version_active"] == 1 and oa["embed_pending"] == 0, oa
        assert oa["mode"] == 3 and oa["status"] == 0 and oa["constraint_residual"] <= 1e-9, oa
        assert curve_miss(oa, CURVE) <= 1e-9
        assert ob["geometry_version_active"] == 0 and ob["mode"] == 1 and ob["status"] == 0, ob
    finally:
        a.close()
        b.close()


def test_two_instances_each_on_the_fence_it_announced(fmu_dir):
    """A announces a free-form curve, B an arc (and C, a third, another curve, at the same
    step): each disk ends on its own fence (B used to end on A's curve)."""
    other = "0.03*s**2*(1+0.01*sin(5*s))"
    a, b, c = (runner(fmu_dir, n) for n in ("inst_c", "inst_d", "inst_e"))
    try:
        step_all([a, b, c], 5)
        announce(a, 1, CURVE)
        announce(b, 1, "", radius=10.0)
        announce(c, 1, other)
        settle([a, b, c])
        step_all([a, b, c], 2600)
        oa, ob, oc = outputs(a), outputs(b), outputs(c)
        for o in (oa, ob, oc):
            assert o["geometry_version_active"] == 1 and o["embed_pending"] == 0, o
            assert o["mode"] == 3 and o["status"] == 0 and o["constraint_residual"] <= 1e-9, o
        assert curve_miss(oa, CURVE) <= 1e-9 and curve_miss(oa, other) > 1e-5
        assert arc_miss(ob) <= 1e-9 and curve_miss(ob, CURVE) > 1e-5
        assert curve_miss(oc, other) <= 1e-9 and curve_miss(oc, CURVE) > 1e-5
    finally:
        for r in (a, b, c):
            r.close()


def test_an_older_announcement_never_replaces_a_newer_one(fmu_dir):
    """A free-form fence (version 1, answered by the worker some ms later) then an arc
    (version 2, ready at once): the arc stays, and the disk meets the arc."""
    r = runner(fmu_dir, "inst_stale")
    try:
        step_all([r], 5)
        announce(r, 1, CURVE)
        r.step(1e-3)
        announce(r, 2, "", radius=10.0)
        seen = set()
        settle([r])
        step_all([r], 2600, check=lambda r: seen.add(
            r.get("geometry_version_active")["geometry_version_active"]))
        o = outputs(r)
        assert seen == {2}
        assert o["geometry_version_active"] == 2 and o["embed_pending"] == 0, o
        assert o["mode"] == 3 and arc_miss(o) <= 1e-9, o
    finally:
        r.close()


@pytest.mark.parametrize("which", [0, 1])
def test_a_killed_worker_is_started_again_with_what_was_outstanding(fmu_dir, which):
    """The fast (0) or the slow (1) worker killed just after an announcement: both are started
    again (a warning says so), the announcement is sent again and completes, the status
    stays 0 and the disk meets the fence; no worker process is left behind."""
    r = runner(fmu_dir, f"inst_kill{which}")
    try:
        step_all([r], 5)
        before = workers(r)
        assert len(before) == 2, before
        curve = f"0.05*s**2*(1+0.01*sin({3 + which}*s))"
        announce(r, 1, curve)
        r.step(1e-3)
        os.kill(before[which], signal.SIGKILL)    # the fast worker is started first
        statuses = set()
        settle([r])
        step_all([r], 2600, check=lambda r: statuses.add(r.get("status")["status"]))
        o = outputs(r)
        assert statuses == {0}
        assert o["geometry_version_active"] == 1 and o["embed_pending"] == 0, o
        assert o["mode"] == 3 and curve_miss(o, curve) <= 1e-9, o
        said = [m for _, m in r.messages if "started both workers again" in m]
        assert said, r.messages
        after = workers(r)
        assert len(after) == 2 and not set(after) & set(before), (before, after)
        # the next announcement, made while the disk rolls on fence 1, is answered too: refused
        # (geometry_status 9), since entering it would move the disk (issue 33)
        announce(r, 2, "0.04*s**2*(1+0.01*sin(7*s))")
        settle([r])
        o = outputs(r)
        assert o["geometry_version_active"] == 1 and o["geometry_status"] == 9, o
        assert workers(r) == after
    finally:
        r.close()


def test_workers_stop_with_their_last_instance(fmu_dir):
    """Each instance is a client of the workers; when the last one terminates, they stop
    (a process that runs many FMUs, one extraction after another, keeps no stray workers)."""
    fmu = str(fmu_dir / "disk_fence.fmu")
    a = FmuRunner(fmu, strings={"embedding": "background"}, instance="wa")
    b = FmuRunner(fmu, strings={"embedding": "background"}, instance="wb")
    for _ in range(2):         # offline: the workers start at the second doStep
        a.step(1e-3)
        b.step(1e-3)
    assert len(started_workers(None)) >= 2      # (in a thread)
    time.sleep(1.0)          # their main has run: lowered once, through nice(1) or by itself
    for pid in workers():
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        niceness, policy = int(stat[16]), int(stat[38])
        assert niceness == min(19, max(os.nice(0), 0) + 10), (pid, niceness)
        # offline: the normal class (a real-time run's are idle: the test of a rig below),
        # on every CPU this process may use (a study's workers are not kept off any)
        assert policy == os.SCHED_OTHER, (pid, policy)
        assert os.sched_getaffinity(pid) == os.sched_getaffinity(0), pid
    a.close()
    b.step(1e-3)
    assert len(workers()) >= 2                  # b still uses them
    b.close()
    deadline = time.monotonic() + 5.0
    while workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert workers() == []


def test_instances_made_and_freed_leave_one_pair_of_workers(fmu_dir):
    """Instances of the FMU made, stepped and freed one after the other (each extracted to a
    folder of its own and deleted, as fmpy's simulate_fmu does): one pair of workers is left,
    not a pair per instance."""
    import gc
    for k in range(3):
        r = runner(fmu_dir, f"inst_cycle{k}")
        step_all([r], 5)
        r.close()
        del r
        gc.collect()
    time.sleep(0.5)
    assert len(workers()) <= 2, workers()


RIG = r"""
import json, os, sys
from pathlib import Path
sys.path[:0] = sys.argv[2:]
from fmu_src.host.master import FmuRunner
from test_fence_workers import workers
try:                               # a rig's master: nice -10 and real-time, where it may be
    os.nice(-10)
except OSError:                    # (not root: the workers' and helpers' figures hold as well)
    pass
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    fifo = True
except (AttributeError, OSError):
    fifo = False
pinned = os.cpu_count() > 1        # a rig's stepping thread pinned to a CPU of its own
if pinned:
    os.sched_setaffinity(0, {0})
r = FmuRunner(sys.argv[1], params={"real_time": True}, strings={"embedding": "background"})
for k in range(20):
    r.step(1e-3)

def sched(stat_path):
    stat = Path(stat_path).read_text().rsplit(")", 1)[1].split()
    tid = Path(stat_path).parent.name
    return {"nice": int(stat[16]), "policy": int(stat[38]),
            "cpus": sorted(os.sched_getaffinity(0 if tid == "thread-self" else int(tid)))}

import threading
helpers = {t.name: sched(f"/proc/self/task/{t.native_id}/stat") for t in threading.enumerate()
           if t.name == "embed-loader"}
for tid in os.listdir("/proc/self/task"):
    if Path(f"/proc/self/task/{tid}/comm").read_text().strip() == "embed-warm":
        helpers["embed-warm"] = sched(f"/proc/self/task/{tid}/stat")
print(json.dumps({"fifo": fifo, "pinned": pinned, "master": sched("/proc/thread-self/stat"),
                  # real time: started at initialization, from this thread's call
                  "workers": [sched(f"/proc/{pid}/stat") for pid in workers(r)],
                  "helpers": helpers}))
r.close()
"""


def test_helpers_of_a_real_time_master_run_below_it(fmu_dir):
    """A rig's stepping thread at nice -10 and SCHED_FIFO (where the test may set them: as
    root): the workers it starts run in the idle class (which its stepping thread, back from
    a wait, preempts at once: at nice 10 one kept the core for the rest of its slice, 3.7
    ms), not in its real-time class (whose seconds of compiling no normal thread could
    preempt) nor at nice 0 (-10 + 10, where they were spawned from the master's thread); the
    loader thread and the page-warming thread in the normal class at nice 0, not at the
    master's -10, where they shared its core with it as equals (preempting it for whole
    slices), nor idle (they share the process's locks with the stepping thread).  The
    stepping thread pinned to CPU 0: the workers and the helpers kept off it (an idle worker
    the scheduler picks on the stepping thread's CPU keeps it until the next tick, 4 ms; the
    page-warming thread took 0.1-0.4 ms of it at a time)."""
    here = str(Path(__file__).resolve().parent)
    res = subprocess.run([sys.executable, "-c", RIG, str(fmu_dir / "disk_fence.fmu"), here,
                          str(Path(here).parent)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(got["workers"]) == 2 and set(got["helpers"]) == {"embed-loader", "embed-warm"}, got
    for w in got["workers"]:
        assert w["policy"] == os.SCHED_IDLE, got
        if got["pinned"]:
            assert w["cpus"] and 0 not in w["cpus"], got
    for h in got["helpers"].values():
        assert h["policy"] == os.SCHED_OTHER and h["nice"] == 0, got
        if got["pinned"]:
            assert h["cpus"] and 0 not in h["cpus"], got


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or os.cpu_count() < 2,
                    reason="CPU affinity needs Linux and two CPUs")
def test_helpers_are_kept_off_the_cpu_the_stepping_thread_runs_on():
    """Unpinned, the stepping thread's CPU is the one it runs on (``stepping_cpus``): a
    helper started by ``run_below`` may use every other CPU and not that one; pinned to one
    CPU, that one; and a thread allowed nowhere else stays where it is (nothing raised)."""
    import threading
    from embed.base.helper_class import run_below, stepping_cpus
    here = stepping_cpus()
    assert len(here) == 1 and here <= os.sched_getaffinity(0)
    theirs = run_below(lambda: os.sched_getaffinity(0), away_from=here)
    assert theirs == os.sched_getaffinity(0) - here
    out = {}

    def pinned():
        os.sched_setaffinity(0, {1})
        cpus = stepping_cpus()
        out["cpus"] = cpus
        out["helper"] = run_below(lambda: os.sched_getaffinity(0), away_from=cpus)
        out["nowhere else"] = run_below(lambda: os.sched_getaffinity(0),
                                        away_from=set(range(os.cpu_count())))
    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert out["cpus"] == {1} and 1 not in out["helper"] and out["helper"], out
    assert out["nowhere else"] == {1}, out
