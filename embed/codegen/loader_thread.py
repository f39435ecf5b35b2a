"""The loader thread (issue 30, tails): object code placed, and work that needs it done, off
the stepping path (``load_later``, ``run_later``: ``embed.codegen.native``'s functions, which
it re-exports)."""

from __future__ import annotations

import ctypes
import sys
import threading

try:        # queue.SimpleQueue itself, without queue's import (0.5 ms of an FMU's start)
    from _queue import SimpleQueue
except ImportError:
    from queue import SimpleQueue

from ..base.helper_class import run_below
from .done import Done

_LOADER = []
# nonzero while the loader thread sets a Done (whose Event's lock a waiting thread takes):
# a gate that makes it stand still while a real-time step runs (fmu_src/runtime/loader/
# gil_gate.c) does not there
HOLD = ctypes.c_int(0)
# nonzero while the loader thread runs a job: the page-warming thread (fmu_src/runtime/loader/
# keep_warm.c) pauses meanwhile, not to preempt it while it holds the GIL (traced: 0.7 ms of
# a step's wait for it)
WORKING = ctypes.c_int(0)
# that gate's (pause, resume) for a thread in an FMI call waiting for a SharedLock, if any
GATE = []


class SharedLock:
    """A lock the stepping thread and the loader thread both take (``with`` only).  A thread
    that finds it held while the loader thread may be gated (``GATE``) leaves the gate's
    count while it waits: the loader goes on, and releases it."""

    __slots__ = ("_lock",)

    def __init__(self, lock):
        self._lock = lock

    def __enter__(self):
        if self._lock.acquire(False):
            return
        paused = GATE and GATE[0]()
        try:
            self._lock.acquire()
        finally:
            if paused:
                GATE[1]()

    def __exit__(self, *exc):
        self._lock.release()


_LOADER_LOCK = SharedLock(threading.Lock())    # not _LOCK: a load holds that while it runs


def start_loader(away_from=()):
    """The loader thread (``load_later``), started now: starting a thread in a step costs
    milliseconds.  Started through ``helper_class.run_below``, whose class, nice and affinity
    it takes: below a rig's stepping thread, off the CPUs ``away_from`` (a real-time run's
    stepping thread's) if this call starts it.  Returns its queue."""
    with _LOADER_LOCK:
        if not _LOADER:
            q = SimpleQueue()
            run_below(threading.Thread(target=_loader, args=(q,), name="embed-loader",
                                       daemon=True).start, away_from=away_from)
            _LOADER.append(q)
    return _LOADER[0]


# the switch interval while the loader thread has work (s): its Python (placing object code,
# preparing a fence's terms) holds the GIL, and a stepping thread that wants it back (after a
# pipe read, a compiled stage's ctypes call, or at its next doStep) waits up to the interval,
# 5 ms by default; at 0.1 ms the two take turns within a step instead (issue 30, tails).  It
# is set by the thread that posts the work, before the loader can take the GIL: a thread's
# wait for the GIL reads the interval when it starts waiting, so one set by the loader once
# it holds the GIL came too late for the stepping thread's next wait (traced: 0.55 ms waits,
# the loader's whole job).  The default comes back when the last job posted is done.
LOADER_SWITCH = 1e-4
_PENDING = [0, None, None]   # jobs posted and not done; the interval before; ours (read back)


def _post(job):
    held = getattr(_HELD, "jobs", None)
    if held is not None:
        held.append(job)
        return
    q = start_loader()
    with _LOADER_LOCK:
        if _PENDING[0] == 0:
            _PENDING[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_PENDING[1], LOADER_SWITCH))
            _PENDING[2] = sys.getswitchinterval()     # (in microseconds: not LOADER_SWITCH)
        _PENDING[0] += 1
        q.put(job)


def _loader(q):
    while True:
        fns, done = q.get()
        WORKING.value = 1
        try:
            result, exc = (fns() if callable(fns) else _load_all(fns)), None
        except BaseException as e:  # noqa: BLE001 - done.result() raises it
            result, exc = None, e
        WORKING.value = 0
        HOLD.value += 1             # (the Done's Event has a lock a waiting thread takes)
        try:
            if exc is None:
                done.set_result(result)
            else:
                done.set_exception(exc)
            with _LOADER_LOCK:
                _PENDING[0] -= 1
                if _PENDING[0] == 0 and sys.getswitchinterval() == _PENDING[2]:
                    sys.setswitchinterval(_PENDING[1])    # (unless set by someone else since)
        finally:
            HOLD.value -= 1


def load_later(fns):
    """Load ``fns`` (NativeFunctions made with ``load=False``) in the loader thread, one per
    process, in the order asked: a ``Done``, done when they are (its ``result()`` raises what
    a load raised).  The loads run in llvmlite's ctypes calls, which release the GIL: the
    stepping thread goes on meanwhile."""
    done = Done()
    _post((list(fns), done))
    return done


def run_later(fn):
    """fn() in the loader thread, after the loads asked before it: a ``Done`` of its result
    (work that needs what they load, done off the stepping path)."""
    done = Done()
    _post((fn, done))
    return done


_HELD = threading.local()


class _Held:
    """``held()``'s context (reentrant; one object, no generator: entered at every step)."""

    def __enter__(self):
        if getattr(_HELD, "jobs", None) is None:
            _HELD.jobs, _HELD.depth = [], 0
        _HELD.depth += 1

    def __exit__(self, *exc):
        _HELD.depth -= 1
        if _HELD.depth == 0:
            jobs, _HELD.jobs = _HELD.jobs, None
            for job in jobs:
                _post(job)


_HELD_CONTEXT = _Held()


def held():
    """The work this thread hands to the loader thread inside is handed on at the end (a
    real-time instance's doStep, ``fmu_src.runtime.fmi2``): the loader thread then wakes as
    the step returns, and takes the GIL between a rig's steps, never in one when the step
    drops it for a moment (a compiled call, a pipe read: traced, the loader thread then held
    it and was preempted by another process for 4 ms; issue 30, tails).  Nothing inside may
    wait for that work."""
    return _HELD_CONTEXT


def _load_all(fns):
    for f in fns:
        f.load()
