"""Client of the background embedding worker (``embed.worker``), polled from the stepping loop.

``submit`` writes a small request (the mode's key) and returns at once; ``results``
takes whatever compiled modes have arrived, without waiting (select with zero
timeout), and costs nothing at all (no system call) while no request is
outstanding.  The stepping loop keeps integrating on the numeric path meanwhile.
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


class BackgroundCompiler:
    def __init__(self, scenario, options=None, python=None, root=None):
        # the folder holding embed/ and scenarios/: an FMU's resources (a master may delete
        # the folder an earlier instance was imported from), else this package's parent
        root = str(root or Path(__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [python or python_executable(), "-m", "embed.worker", scenario,
             json.dumps(options or {})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=root)
        self._buf = b""
        self.ready = False
        self.errors = []
        self._modes = []
        self._calls = []
        self.outstanding = 1      # requests not answered yet: the first is the worker's start

    def wait_ready(self, timeout):
        """Block until the worker has built its model (at most ``timeout`` s): called at
        set-up, so that its start-up (imports, model: 1-3 s of CPU) is over before the
        first real-time step.  Returns whether it is ready."""
        import time
        deadline = time.monotonic() + timeout
        while not self.ready and self.proc.poll() is None and time.monotonic() < deadline:
            if select.select([self.proc.stdout.fileno()], [], [], 0.05)[0]:
                self.poll()
        return self.ready

    def submit(self, key):
        """Ask for mode ``key`` (mode id, active constraints, dependent speeds) compiled."""
        self._send(("mode", key))
        self.outstanding += 1

    def announce(self, constraint):
        self._send(("constraint", constraint))

    def announce_mode(self, mode):
        self._send(("modedef", mode))

    def call(self, fname, *args):
        """Run the scenario module's worker function ``fname`` (listed in its WORKER_CALLS)
        in the worker; its results arrive, part by part, through ``call_results``."""
        self._send(("call", fname, args))
        self.outstanding += 1

    def _send(self, obj):
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise CompilationError(f"background embedding worker is gone: {exc}") from exc

    def _read_available(self):
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            self._buf += chunk

    def poll(self, max_frames=1):
        """Decode at most ``max_frames`` finished answers (unpickling compiled functions
        costs about 0.2 ms each: one answer per step keeps every step short)."""
        if not self.outstanding and not self._buf:
            return
        self._read_available()
        for _ in range(max_frames):
            if len(self._buf) < 4:
                return
            (size,) = struct.unpack("<I", self._buf[:4])
            if len(self._buf) < 4 + size:
                return
            msg = pickle.loads(self._buf[4:4 + size])
            self._buf = self._buf[4 + size:]
            if msg[0] == "ready":
                self.ready = True
                self.outstanding -= 1
            elif msg[0] == "done":
                self.outstanding -= 1
            elif msg[0] == "mode":
                _, key, meta, fns = msg
                self._modes.append((key, fns, meta))
            elif msg[0] == "call":
                self._calls.append(msg[1:])
            elif msg[0] == "error":
                self.errors.append(msg[1:])

    def results(self):
        """Finished modes as (key, functions, meta); never blocks."""
        self.poll()
        out, self._modes = self._modes, []
        return out

    def call_results(self):
        """Parts answered by ``call`` requests, as (fname, part); never blocks."""
        out, self._calls = self._calls, []
        return out

    def close(self):
        if self.proc.poll() is None:
            try:
                self._send(("stop",))
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001
                self.proc.kill()
