"""The loader thread (issue 30, tails): object code placed, and work that needs it done, off
the stepping path (``load_later``, ``run_later``: ``embed.codegen.native``'s functions, which
it re-exports)."""

from __future__ import annotations

import sys
import threading

try:        # queue.SimpleQueue itself, without queue's import (0.5 ms of an FMU's start)
    from _queue import SimpleQueue
except ImportError:
    from queue import SimpleQueue

from ..base.helper_class import run_below
from .done import Done

_LOADER = []
_LOADER_LOCK = threading.Lock()      # not _LOCK: a load holds that while it runs


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
# pipe read or any call that dropped it) waits up to the interval, 5 ms by default; at 0.1 ms
# the two take turns within a step instead (issue 30, tails)
LOADER_SWITCH = 1e-4


def _loader(q):
    while True:
        fns, done = q.get()
        before = sys.getswitchinterval()
        sys.setswitchinterval(min(before, LOADER_SWITCH))
        ours = sys.getswitchinterval()
        try:
            done.set_result(fns() if callable(fns) else _load_all(fns))
        except BaseException as exc:  # noqa: BLE001 - done.result() raises it
            done.set_exception(exc)
        finally:
            if sys.getswitchinterval() == ours:     # (unless someone else set it meanwhile)
                sys.setswitchinterval(before)


def load_later(fns):
    """Load ``fns`` (NativeFunctions made with ``load=False``) in the loader thread, one per
    process, in the order asked: a ``Done``, done when they are (its ``result()`` raises what
    a load raised).  The loads run in llvmlite's ctypes calls, which release the GIL: the
    stepping thread goes on meanwhile."""
    done = Done()
    start_loader().put((list(fns), done))
    return done


def run_later(fn):
    """fn() in the loader thread, after the loads asked before it: a ``Done`` of its result
    (work that needs what they load, done off the stepping path)."""
    done = Done()
    start_loader().put((fn, done))
    return done


def _load_all(fns):
    for f in fns:
        f.load()
