"""Client of the background embedding workers (``embed.worker``), polled from the stepping loop.

Two worker processes: a *fast* one answers a scenario's own calls (a geometry announced at
run time: parse, check, form its constraints; a few ms), a *slow* one embeds and compiles
modes with LLVM (tens to hundreds of ms each).  A second announcement therefore never
waits behind the compile of the first.  ``submit`` and ``call`` write a small request and
return at once; ``results`` and ``call_results`` take whatever has arrived, without
waiting (select with zero timeout), and cost nothing at all (no system call) while no
request is outstanding.  The stepping loop keeps integrating on the numeric path meanwhile.
"""

from __future__ import annotations

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

from .errors import CompilationError


def python_executable():
    """The Python to run the worker with: $EMBED_PYTHON, else this interpreter if it is a
    Python (inside a C++ master sys.executable may be the host program), else python3."""
    exe = os.environ.get("EMBED_PYTHON")
    if exe:
        return exe
    if sys.executable and Path(sys.executable).name.lower().startswith("python"):
        return sys.executable
    return shutil.which("python3") or "python3"


def frame(obj):
    """One request or answer: a length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack("<I", len(data)) + data


class _Pipe:
    """One worker process and the frames read from it."""

    def __init__(self, cmd, env, cwd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, cwd=cwd)
        self.buf = b""
        self.ready = False
        self.outstanding = 1      # requests not answered yet: the first is the worker's start

    def send(self, data, requests=0):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise CompilationError(f"background embedding worker is gone: {exc}") from exc
        self.outstanding += requests

    def frames(self, max_frames):
        """At most ``max_frames`` decoded answers, never waiting."""
        if not self.outstanding and not self.buf:
            return []
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            self.buf += chunk
        out = []
        while len(out) < max_frames and len(self.buf) >= 4:
            (size,) = struct.unpack("<I", self.buf[:4])
            if len(self.buf) < 4 + size:
                break
            msg = pickle.loads(self.buf[4:4 + size])
            self.buf = self.buf[4 + size:]
            if msg[0] == "ready":
                self.ready = True
                self.outstanding -= 1
            elif msg[0] == "done":
                self.outstanding -= 1
            else:
                out.append(msg)
        return out

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send(frame(("stop",)))
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001
                self.proc.kill()


class BackgroundCompiler:
    def __init__(self, scenario, options=None, python=None, root=None):
        # the folder holding embed/ and scenarios/: an FMU's resources (a master may delete
        # the folder an earlier instance was imported from), else this package's parent
        root = str(root or Path(__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [python or python_executable(), "-m", "embed.worker", scenario,
               json.dumps(options or {})]
        self.fast = _Pipe(cmd, env, root)
        self.slow = _Pipe(cmd, env, root)
        self.errors = []
        self._modes = []
        self._calls = []
        self._extras = []
        self._rest = False
        self._partial = {}        # modes of which functions are still to come

    @property
    def ready(self):
        return self.fast.ready and self.slow.ready

    @property
    def outstanding(self):
        return self.fast.outstanding + self.slow.outstanding

    def alive(self):
        return self.fast.proc.poll() is None and self.slow.proc.poll() is None

    def wait_ready(self, timeout):
        """Block until both workers have built their model (at most ``timeout`` s): called at
        set-up, so that their start-up (imports, model: 1-3 s of CPU) is over before the
        first real-time step.  Returns whether they are ready."""
        deadline = time.monotonic() + timeout
        while not self.ready and self.alive() and time.monotonic() < deadline:
            fds = [p.proc.stdout.fileno() for p in (self.fast, self.slow) if not p.ready]
            if select.select(fds, [], [], 0.05)[0]:
                self.poll(max_frames=100)
        return self.ready

    def submit(self, key, rhs=False):
        """Ask for mode ``key`` (mode id, active constraints, dependent speeds) compiled, with
        the right-hand side alone too if ``rhs`` (the adaptive solver)."""
        self.slow.send(frame(("mode", key, {"rhs": rhs})), requests=1)

    def announce(self, constraint):
        """A constraint defined at run time, for the modes submitted later (both workers)."""
        data = frame(("constraint", constraint))
        self.fast.send(data)
        self.slow.send(data)

    def announce_mode(self, mode):
        data = frame(("modedef", mode))
        self.fast.send(data)
        self.slow.send(data)

    def relay(self, data, requests):
        """Frames the fast worker prepared for the slow one (constraints, modes and mode
        requests of a new geometry), passed on without decoding them here."""
        self.slow.send(data, requests)

    def call(self, fname, *args):
        """Run the scenario module's worker function ``fname`` (listed in its WORKER_CALLS)
        in the fast worker; its results arrive, part by part, through ``call_results``."""
        self.fast.send(frame(("call", fname, args)), requests=1)

    def poll(self, max_frames=1):
        """Decode at most ``max_frames`` finished answers in all, the fast worker's first:
        loading a compiled function costs 0.1-0.4 ms in a step that finds the caches cold,
        so a step decodes one (``rest`` skips the next poll: a step that installed one)."""
        if self._rest:
            self._rest = False
            return
        n = 0
        for pipe in (self.fast, self.slow):
            for msg in pipe.frames(max_frames - n):
                n += 1
                if msg[0] in ("mode", "mode_fn"):
                    self._mode_part(msg)
                elif msg[0] in ("entry", "rhs"):
                    self._extras.append(msg)
                elif msg[0] == "call":
                    self._calls.append(msg[1:])
                elif msg[0] == "error":
                    self.errors.append(msg[1:])

    def _mode_part(self, msg):
        """A mode arrives as its first function, then each other one (``embed.worker``)."""
        if msg[0] == "mode":
            _, key, meta, fns = msg
            n = meta.get("n_fns", len(fns))
            self._partial[key] = [meta, list(fns) + [None] * (n - len(fns)),
                                  meta.get("frames", 1) - 1]
        else:
            _, key, i, fn = msg
            self._partial[key][1][i] = fn
            self._partial[key][2] -= 1
        meta, fns, to_come = self._partial[key]
        if to_come == 0:
            del self._partial[key]
            self._modes.append((key, tuple(fns), meta))

    def rest(self):
        """Decode nothing at the next ``poll``: this step has done its share."""
        self._rest = True

    def results(self):
        """Finished modes as (key, functions, meta); never blocks."""
        self.poll()
        out, self._modes = self._modes, []
        return out

    def extras(self):
        """What followed the modes: ("entry", constraint names, EntryTerms) and ("rhs", key,
        function); never blocks (``results`` polls)."""
        out, self._extras = self._extras, []
        return out

    def call_results(self):
        """Parts answered by ``call`` requests, as (fname, part); never blocks."""
        out, self._calls = self._calls, []
        return out

    def close(self):
        self.fast.close()
        self.slow.close()
