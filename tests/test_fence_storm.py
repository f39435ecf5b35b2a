"""Fences announced in quick succession to disk_fence.fmu, stepped by fmpy at a paced 1 kHz
(issue 10, "a step that never returns", "two instances share one worker").

Each run is a subprocess (tests/fence_storm.py) with a watchdog: a step that never returns
makes the test fail, not hang.  The step budget is a hang and relay-cost guard on a shared
machine, not a benchmark: a step used to cost 76-296 ms while a large fence was relayed
to a busy worker, and to block for good when both workers were writing too."""

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.disk_fence.profile import GEOMETRY_ON_FENCE, FenceProfile
from scenarios.disk_fence.symbolic import SIGMA

HERE = Path(__file__).resolve().parent
STEP_BUDGET = float(os.environ.get("FENCE_STEP_BUDGET", "0.05"))       # s, one doStep
BLOCK_BUDGET = 0.01       # s a step may sleep (fence_storm.py counts the steps asleep longer)
BLOCK_LIMIT = float(os.environ.get("FENCE_BLOCK_LIMIT", "0.1"))        # s, asleep, any step
BLOCKED_STEPS = int(os.environ.get("FENCE_BLOCKED_STEPS", "3"))        # steps over BLOCK_BUDGET
HANG_GUARD = float(os.environ.get("FENCE_HANG_GUARD", "1.0"))          # s, wall, one doStep
SOAK_SECONDS = float(os.environ.get("FENCE_SOAK_SECONDS", "60"))


def storm(fmu, timeout, **opts):
    """Run tests/fence_storm.py; fail (killing it and its workers) if it outlives ``timeout``."""
    # the checks of a 13-factor fence take about 0.1 s; on a loaded shared machine (the
    # workers run at nice 10) they took over the default 2 s limit: this test is not about it
    env = {**os.environ, "EMBED_CHECK_TIME_LIMIT": "20"}
    proc = subprocess.Popen([sys.executable, str(HERE / "fence_storm.py"), fmu, json.dumps(opts)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)      # the master and the workers it started
        proc.communicate()
        pytest.fail(f"no result within {timeout} s: a step never returned ({opts})")
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def within_budget(d):
    """The step's own time (its CPU time and the time it slept; not the time it waited for a
    core, nor the time the host held the virtual core: the machine is shared) within
    STEP_BUDGET; asleep (a blocking pipe write sleeps) at most BLOCK_BUDGET but in a few steps
    of a run (a shared VM stalls a process in the kernel now and then: one step asleep 20 ms
    in a 60 s soak was seen), and never beyond BLOCK_LIMIT; the wall time of every step
    within HANG_GUARD.  A step counts as asleep only if its thread blocked (a voluntary
    context switch): CI once counted 14 steps of 10-100 ms off their core in one soak, without
    telling which.  The figures name the step in which the cyclic collector ran longest
    (``max_gc``, ``gc_at``, ``gc_what``: generation, objects freed): full passes over the
    fences' tapes once took 41-61 ms of a step late in the soak (``functions.Tape``)."""
    figures = json.dumps({k: d[k] for k in (
        "max_step", "at", "max_own", "own_at", "max_cpu", "cpu_at", "max_blocked", "blocked_at",
        "steps_blocked_10ms", "max_stalled", "stalled_at", "steps_stalled_10ms", "max_gc", "gc_at",
        "gc_what", "schedstat")})
    assert d["max_step"] <= HANG_GUARD, figures
    if d["schedstat"]:
        assert d["max_own"] <= STEP_BUDGET and d["max_blocked"] <= BLOCK_LIMIT, figures
        assert d["steps_blocked_10ms"] <= BLOCKED_STEPS, figures
    else:
        assert d["max_step"] <= STEP_BUDGET, figures


def on_its_own_fence(d):
    """The disk centre where the instance's own last fence puts it: P + s t + h(s) n + r N(s)
    at s = q4 - L (scenarios/disk_fence/profile.py's conventions), with the FMU's default L and r."""
    o, phi = d["outputs"], d["params"].get("phi", -math.radians(5.0))
    L, r = 25.3, 0.5
    s = o["q4"] - L
    h, h1 = (float(e.subs(SIGMA, s)) for e in FenceProfile.from_text(d["text"]).derivatives()[:2])
    tx, ty, nx, ny = math.cos(phi), math.sin(phi), -math.sin(phi), math.cos(phi)
    w = math.hypot(1.0, h1)
    x = L * tx + s * tx + h * nx + r * (nx - h1 * tx) / w
    y = L * ty + s * ty + h * ny + r * (ny - h1 * ty) / w
    return s, math.hypot(o["q1"] - x, o["q2"] - y)


def test_two_large_fences_20_ms_apart_never_block_a_step(fmu_dir):
    """Products of ten and eleven sine factors, announced 20 ms apart: this deadlocked the
    master and both workers (each writing into a full pipe of the other) in 3 of 3 runs."""
    res = storm(str(fmu_dir / "disk_fence.fmu"), 120, instances=1, duration=4.0, every=0.02,
                first=10, last=14, start=0.3, quiet=1.0, count=2)
    d = res[0]
    within_budget(d)
    o = d["outputs"]
    assert o["status"] == 0 and o["geometry_status"] == 0, d
    assert o["geometry_version_active"] == 2 and o["embed_pending"] == 0, d
    assert not d["warnings"], d["warnings"]


def ends_on_the_fence_it_met(d):
    """The FMU's answer for whichever case occurred (whether the last announcement was
    answered before the disk reached the ramp's end depends on the machine's pace: the
    workers run at nice 10): the disk rolls on the fence that was active when it entered
    mode 3 (``entered``), to 1e-7.  If that is the last fence announced, it is the one in
    use, with no rejection, no late answer and no warning.  If it is an older one (the last
    answers came too late), every later announcement was rejected with GEOMETRY_ON_FENCE
    (9), the version in use is still the one entered, and, when the announcements had all
    been made before the disk met the fence, the FMU counted and logged the late answer
    (answers_late 1).  Returns the distance of the disk centre to that fence."""
    o, e = d["outputs"], d["entered"]
    assert e is not None and e["version"] >= 1 and e["text"], (d["entered"], o)
    assert o["status"] == 0 and o["embed_pending"] == 0, (o, d["settle"])
    assert o["mode"] == 3 and o["constraint_residual"] <= 1e-9, o
    assert o["geometry_version_active"] == e["version"], (o, e["version"])
    if e["version"] == d["announced"]:
        assert o["geometry_status"] == 0 and o["answers_late"] == 0, o
        assert not d["warnings"], d["warnings"]
    else:
        assert o["geometry_status"] == GEOMETRY_ON_FENCE, o
        rejected = [m for m in d["warnings"] if "rejected" in m]
        assert rejected and all(f"keeping version {e['version']}" in m
                                and "rolls on the fence" in m for m in rejected), d["warnings"]
        late = [m for m in d["warnings"] if "real time: the disk left" in m]
        assert len(rejected) + len(late) == len(d["warnings"]), d["warnings"]
        if d["last_at"] < e["t"]:
            assert o["answers_late"] == 1 and len(late) == 1, (o, d["warnings"])
    s, miss = on_its_own_fence(dict(d, text=e["text"]))
    assert s > 0.01 and miss <= 1e-7, (s, miss)
    return miss


def test_soak_two_instances_announcing_fences_every_few_ms(fmu_dir):
    """Two instances in one process, each announcing a fence of its own, 10 to 13 sine factors (the parser allows 256 syntax nodes),
    every 10 ms at a paced 1 kHz for FENCE_SOAK_SECONDS (60 by default): no step over the
    budget, no deadlock, and each ends on the fence it met (``ends_on_the_fence_it_met``: its
    last one unless the machine's pace made the last answers late; a 1e-7 match of the disk
    centre to where that fence puts it, the other instance's fence being 1e-6 away)."""
    duration = max(SOAK_SECONDS, 8.0)
    res = storm(str(fmu_dir / "disk_fence.fmu"), duration * 3 + 120, instances=2,
                duration=duration, every=0.01, first=10, last=13, start=0.5, quiet=4.0,
                near_fence=True)
    for d in res:
        within_budget(d)
        assert d["n"] > 100
        ends_on_the_fence_it_met(d)
    other = dict(res[0], text=res[1]["entered"]["text"])     # instance 0 against 1's fence
    assert on_its_own_fence(other)[1] > 1e-6
