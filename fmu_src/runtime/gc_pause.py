"""The cyclic collector during an FMU's start (issue 30): imported first by the FMU's entry
module, so it imports nothing of the engine."""

from __future__ import annotations

import gc


class gc_paused:
    """The cyclic collector off for a block, what the block made then frozen (``gc.freeze``)
    and the collector back as it was (a master that turned it off keeps it off).

    An FMU's start allocates the engine's modules, the model and its compiled modes, kept
    for the process: the collections their allocations set off (about 17, traversing the
    master's objects too: numpy's, fmpy's) were 10-30 ms of disk_ramp's 0.1-0.2 s from
    fmi2Instantiate, and merely pausing moved that into one collection of everything after
    the block.  Frozen, they are not traversed: ``ScenarioSlave`` freezes the process's
    objects at the end of initialization anyway, and unfreezes and collects every
    ``COLLECT_EVERY``-th instance (the cycles a start left behind are collected then)."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        gc.freeze()
        if self.was:
            gc.enable()
