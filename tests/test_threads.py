"""Instances of one scenario stepped from threads of their own (issue 33): each gives the bits
of its run alone, and each FMU instance's log messages reach its own logger.

They share what the process compiled (``embed.modes.library``: compiled modes with scratch
buffers, written at every call) and one pair of background workers
(``embed.background.client``: its pipes and queues); before, two disk_fence instances
stepped from two threads failed with ``internal error (IndexError) ... pop from an empty
deque`` and every later doStep with it, and two pendulum_chain simulators on the
compiled-terms path ended 0.8 and 15 rad away from their runs alone.  The switch interval is
cut to 1 us while the threads run, so that they interleave within a step, not only between
steps."""

import sys
import threading

import numpy as np
from fmpy.fmi1 import FMICallException

import scenarios
from embed.modes.library import ModeLibrary
from fmu_src.host.master import FmuRunner


def in_threads(target, cases):
    """``target(key, *args, out)`` for every (key, args) of ``cases`` at once, one thread each,
    switching threads every microsecond; returns out (key -> result)."""
    out = {}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target, args=(key, *args, out)) for key, args in cases]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not any(t.is_alive() for t in threads), "a thread did not finish"
    finally:
        sys.setswitchinterval(interval)
    return out


# ------------------------------------------------------------------ the engine
def chain_run(key, sc, params, out, n=600):
    sim = sc.simulator(params, embedding="numeric")
    rows = []
    for k in range(n):
        sim.advance((k + 1) * 1e-3)
        rows.append(np.concatenate([sim.state.x, sim.state.mon]))
    out[key] = (np.array(rows), sim)


def test_simulators_sharing_compiled_modes_step_from_two_threads():
    """Two pendulum_chain simulators (different starts and gravity) on the compiled-terms
    path, whose mode (``TermsProgramMode``) writes its argument buffer at every call: the
    same compiled mode object serves both, and each thread's run is its run alone."""
    sc = scenarios.load("pendulum_chain").build()
    cases = [("a", (sc, {"q_start": 0.6})), ("b", (sc, {"q_start": 0.3, "g": 9.0}))]
    alone = {}
    for key, args in cases:
        chain_run(key, *args, alone)
    both = in_threads(chain_run, cases)
    for key in "ab":
        assert np.array_equal(both[key][0], alone[key][0]), key
    assert not np.array_equal(alone["a"][0], alone["b"][0])      # two different runs
    sa, sb = both["a"][1], both["b"][1]
    assert sa.library is sb.library                # shared, not copied per instance
    assert sa.state.compiled_mode is sb.state.compiled_mode
    assert sa.library.lock is ModeLibrary.lock_of(sc.automaton)


def test_a_mode_installed_is_kept():
    """Read-only after install: a second compile of a mode (another simulator, a late worker
    answer) does not replace the one simulators run already."""
    lib = ModeLibrary()
    first, second = object(), object()
    assert lib.install("k", first) is first
    assert lib.install("k", second) is first and lib.mode("k") is first


# ------------------------------------------------------------------ the FMU
CURVE = "0.05*s**2*(1+0.01*sin(3*s))"
# each instance announces three fences, the last one the same for both (one fence number:
# one compiled fence mode, JetMode, shared by both), and refuses one input of its own
ANNOUNCE = {300: "0.06*s**2", 900: "0.05*s**2*(1+0.02*cos(2*s))", 1500: CURVE}
START = {"a": {"q4_start": 24.0}, "b": {"q4_start": 23.9}}
BAD = {"a": ("fence_radius", 500), "b": ("fence_length", 700)}
STATE = ("q1", "q2", "q3", "q4", "u1", "u2", "u3", "u4", "mode", "event_count", "status",
         "geometry_version_active", "geometry_status", "embed_pending")


def fence_run(key, fmu, name, out, n=2100):
    r = FmuRunner(fmu, params=START[key], strings={"embedding": "background"}, instance=name)
    statuses = []
    bad, k_bad = BAD[key]
    try:
        for k in range(n):
            if k in ANNOUNCE:
                r.fmu.setString([r.vr("fence_curve")], [ANNOUNCE[k]])
                r.set(fence_version=sorted(ANNOUNCE).index(k) + 1)
            if k == k_bad:
                try:
                    r.set(**{bad: float("nan")})
                    statuses.append("accepted")
                except FMICallException as exc:
                    statuses.append(-exc.status)
            statuses.append(r.step(1e-3))
        out[key] = (r.get(*STATE), statuses, [m for _, m in r.messages])
    finally:
        r.close()


def test_two_disk_fence_instances_stepped_from_two_threads(fmu_dir):
    """Each instance announces its fences and meets the last one (mode 3) with the bits of
    its run alone; the refused input is fmi2Error and logged to its own instance only."""
    fmu = str(fmu_dir / "disk_fence.fmu")
    alone = {}
    for key in "ab":
        fence_run(key, fmu, f"alone_{key}", alone)
    both = in_threads(fence_run, [(key, (fmu, f"thread_{key}")) for key in "ab"])
    for key in "ab":
        state, statuses, messages = both[key]
        assert (state, statuses, messages) == alone[key], key
        assert state["mode"] == 3 and state["status"] == 0, state
        assert state["geometry_version_active"] == 3 and state["embed_pending"] == 0
        assert statuses.count(-3) == 1 and set(statuses) == {0, -3}
        own, other = BAD[key][0], BAD["b" if key == "a" else "a"][0]
        assert len(messages) == 1 and own in messages[0] and "not finite" in messages[0]
        assert not any(other in m or "internal error" in m for m in messages)
    assert both["a"][0]["q4"] != both["b"][0]["q4"]          # two different runs
