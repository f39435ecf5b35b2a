"""A helper thread's scheduling class and CPUs (issue 30, tails): the threads the engine starts
from a rig's stepping thread (the loader thread, the page-warming thread, the thread that
spawns the background workers) take its class, nice and affinity (per thread on Linux), and
a rig's stepping thread may be real-time (SCHED_FIFO) or at nice -10.  At its class and nice
a helper shares the stepping thread's core with it as an equal; ``normal_class`` puts the
calling thread in the normal class at nice 0 or more, below the stepping thread
(fmu_src/runtime/loader/keep_warm.c does the same for its own thread).  ``idle_class`` puts
it lower still, for a real-time run's workers, and ``elsewhere`` keeps a real-time run's
helpers off the stepping thread's CPUs (``stepping_cpus``)."""

from __future__ import annotations

import os
import threading

_NORMAL = {getattr(os, k) for k in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE") if hasattr(os, k)}


def normal_class() -> None:
    """The calling thread in the normal scheduling class at nice 0 or more (lowering a thread
    needs no privilege); where that cannot be done (not Linux), as it is."""
    try:
        if os.sched_getscheduler(0) not in _NORMAL:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        if os.getpriority(os.PRIO_PROCESS, 0) < 0:      # (this thread's, on Linux)
            os.setpriority(os.PRIO_PROCESS, 0, 0)
    except (AttributeError, OSError):
        pass


def idle_class() -> None:
    """The calling thread in the idle scheduling class (SCHED_IDLE), where there is one; else
    ``normal_class``.  A normal thread that wakes preempts an idle one at once, where a
    running normal thread, even at nice 10, keeps its core for the rest of its slice: up to a
    tick (4 ms at HZ=250) before a stepping thread back from a wait (the GIL, a pipe) runs
    again (docs/design.md, "Who takes the stepping thread's core").  Only for threads that
    share no lock with the stepping thread: an idle thread preempted while it holds one makes
    the stepping thread wait as long as a core is busy (keep_warm.c's mmap_lock)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))    # (nice: unused there)
    except (AttributeError, OSError):
        normal_class()


def stepping_cpus() -> frozenset:
    """The CPUs of the calling thread, taken to be a rig's stepping thread: the one a master
    pinned it to, else the one it runs on now (/proc/thread-self/stat, field 39; a thread
    allowed on a few CPUs only may be in a container's cpuset, not pinned); empty where
    neither can be read."""
    try:
        mine = frozenset(os.sched_getaffinity(0))
        if len(mine) == 1:
            return mine
        with open("/proc/thread-self/stat") as f:
            return frozenset({int(f.read().rsplit(")", 1)[1].split()[36])})
    except (AttributeError, OSError, ValueError, IndexError):
        return frozenset()


def elsewhere(cpus) -> None:
    """The calling thread allowed on every CPU of the machine but ``cpus`` (the kernel keeps
    it within the process's cpuset); as it is where none would be left.  An idle-class
    thread on the stepping thread's CPU runs until the next tick once the scheduler picks
    it, the stepping thread waiting on the run queue meanwhile: 4 ms at HZ=250, spinning
    or not (docs/design.md, "Who takes the stepping thread's core")."""
    others = set(range(os.cpu_count() or 0)) - set(cpus)
    if cpus and others:
        try:
            os.sched_setaffinity(0, others)
        except (AttributeError, OSError):
            pass


def run_below(fn, idle=False, away_from=()):
    """fn() in a thread of its own, waited for, in the normal scheduling class at nice 0 or
    more (``normal_class``) or in the idle class (``idle``), kept off the CPUs ``away_from``
    (``elsewhere``); returns what it returns.  What fn starts takes that thread's class, nice
    and affinity: the background workers (processes) and the page-warming thread
    (keep_warm.c), which started from a rig's stepping thread ran in its real-time class or
    at its nice, on its CPU.  At nice 10 a worker that took the stepping thread's core while
    it waited for the GIL kept it for the rest of its slice (3.7 ms, traced); in the idle
    class it gives it back when the stepping thread wakes, but one the scheduler picks while
    the stepping thread runs keeps the core until the next tick; the page-warming thread,
    normal, took 0.1-0.4 ms of it at a time, 0.7 s in a 5 s run: hence ``away_from``."""
    out = []

    def run():
        (idle_class if idle else normal_class)()
        elsewhere(away_from)
        try:
            out.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            out.append((False, exc))
    t = threading.Thread(target=run, name="embed-below", daemon=True)
    t.start()
    t.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value
