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

from fmu_src.host.master import FmuRunner
from test_fence_workers import started_workers, workers

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


def fast_worker(r, wait=10.0):
    """pid of the instance's fast worker (the one that relays to the other: --peer-out),
    waited for up to ``wait`` s: an offline run spawns its workers from a thread at its
    second doStep, and an unpaced run can reach its announcement first."""
    end = time.monotonic() + wait
    while True:
        for pid in workers(r):
            if b"--peer-out" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        if time.monotonic() > end:
            raise AssertionError("no fast worker")
        time.sleep(0.01)


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
        before = started_workers(r)
        assert len(before) == 2
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
    """Every fast worker killed (SIGKILL) as soon as it appears, from the announcement on (a
    request that kills each worker it reaches): after two replacements the announcement is
    dropped and refused, geometry_status 10, embed_pending 0, logged; it never stays pending
    behind status 0."""
    r = runner(fmu_dir, "kill_every")
    done, killed = threading.Event(), set()

    def kill_each_fast_worker():
        while not done.is_set():
            for pid in workers(r):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"--peer-out" in cmd and pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.01)
    watcher = threading.Thread(target=kill_each_fast_worker, daemon=True)
    try:
        for _ in range(5):
            r.step(1e-3)
        watcher.start()
        while not killed:
            time.sleep(0.01)
        announce(r, 1)
        r.step(1e-3)                 # offline: waits through both replacements
        o = r.get(*STATE)
        assert o["geometry_status"] == 10 and o["embed_pending"] == 0, o
        assert o["geometry_version_active"] == 0 and o["status"] == 0
        assert len(killed) >= 2
        said = [m for _, m in r.messages if "version 1 rejected" in m]
        assert said and "did not answer" in said[0] and "dropped" in said[0], r.messages
    finally:
        done.set()
        watcher.join()
        r.close()


# ------------------------------------------------------------ starts the model does not allow
def refused_at_initialization(fmu, params, name):
    """fmi2ExitInitializationMode answers fmi2Error for these parameters (set, or refused
    when set); returns the log."""
    from fmpy.fmi1 import FMICallException
    r = FmuRunner(fmu, initialize=False, instance=name)
    try:
        r.fmu.setupExperiment(startTime=0.0)
        r.fmu.enterInitializationMode()
        try:
            r.set(**params)
        except FMICallException as exc:           # a declared range: refused when set
            assert exc.status == 3, exc
        with pytest.raises(FMICallException) as exc:
            r.fmu.exitInitializationMode()
        assert exc.value.status == 3              # fmi2Error
        return [m for _, m in r.messages]
    finally:
        r.fmu.freeInstance()


@pytest.mark.parametrize("name, params, said", [
    ("pendulum_belt", {"q2_start": -0.2}, "guard strike = -0.719759"),   # 0.72 m inside
    ("pendulum_belt", {"contact_law": 0.5}, "contact_law must be 0"),
    ("pendulum_belt", {"contact_law": 2.0}, "contact_law = 2.0 lies outside [0.0, 1.0]"),
    ("pendulum_belt", {"contact_law": -1.0}, "contact_law = -1.0 must not be negative"),
    ("disk_ramp", {"phi": 2.0}, "output N = -4.0824"),
    ("disk_fence", {"phi": 2.0}, "guard release = -4.0824"),
    ("disk_fence", {"q4_start": 26.0}, "guard ramp_end = -0.7"),
    ("top", {"Jzz": 200.0}, "Jzz must not exceed Jxx + Jyy"),
])
def test_a_start_the_model_does_not_allow_is_refused(fmu_dir, name, params, said):
    """The issue's starts: each refused at initialization with fmi2Error and a message that
    names the value.  The values in the messages are the physics' own: the tip 1 + 1 m of
    rods at -20 and -11.5 deg lies 1.2 - cos(20 deg) - cos(11.46 deg) = -0.7198 m below the
    belt; the ramp at phi = 2 rad pushes with N = m g cos(phi) = -4.0824 N."""
    import math
    log = refused_at_initialization(str(fmu_dir / f"{name}.fmu"), params, f"{name}_bad")
    assert [m for m in log if said in m], log
    if "strike" in said:
        assert 1.2 - math.cos(math.pi / 9) - math.cos(0.2) == pytest.approx(-0.719759, abs=1e-6)
    if "N = " in said:
        assert 9.81 * math.cos(2.0) == pytest.approx(-4.0824, abs=1e-4)


def test_declared_ranges_are_in_the_model_description(fmu_dir):
    from fmpy import read_model_description
    md = {v.name: v for v in read_model_description(
        str(fmu_dir / "pendulum_belt.fmu")).modelVariables}
    assert (md["contact_law"].min, md["contact_law"].max) == ("0.0", "1.0")
    assert (md["e1"].min, md["e1"].max) == ("0.0", "1.0")
    assert md["m1"].min == "0.0" and md["h_max"].min == "1e-09"


# --------------------------------------------------------- a new fence while on an old one
def test_a_fence_announced_while_the_disk_rolls_on_one_never_moves_it(fmu_dir):
    """The disk on the arc fence of version 1; version 2 announced (an arc, then a curve):
    refused with geometry_status 9 and a log, the disk's path continuous (it used to jump
    208 mm in one step, energy -15.82 -> -15.55 J, only event_count changing)."""
    r = runner(fmu_dir, "fence_on_fence", embedding="symbolic")
    try:
        r.set(fence_radius=10.0, fence_version=1)
        for _ in range(2000):
            r.step(1e-3)
        o = r.get(*STATE, "kinetic_energy", "potential_energy")
        assert o["mode"] == 3 and o["geometry_version_active"] == 1, o
        for version, curve in ((2, ""), (3, "0.045*s**2")):
            r.fmu.setString([r.vr("fence_curve")], [curve])
            r.set(fence_radius=11.0, fence_version=version)
            r.step(1e-3)
            n = r.get(*STATE, "kinetic_energy", "potential_energy")
            moved = ((n["q1"] - o["q1"]) ** 2 + (n["q2"] - o["q2"]) ** 2) ** 0.5
            speed = (o["u1"] ** 2 + o["u2"] ** 2) ** 0.5
            assert moved <= 1.01 * speed * 1e-3, (moved, speed)      # rolled, not jumped
            e0, e1 = (x["kinetic_energy"] + x["potential_energy"] for x in (o, n))
            assert abs(e1 - e0) <= 1e-9
            assert n["mode"] == 3 and n["geometry_version_active"] == 1
            assert n["geometry_status"] == 9 and n["status"] == 0 and n["embed_pending"] == 0
            assert n["event_count"] == o["event_count"]
            o = n
        said = [m for _, m in r.messages if "rejected" in m and "rolls on the fence" in m]
        assert len(said) == 2, r.messages
    finally:
        r.close()


# ------------------------------------------------------------------- serialized states
def test_edited_serialized_states_are_refused(fmu_dir):
    """300 random bit flips of a serialized disk_ramp state (F_ext set): none accepted (the
    checksum); one with its time edited and its checksum made again is refused by the time
    check; each refusal is fmi2Error, logged with its reason, and the run goes on unchanged."""
    import hashlib
    import json
    import random

    from fmpy.fmi1 import FMICallException
    a = FmuRunner(str(fmu_dir / "disk_ramp.fmu"), instance="flips")
    b = FmuRunner(str(fmu_dir / "disk_ramp.fmu"), instance="twin")
    try:
        for r in (a, b):
            r.set(F_ext=2.0)
            r.step(0.25)
        s = a.fmu.getFMUstate()
        blob = bytes(a.fmu.serializeFMUstate(s))
        a.fmu.freeFMUstate(s)
        rng = random.Random(33)
        accepted = 0
        for _ in range(300):
            bad = bytearray(blob)
            i = rng.randrange(len(bad))
            bad[i] ^= 1 << rng.randrange(8)
            try:
                s = a.fmu.deSerializeFMUstate(bytes(bad))
            except FMICallException as exc:
                assert exc.status == 3
                continue
            try:
                a.fmu.setFMUstate(s)
                accepted += 1
            except FMICallException as exc:
                assert exc.status == 3
            a.fmu.freeFMUstate(s)
        assert accepted == 0
        head, _, text = blob.partition(b"\n")
        state = json.loads(text)
        for key, value in (("t_comm", -0.25), ("t_comm", 0.5)):
            edited = json.loads(text)
            edited[key] = value
            t2 = json.dumps(edited).encode()
            forged = (b"embed-fmu-state sha256 " + hashlib.sha256(t2).hexdigest().encode()
                      + b"\n" + t2)
            s = a.fmu.deSerializeFMUstate(forged)
            with pytest.raises(FMICallException):
                a.fmu.setFMUstate(s)
            a.fmu.freeFMUstate(s)
        log = [m for _, m in a.messages]
        assert [m for m in log if "not at its communication point" in m], log
        assert [m for m in log if "lies before its start time" in m], log
        assert state["t_comm"] == pytest.approx(0.25)
        for _ in range(50):                          # the instance never changed
            a.step(1e-2)
            b.step(1e-2)
        assert a.outputs() == b.outputs()
    finally:
        a.close()
        b.close()
