"""Starting a background worker process (``embed.background.worker``) and talking to it: its command line,
the frames it reads and writes (length-prefixed pickles), and ``WorkerPipe``, one worker's
pipe that the stepping process never blocks on (non-blocking writes from a queue, reads
within a budget).  ``embed.background.client`` routes requests and answers over two of them.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

from ..codegen.native import deferred_loads, load_later, start_loader

WRITE_BUDGET = 1 << 16     # bytes a poll writes to a worker at most (one pipe buffer)
READ_BUDGET = 1 << 18      # bytes a poll reads from a worker at most
_HEAD = struct.Struct("<I")


def python_executable():
    """The Python to run the worker with: $EMBED_PYTHON, else this interpreter if it is a
    Python (inside a C++ master sys.executable may be the host program), else python3."""
    exe = os.environ.get("EMBED_PYTHON")
    if exe:
        return exe
    if sys.executable and Path(sys.executable).name.lower().startswith("python"):
        return sys.executable
    return shutil.which("python3") or "python3"


def model_module(scenario):
    """The module that builds the workers' model: ``scenario`` itself if it names a module
    ("package.module"); a bare scenario name is TRANSITIONAL (fmu_src/runtime/slave.py passes one):
    the module of that name in the scenarios package that travels beside this engine (in an
    FMU its packages are embed<tag> and scenarios<tag>), named, never imported here."""
    if "." in scenario:
        return scenario
    tag = __name__.split(".")[0][len("embed"):]
    return f"scenarios{tag}.{scenario}"


def worker_jobs(module):
    """The module's ``WORKER_JOBS`` ("module:function" names of its background jobs) and
    ``WORKER_SET_UP`` (run once in each worker, or None), read from the module, which the
    stepping process has imported already to build its scenario."""
    mod = importlib.import_module(module)
    return tuple(getattr(mod, "WORKER_JOBS", ())), getattr(mod, "WORKER_SET_UP", None)


# a worker runs at a lower priority than the stepping process (nice 10): if the cores are
# contended, the stepping goes first.  Started through ``nice`` where there is one, so that its
# interpreter's start (30-60 ms of CPU, before its ``main`` runs) is niced too; else its main
# lowers its own priority (issue 30, start-up)
NICE = ("/usr/bin/nice", "/bin/nice")
NICENESS = 10
NICED = "--niced"


def worker_command(python, scenario, options, jobs=None, set_up=None):
    """The worker's command line (``embed.background.worker``): the model's module and options, and the
    jobs it may run and its set-up, each "module:function" (read from the model's module when
    ``jobs`` is None).

    Parameters
    ----------
    python : str
        the interpreter.
    scenario : str
        the model's module ("package.module", whose ``build(**options)`` returns the
        scenario), or a scenario name (``model_module``).
    options : dict
        the keyword arguments of ``build``.
    jobs : sequence of str, optional
    set_up : str, optional

    Returns
    -------
    list of str
    """
    module = model_module(scenario)
    if jobs is None:
        jobs, set_up = worker_jobs(module)
    cmd = [python, "-m", "embed.background.worker", module, json.dumps(options or {})]
    nice = next((p for p in NICE if os.access(p, os.X_OK)), None)
    if nice is not None:      # niced from its exec on, its interpreter's start included
        cmd = [nice, "-n", str(NICENESS)] + cmd + [NICED]
    for job in jobs:
        cmd += ["--job", job]
    if set_up:
        cmd += ["--set-up", set_up]
    return cmd


def frame(obj):
    """One request or answer: a length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEAD.pack(len(data)) + data


class Relay:
    """A part a worker call yields for the *slow* worker: ``requests`` (("constraint", c),
    ("modedef", mode), ("mode", key, options), ...) go to it directly, worker to worker, and
    ``part`` (if not None) to the caller as an ordinary part."""

    __slots__ = ("requests", "part")

    def __init__(self, requests, part=None):
        self.requests, self.part = list(requests), part


class WorkerPipe:
    """One worker process: its outgoing queue (non-blocking writes) and the bytes read from it."""

    def __init__(self, name, cmd, env, cwd, pass_fds=()):
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, cwd=cwd, pass_fds=pass_fds)
        self.fd_w = self.proc.stdin.fileno()
        self.fd_r = self.proc.stdout.fileno()
        os.set_blocking(self.fd_w, False)
        self.out = collections.deque()
        self.off = 0                  # bytes of out[0] written already
        self.buf = bytearray()
        self.pos = 0                  # bytes of buf decoded already
        self.ready = False
        self.dead = False
        self.unloaded = []            # the functions of the last frame decoded, not loaded
        self.heard = time.monotonic()   # the last bytes read from it, or work sent to it

    def send(self, data):
        self.heard = time.monotonic()
        self.out.append(data)
        self.flush()

    def flush(self, budget=WRITE_BUDGET):
        """Write what the pipe takes of the queue, at most ``budget`` bytes, never waiting."""
        while self.out and budget > 0 and not self.dead:
            head = self.out[0]
            try:
                n = os.write(self.fd_w, memoryview(head)[self.off:self.off + budget])
            except BlockingIOError:
                return
            except OSError:           # EPIPE: the worker is gone
                self.dead = True
                return
            budget -= n
            self.off += n
            if self.off >= len(head):
                self.out.popleft()
                self.off = 0

    def read(self, budget=READ_BUDGET):
        """What has arrived, at most ``budget`` bytes, never waiting."""
        fd = self.fd_r
        while budget > 0 and select.select([fd], [], [], 0)[0]:
            try:
                chunk = os.read(fd, min(budget, 1 << 16))
            except OSError:
                chunk = b""
            if not chunk:             # EOF: the worker is gone
                self.dead = True
                return
            self.buf += chunk
            budget -= len(chunk)
            self.heard = time.monotonic()

    def has_frame(self):
        n = len(self.buf) - self.pos
        return n >= 4 and n - 4 >= _HEAD.unpack_from(self.buf, self.pos)[0]

    def next_frame(self):
        """The next complete answer decoded, or None; the compiled functions in it are not
        loaded yet: they are listed in ``self.unloaded`` (``native.load_later``)."""
        self.unloaded = []
        if not self.has_frame():
            return None
        (size,) = _HEAD.unpack_from(self.buf, self.pos)
        start = self.pos + 4
        view = memoryview(self.buf)
        part = view[start:start + size]
        try:
            with deferred_loads() as self.unloaded:
                msg = pickle.loads(part)
        finally:
            part.release()
            view.release()
        self.pos = start + size
        if self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        elif self.pos > (1 << 16):
            del self.buf[:self.pos]
            self.pos = 0
        return msg

    @property
    def busy(self):
        return bool(self.out) or len(self.buf) > self.pos

    def close(self, stop=True):
        """Stop the worker: EOF, and up to 2 s for it to leave after what it is doing; one
        not ready yet (still importing, building its model: it has done nothing for anyone)
        is killed at once, not waited for (an offline FMU that stepped while its workers
        started: 4 s at its fmi2Terminate)."""
        if self.proc.poll() is None and stop and self.ready:
            try:
                os.set_blocking(self.fd_w, True)
                self.proc.stdin.close()      # EOF: the worker leaves after what it is doing
                self.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except Exception:  # noqa: BLE001
                pass


class ModeParts:
    """A mode arrives as its first function (``"mode"``), then each other one (``"mode_fn"``),
    from ``embed.background.worker``; ``add`` returns (key, functions, meta) once it is whole."""

    def __init__(self):
        self._partial = {}        # key -> [meta, functions, frames still to come]

    def clear(self):
        self._partial.clear()

    def add(self, msg):
        if msg[0] == "mode":
            _, key, meta, fns = msg
            n = meta.get("n_fns", len(fns))
            self._partial[key] = [meta, list(fns) + [None] * (n - len(fns)),
                                  meta.get("frames", 1) - 1]
        else:
            _, key, i, fn = msg
            if key not in self._partial:
                return None
            self._partial[key][1][i] = fn
            self._partial[key][2] -= 1
        meta, fns, to_come = self._partial[key]
        if to_come == 0:
            del self._partial[key]
            return (key, tuple(fns), meta)
        return None


class Loads:
    """Answers decoded whose compiled functions load in the loader thread
    (``native.load_later``, off the stepping path: issue 30, tails), handed on in the order
    they came once the functions of every frame decoded before them have loaded (one loader
    thread, loads in order: the newest frame's done means all are)."""

    def __init__(self, away_from=()):
        self.queue = collections.deque()   # (Done, client, kind, item)
        self.last = None          # the Done of the newest frame's loads
        start_loader(away_from)   # now, not in a step: starting a thread costs milliseconds

    def frame(self, unloaded):
        """A frame was decoded with these functions not loaded (``WorkerPipe.unloaded``)."""
        if unloaded:
            self.last = load_later(unloaded)

    def answer(self, tell, cid, kind, item):
        """tell(cid, kind, item) now if nothing is loading, else once it has loaded."""
        if self.queue or (self.last is not None and not self.last.done()):
            self.queue.append((self.last, cid, kind, item))
        else:
            tell(cid, kind, item)

    def release(self, tell):
        """Tell the answers whose functions have loaded, in order; a load that failed is
        told as an error in place of its answer."""
        q = self.queue
        while q and q[0][0].done():
            fut, cid, kind, item = q.popleft()
            exc = fut.exception()
            if exc is not None:
                tell(cid, "error", (kind, f"a compiled function did not load: {exc}",
                                    repr(item)[:200]))
            else:
                tell(cid, kind, item)

    def count(self, cid):
        """Answers of client ``cid`` still loading."""
        return sum(1 for a in self.queue if a[1] == cid)

    def wait(self, timeout):
        """Wait at most ``timeout`` s for the first answer's loads; False if none is loading."""
        if not self.queue:
            return False
        self.queue[0][0].wait(timeout)
        return True
