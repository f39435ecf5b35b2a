"""The result of work handed to the loader thread (``native.load_later``, ``run_later``).

A measured bottleneck (issue 30, tails): ``concurrent.futures.Future`` imports
``concurrent.futures`` and with it ``logging``, 7 ms of an FMU's start, or 2.7-3.2 ms of the
doStep that first hands a fence's compiled functions to the loader thread (the step at
t = 0.63 s of benchmarks/hil_fences.py).  This is the part of it we use: one writer (the
loader thread) sets a result or an exception once; readers poll ``done()`` in a step or
wait for it.
"""

from __future__ import annotations

import threading


class Done:
    """A result to come: ``set_result`` or ``set_exception`` once (by the loader thread);
    ``done()``, ``result()``, ``exception()`` and ``wait()`` (by anyone)."""

    __slots__ = ("_event", "_result", "_exception")

    def __init__(self):
        self._event = threading.Event()
        self._result = None
        self._exception = None

    def set_result(self, result):
        self._result = result
        self._event.set()

    def set_exception(self, exc):
        self._exception = exc
        self._event.set()

    def done(self):
        """Whether a result or an exception was set (never blocks)."""
        return self._event.is_set()

    def wait(self, timeout=None):
        """Wait at most ``timeout`` s (None: until done); whether it is done."""
        return self._event.wait(timeout)

    def exception(self, timeout=None):
        """The exception set, None if a result was; waits as ``result`` does."""
        self._wait_or_raise(timeout)
        return self._exception

    def result(self, timeout=None):
        """The result set, or raises the exception set; TimeoutError if not done within
        ``timeout`` s (None: waits until done)."""
        self._wait_or_raise(timeout)
        if self._exception is not None:
            raise self._exception
        return self._result

    def _wait_or_raise(self, timeout):
        if not self._event.wait(timeout):
            raise TimeoutError(f"the loader thread's work was not done within {timeout} s")
