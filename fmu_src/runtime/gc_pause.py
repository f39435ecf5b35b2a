"""The cyclic collector during an FMU's start (issue 30): imported first by the FMU's entry
module, so it imports nothing of the engine."""

from __future__ import annotations

import gc
import itertools

# the instances freed since the last freeze (their variables' getters make cycles) would stay
# frozen for good: a full collection every COLLECT_EVERY-th instance of the process, never
# at the first (a full pass costs 0.05-0.15 s: half of a study's case when it ran at each)
COLLECT_EVERY = 16
_INSTANCES = itertools.count(1)   # fmi2Instantiate calls of this process


def collect_now_and_then():
    """At an fmi2Instantiate: every ``COLLECT_EVERY``-th, the frozen objects unfrozen and
    collected (the instances freed since, also those freed before step mode)."""
    if next(_INSTANCES) % COLLECT_EVERY == 0:
        gc.unfreeze()
        gc.collect()


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
