"""A helper thread's scheduling class (issue 30, tails): the threads the engine starts from a
rig's stepping thread (the loader thread; the thread that spawns the background workers)
take its class and nice (per thread on Linux), and a rig's stepping thread may be real-time
(SCHED_FIFO) or at nice -10.  At its class and nice a helper shares the stepping thread's
core with it as an equal; ``normal_class`` puts the calling thread in the normal class at
nice 0 or more, below the stepping thread (fmu_src/runtime/loader/keep_warm.c does the same
for its own thread).  ``idle_class`` puts it lower still, for a real-time run's workers."""

from __future__ import annotations

import os

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
