"""A helper thread's scheduling class (issue 30, tails): the threads the engine starts from a
rig's stepping thread (the loader thread; the thread that spawns the background workers)
take its class and nice (per thread on Linux), and a rig's stepping thread may be real-time
(SCHED_FIFO) or at nice -10.  At its class and nice a helper shares the stepping thread's
core with it as an equal; ``normal_class`` puts the calling thread in the normal class at
nice 0 or more, below the stepping thread (fmu_src/runtime/loader/keep_warm.c does the same
for its own thread)."""

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
