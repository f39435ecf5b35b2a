"""Never a wrong answer behind status 0 (issue 33), disk_fence's background workers: an offline
run is the same bits whatever the master's pace; a real-time one says when it went on without
an answer; a worker killed (SIGKILL) or stopped (SIGSTOP) is replaced and what it had is sent
again, or refused with a status the master sees.  Each case is a real FMU stepped by fmpy."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from fmu_src.master import FmuRunner
from test_fence_workers import workers

CURVE = "0.05*s**2*(1+0.01*sin(3*s))"
NEAR = {"q4_start": 24.0}     # the disk reaches the ramp's end (q4 = L) at t = 1.7438 s
K_END = 1744                  # the step in which it does
K_ANNOUNCE = K_END - 20       # the issue's case: the fence announced 20 ms before
STATE = ("q1", "q2", "q3", "q4", "u1", "u2", "u3", "u4", "mode", "event_count", "status",
         "geometry_version_active", "geometry_status", "embed_pending")


def runner(fmu_dir, name, embedding="background", **params):
    return FmuRunner(str(fmu_dir / "disk_fence.fmu"), params={**NEAR, **params},
                     strings={"embedding": embedding}, instance=name)


def announce(r, version, curve=CURVE):
    r.fmu.setString([r.vr("fence_curve")], [curve])
    r.set(fence_version=version)


def run_issue_case(fmu_dir, name, embedding="background", pace=0.0, n=1900, on_announce=None,
                   **params):
    """The issue's case to t = n ms: the fence announced 20 ms before the ramp's end."""
    r = runner(fmu_dir, name, embedding, **params)
    try:
        for k in range(n):
            if k == K_ANNOUNCE:
                announce(r, 1)
                if on_announce:
                    on_announce(r)
            r.step(1e-3)
            if pace:
                time.sleep(pace)
        return r.get(*STATE, "answers_late"), [m for _, m in r.messages]
    finally:
        r.close()


def test_offline_runs_are_the_same_bits_paced_or_not(fmu_dir):
    """Unpaced (as simulate_fmu, fmuCheck, OMSimulator step), paced at 1 kHz, and on the
    symbolic path: the disk meets the fence announced 20 ms before the ramp's end in all
    three, bit for bit between the two background runs.  (Unpaced, the disk used to fall
    into free flight: 26.708, -7.520, mode 1.)"""
    unpaced, _ = run_issue_case(fmu_dir, "det_unpaced")
    paced, _ = run_issue_case(fmu_dir, "det_paced", pace=1e-3)
    symbolic, _ = run_issue_case(fmu_dir, "det_symbolic", embedding="symbolic")
    assert unpaced["mode"] == 3 and unpaced["status"] == 0, unpaced
    assert unpaced["geometry_version_active"] == 1 and unpaced["embed_pending"] == 0
    assert unpaced == paced                       # every output, bit for bit
    assert unpaced["answers_late"] == 0
    for k in ("mode", "event_count", "status", "geometry_version_active"):
        assert unpaced[k] == symbolic[k], k
    for k in ("q1", "q2", "q3", "q4", "u1", "u2", "u3", "u4"):
        assert unpaced[k] == pytest.approx(symbolic[k], abs=1e-9), k


def fast_worker(r):
    """pid of the instance's fast worker (the one that relays to the other: --peer-out)."""
    for pid in workers(r):
        if b"--peer-out" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise AssertionError("no fast worker")


def cont(pids):
    """SIGCONT to the workers stopped that still exist (killed as hung, or with their
    instance)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def test_real_time_steps_on_and_says_it_did_not_wait(fmu_dir):
    """real_time = true: the fast worker stopped while the fence is announced, the master's
    steps go on without it, the disk flies off the ramp's end; `answers_late` and the log say
    that an offline run would have waited."""
    stopped = []

    def stop(r):
        stopped.append(fast_worker(r))
        os.kill(stopped[0], signal.SIGSTOP)
    try:
        o, log = run_issue_case(fmu_dir, "rt_late", on_announce=stop, real_time=True,
                                n=K_END + 30)
    finally:
        cont(stopped)
    assert o["mode"] == 1 and o["status"] == 0 and o["answers_late"] == 1, o
    assert o["embed_pending"] == 1
    said = [m for m in log if "not waited for" in m]
    assert len(said) == 1 and "fence version 1" in said[0], log


@pytest.mark.parametrize("real_time", [False, True])
def test_a_worker_killed_while_idle_serves_the_next_announcement(fmu_dir, real_time):
    """Both workers killed (SIGKILL) while nothing is outstanding; the fence announced next
    is still met (it used to stay pending for ever behind status 0)."""
    r = runner(fmu_dir, f"kill_idle{int(real_time)}", real_time=real_time)
    try:
        for _ in range(5):
            r.step(1e-3)
        before = workers(r)
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        announce(r, 1)
        deadline = time.monotonic() + 120
        r.step(1e-5)                # the announcement is read by a step
        while r.get("embed_pending")["embed_pending"] and time.monotonic() < deadline:
            r.step(1e-5)            # the disk barely moves while the workers start again
            time.sleep(1e-3)
        for _ in range(2000):
            r.step(1e-3)
        o = r.get(*STATE)
        assert o["mode"] == 3 and o["geometry_version_active"] == 1, o
        assert o["status"] == 0 and o["geometry_status"] == 0 and o["embed_pending"] == 0
        assert [m for _, m in r.messages if "started both workers again" in m], r.messages
        assert len(workers(r)) == 2 and not set(workers(r)) & set(before)
    finally:
        r.close()


def test_a_stopped_worker_is_replaced_by_its_deadline(fmu_dir):
    """The fast worker stopped (SIGSTOP) as the fence is announced: with worker_deadline =
    1 s the offline step waits, finds it silent, replaces both workers, sends the
    announcement again and meets the fence, the same bits as a run without the fault."""
    stopped = []

    def stop(r):
        stopped.append(fast_worker(r))
        os.kill(stopped[0], signal.SIGSTOP)
    try:
        o, log = run_issue_case(fmu_dir, "stop_fast", on_announce=stop, worker_deadline=1.0)
    finally:
        cont(stopped)
    ref, _ = run_issue_case(fmu_dir, "stop_ref")
    assert [m for m in log if "hung or stopped" in m and "started both workers again" in m], log
    assert o == ref, (o, ref)
    assert o["mode"] == 3 and o["status"] == 0 and o["embed_pending"] == 0


def test_a_request_no_worker_answers_is_refused_with_a_status(fmu_dir):
    """Every fast worker stopped as soon as it is up (a request that hangs each worker it
    reaches): after two replacements the announcement is dropped and refused,
    geometry_status 10, embed_pending 0, logged; the disk keeps the ramp's own behaviour."""
    r = runner(fmu_dir, "stop_every", worker_deadline=0.5)
    done, stopped = threading.Event(), set()

    def stop_each_idle_fast_worker():
        last = {}
        while not done.is_set():
            for pid in workers(r):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                cpu = int(stat[11]) + int(stat[12])
                if b"--peer-out" in cmd and pid not in stopped:
                    # up: asleep on its pipe, no CPU used for 0.3 s (its start is busy)
                    seen = last.setdefault(pid, [cpu, time.monotonic()])
                    if cpu != seen[0]:
                        last[pid] = [cpu, time.monotonic()]
                    elif stat[0] == "S" and time.monotonic() - seen[1] > 0.3:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.add(pid)
            time.sleep(0.02)
    watcher = threading.Thread(target=stop_each_idle_fast_worker, daemon=True)
    try:
        for _ in range(5):
            r.step(1e-3)
        watcher.start()
        while not stopped:
            time.sleep(0.05)
        announce(r, 1)
        r.step(1e-3)                 # offline: waits through both replacements
        o = r.get(*STATE)
        assert o["geometry_status"] == 10 and o["embed_pending"] == 0, o
        assert o["geometry_version_active"] == 0 and o["status"] == 0
        assert len(stopped) >= 2
        said = [m for _, m in r.messages if "version 1 rejected" in m]
        assert said and "did not answer" in said[0] and "dropped" in said[0], r.messages
    finally:
        done.set()
        watcher.join()
        cont(stopped)
        r.close()
