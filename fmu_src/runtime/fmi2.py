"""FMI 2.0 co-simulation rules the slave answers by (FMI 2.0.4, Sec 2.1.3, 2.2.7, 4.2.4).

pythonfmu turns any Python exception into fmi2Fatal and answers fmi2OK for everything
else.  Here every FMI-facing method of the slave is wrapped by ``fmi2_call``: it checks
that the call is legal in the instance's state (the state table of Sec 4.2.4), catches
every exception, logs it with its category and has the FMU's C loader (fmu_src/runtime/loader)
return the status the standard asks for, with the instance alive.
"""

from __future__ import annotations

import ctypes
import contextlib
import functools
import math
import os
import sys
import weakref

from embed.codegen.loader_thread import held

OK, WARNING, DISCARD, ERROR, FATAL = range(5)


class State:
    """States of an FMI 2.0 co-simulation slave (Sec 4.2.4, Fig 10), as bits (plain ints:
    the check runs on every call of a 1 kHz loop)."""

    INSTANTIATED = 1
    INITIALIZATION_MODE = 2
    STEP_COMPLETE = 4
    STEP_FAILED = 8          # after fmi2Discard: the last good state is kept
    TERMINATED = 16
    NAMES = {1: "INSTANTIATED", 2: "INITIALIZATION_MODE", 4: "STEP_COMPLETE", 8: "STEP_FAILED",
             16: "TERMINATED"}
    BY_NAME = {v: k for k, v in NAMES.items()}


_ANY = (State.INSTANTIATED | State.INITIALIZATION_MODE | State.STEP_COMPLETE
        | State.STEP_FAILED | State.TERMINATED)
# which states each call is legal in (the state table of Sec 4.2.4; after fmi2Discard the
# slave has kept its last good state, so inputs may change and fmi2DoStep retry from it)
ALLOWED = {
    "setup_experiment": State.INSTANTIATED,
    "enter_initialization_mode": State.INSTANTIATED,
    "exit_initialization_mode": State.INITIALIZATION_MODE,
    "do_step": State.STEP_COMPLETE | State.STEP_FAILED,
    "terminate": State.STEP_COMPLETE | State.STEP_FAILED,
    "get": State.INITIALIZATION_MODE | State.STEP_COMPLETE | State.STEP_FAILED | State.TERMINATED,
    "set_real": State.INSTANTIATED | State.INITIALIZATION_MODE | State.STEP_COMPLETE
    | State.STEP_FAILED,
    "set_other": State.INSTANTIATED | State.INITIALIZATION_MODE | State.STEP_COMPLETE
    | State.STEP_FAILED,
    "state": _ANY,
}


class CallError(Exception):
    """A call the standard says is an error (illegal in this state, a bad argument):
    answered with the FMI ``status``, nothing of it applied; ``code`` is what the slave's
    ``status`` output reports (None: the code for a refused call)."""

    def __init__(self, message, status=ERROR, code=None):
        super().__init__(message)
        self.status = status
        self.code = code


class Loader:
    """The FMU's C loader seen from Python: the status the current call returns and the
    last successful time (fmi2GetRealStatus).  Without the loader (a slave constructed in
    Python, as some tests do) both are kept here only."""

    def __init__(self, resources, model_identifier):
        self.status = OK
        self.last_successful_time = 0.0
        self._set_status = self._set_time = self._log = self._lib = None
        self._returned_early = None
        self.guid = None          # the GUID the FMU was built with
        # FMI 3.0 (fmi3_loader.c): the master lets doStep return at an event; fixed for the
        # instance at its instantiation, which is running now
        self.early_return_allowed = False
        lib = _loader_library(resources, model_identifier)
        if lib is not None:
            lib.embed_fmi2_guid.restype = ctypes.c_char_p
            self.guid = lib.embed_fmi2_guid().decode()
            self._set_status = lib.embed_fmi2_set_status
            self._set_status.argtypes = [ctypes.c_int]
            self._set_time = lib.embed_fmi2_set_last_successful_time
            self._set_time.argtypes = [ctypes.c_double]
            self._log = getattr(lib, "embed_fmi2_log", None)
            if self._log is not None:
                self._log.argtypes = [ctypes.c_int, ctypes.c_char_p]
            allowed = getattr(lib, "embed_fmi3_early_return_allowed", None)
            if allowed is not None:
                self.early_return_allowed = bool(allowed())
                self._returned_early = lib.embed_fmi3_returned_early
                self._returned_early.argtypes = [ctypes.c_double]
            self._lib = lib
            _LOADERS.add(self)

    def report(self, status):
        """The running call returns at least ``status``."""
        self.status = max(self.status, status)
        if self._set_status is not None:
            self._set_status(int(status))

    def successful_until(self, t):
        """fmi2LastSuccessfulTime after a discarded step (the loader sets it after others)."""
        self.last_successful_time = float(t)
        if self._set_time is not None:
            self._set_time(float(t))

    def log_now(self, status, message):
        """``message`` logged for the instance whose call runs now (a call the loader made
        itself, outside pythonfmu, whose log queue pythonfmu flushes only later)."""
        if self._log is not None:
            self._log(int(status), str(message).encode("utf-8", "replace"))

    def returned_early(self, t):
        """The running doStep stopped at an event located at ``t`` (FMI 3.0 early return:
        fmi3DoStep answers earlyReturn and lastSuccessfulTime = t)."""
        if self._returned_early is not None:
            self._returned_early(float(t))


# The loaders of every live instance.  Each extraction of an FMU is a library of its own with
# its own record of the call running on each thread, while all extractions share the slave's
# class (one sys.modules): a class-level call must reach the library its call came through.
_LOADERS = weakref.WeakSet()


def refuse_running_call(status, message):
    """The call running on this thread returns at least ``status`` and ``message`` is logged
    for its instance, whichever extraction of the FMU it came through: for pythonfmu's
    class-level calls (deserializing a state), which have no instance.  The loaders of the
    other extractions have no call on this thread and ignore it."""
    done = set()
    for loader in list(_LOADERS):
        lib = loader._lib
        if lib is None or lib._handle in done:
            continue
        done.add(lib._handle)
        lib.embed_fmi2_set_status(int(status))
        if loader._log is not None:
            loader._log(int(status), message.encode("utf-8", "replace"))


def _loader_library(resources, model_identifier):
    """ctypes handle of the loader this FMU was loaded through (the same file is already
    loaded, so this is the master's own handle), or None."""
    if not resources or not sys.platform.startswith("linux"):
        return None
    for platform in ("linux64", "x86_64-linux"):          # FMI 2.0's folder, FMI 3.0's
        path = os.path.join(os.path.dirname(os.path.normpath(resources)), "binaries", platform,
                            f"{model_identifier}.so")
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)   # only if loaded
            lib.embed_fmi2_set_status      # noqa: B018 - present only in our loader
            return lib
        except (OSError, AttributeError):
            continue
    return None


_NO_LOCK = contextlib.nullcontext()


def fmi2_call(kind, default=None):
    """Wrap an FMI-facing slave method: legal only in the states ``ALLOWED[kind]``; a
    ``CallError`` or any other exception is logged and answered with its status (the
    method's effects must be all or nothing), and ``default(self, *args)`` is returned so
    that pythonfmu's C++ receives a well-formed value."""
    allowed = ALLOWED[kind]
    hold = kind == "do_step"

    def wrap(method):
        @functools.wraps(method)
        def call(self, *args):
            # the instances of one scenario share compiled modes with scratch buffers: their
            # calls take turns (``embed.modes.library``; instances stepped from threads); a
            # real-time instance's steps hand their work to the loader thread as they return
            with getattr(self, "lock", _NO_LOCK), \
                    held() if hold and getattr(self, "real_time", False) else _NO_LOCK:
                self.loader.status = OK
                try:
                    if not self.fmi_state & allowed:
                        raise CallError(f"{method.__name__} is not allowed in state "
                                        f"{State.NAMES[self.fmi_state]} (FMI 2.0, Sec 4.2.4)")
                    return method(self, *args)
                except CallError as exc:
                    self.call_failed(exc.status, f"{method.__name__}: {exc}", exc.code)
                except Exception as exc:  # noqa: BLE001 - never let an exception reach pythonfmu
                    self.call_failed(ERROR, f"{method.__name__}: internal error: "
                                     f"{type(exc).__name__}: {exc}", None)
                finally:
                    if kind != "get" and getattr(self, "fast", None) is not None:
                        self.fast.update(self)    # armed or disarmed for the C loader's steps
                return default(self, *args) if default is not None else None
        return call
    return wrap


def check_step(slave, current_time, step_size, max_steps):
    """fmi2DoStep's arguments (FMI 2.0, Sec 4.2.3): a positive finite step from the
    previous communication point (rounding of a master's running sum tolerated), of at most
    ``max_steps`` fixed steps, on an instance that initialized and did not fail for good."""
    if slave.broken is not None:
        code, message = slave.broken
        raise CallError(f"a step failed for good ({message}); no step can get past it: fix "
                        "the model and build the FMU again (fmi2Reset starts over)",
                        code=code)
    if not (math.isfinite(step_size) and step_size > 0):
        raise CallError(f"communicationStepSize = {step_size!r} must be positive and finite")
    t = slave.t_comm
    if not (math.isfinite(current_time)
            and abs(current_time - t) <= 1e-9 * max(1.0, abs(t), step_size)):
        raise CallError(f"currentCommunicationPoint = {current_time!r} is not the end of the "
                        f"previous step, t = {t!r} (FMI 2.0 Sec 4.2.3: steps follow each "
                        "other; restore a saved FMU state to go back)")
    if slave.solver == "rk4" and step_size / slave.h_max > max_steps:
        raise CallError(f"communicationStepSize = {step_size!r} s would take "
                        f"{step_size / slave.h_max:.3g} internal steps of h_max = "
                        f"{slave.h_max} s (at most {max_steps:.3g}); use shorter "
                        "communication steps or a larger h_max")
    if slave.sim is None:
        raise CallError("the instance did not initialize (see the log)")
