"""The loader thread (issue 30, tails): object code placed, and work that needs it done, off
the stepping path (``load_later``, ``run_later``: ``embed.codegen.native``'s functions, which
it re-exports)."""

from __future__ import annotations

import queue
import sys
import threading

from .done import Done

_LOADER = []
_LOADER_LOCK = threading.Lock()      # not _LOCK: a load holds that while it runs


def start_loader():
    """The loader thread (``load_later``), started now: starting a thread in a step costs
    milliseconds.  Returns its queue."""
    with _LOADER_LOCK:
        if not _LOADER:
            q = queue.SimpleQueue()
            threading.Thread(target=_loader, args=(q,), name="embed-loader",
                             daemon=True).start()
            _LOADER.append(q)
    return _LOADER[0]


# the switch interval while the loader thread has work (s): its Python (placing object code,
# preparing a fence's terms) holds the GIL, and a stepping thread that wants it back (after a
# pipe read or any call that dropped it) waits up to the interval, 5 ms by default; at 0.1 ms
# the two take turns within a step instead (issue 30, tails)
LOADER_SWITCH = 1e-4


# The loader's work gives way to the doSteps of the process (issue 30, tails): its Python (an
# ``elf_load`` placement of a fence's function is 0.6-1.2 ms of it) and a step's took turns at
# the switch interval, and a step that found it at work took its own CPU time and the
# loader's: 1.0-2.0 ms of wall time for a 0.2-0.6 ms step at load 1
# (benchmarks/hil_step_probe.py, "other threads").  A doStep running (``step_begins`` ..
# ``step_ends``, counted across the process's instances), the loader waits at its next
# ``pause`` (between units of work, and every few relocations of a placement) until the step
# ends, for at most GATE_MAX s at a time, or until a thread waits for its work
# (``waiting``: an offline step waiting for an answer, a thread wanting a function placed).
GATE_MAX = 2e-3
_GATE = threading.Condition(threading.Lock())
_BUSY = [0, 0]          # doSteps running, threads waiting for the loader's work
_THREAD = []            # the loader thread


def step_begins():
    """A doStep begins (the FMU's stepping thread): whether it was counted (the loader
    thread runs in this process), to be passed to ``step_ends``."""
    if not _THREAD:
        return False
    with _GATE:
        _BUSY[0] += 1
    return True


def step_ends(counted):
    """The doStep ``step_begins`` counted ends: the loader goes on."""
    if counted:
        with _GATE:
            _BUSY[0] -= 1
            _GATE.notify_all()


def _not_loader():
    return not (_THREAD and threading.current_thread() is _THREAD[0])


class _Waiting:
    """Context: the calling thread waits for the loader's work (``Done.wait``, a lock the
    loader may hold): the loader goes on whether a doStep runs or not (it may be the
    waiting one).  Nothing in the loader thread itself (which is the loader at the exit
    where it was at the entry: the thread appends itself before any work)."""

    __slots__ = ()

    def __enter__(self):
        if _not_loader():
            with _GATE:
                _BUSY[1] += 1
                _GATE.notify_all()

    def __exit__(self, *exc):
        if _not_loader():
            with _GATE:
                _BUSY[1] -= 1


WAITING = _Waiting()


def waiting():
    """``WAITING`` (a context, stateless: any thread may enter it at any time)."""
    return WAITING


def pause():
    """In the loader thread, while a doStep runs and no one waits for the loader: wait for
    the step's end (at most GATE_MAX s).  Anywhere else, or otherwise: nothing."""
    if _BUSY[0] and not _BUSY[1] and _THREAD and threading.current_thread() is _THREAD[0]:
        with _GATE:
            _GATE.wait_for(lambda: _BUSY[0] == 0 or _BUSY[1] > 0, GATE_MAX)


def _loader(q):
    _THREAD.append(threading.current_thread())
    while True:
        fns, done = q.get()
        pause()
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
    for i, f in enumerate(fns):
        if i:
            pause()
        f.load()
