"""The pair of background embedding workers of one scenario, shared by the clients of a process
(``embed.background.client``): requests numbered and queued, answers routed to the client that
asked, hung or dead workers replaced off the stepping path (issue 33).  See the client's
docstring for the protocol and its promises.
"""

from __future__ import annotations

import itertools
import os
import select
import threading
import time
import weakref
from pathlib import Path

from ..base.helper_class import run_below, stepping_cpus
from .worker_pipe import (Loads, ModeParts, WorkerPipe, frame, python_executable,
                          worker_command)

MAX_DEATHS = 2             # a request outstanding when the workers died this often is dropped
DEADLINE = 20.0            # s a worker with work may stay silent before it counts as hung
START_DEADLINE = 60.0      # s a worker may take to build its model (imports, LLVM) and say ready


class Request:
    __slots__ = ("rid", "client", "pipe", "data", "origin_done", "relayed", "relay_done",
                 "parts", "skip", "deaths", "what")

    def __init__(self, rid, client, pipe, data, what):
        self.rid, self.client, self.pipe, self.data, self.what = rid, client, pipe, data, what
        self.origin_done = False
        self.relayed = self.relay_done = 0
        self.parts = self.skip = self.deaths = 0

    @property
    def answered(self):
        return self.origin_done and self.relay_done >= self.relayed


class Workers:
    """The two worker processes of one scenario and options, shared by the clients of a
    process: requests numbered, answers routed to the client that asked."""

    def __init__(self, scenario, options, python, root, jobs=None, set_up=None, lazy=False,
                 idle=False):
        # the folder holding embed/ and scenarios/: an FMU's resources (a master may delete
        # the folder an earlier instance was imported from), else this package's parent
        self.root = str(root or Path(__file__).resolve().parents[2])
        self.roots = [self.root]  # of the clients, newest last: a restart uses one that exists
        self.env = dict(os.environ)
        # the command line at the first start: reading the model module's jobs imports it
        # (and sympy), which lazy workers never started never need (issue 30)
        self._command = (python, scenario, options, jobs, set_up)
        self.cmd = None
        self.lock = threading.RLock()   # the pair's state, shared by threads (issue 33)
        self.clients = weakref.WeakValueDictionary()
        self._client_ids = itertools.count(1)
        self._rids = itertools.count(1)
        self.history = []         # announcements (frames), sent again to new workers
        self.pending = {}         # request number -> Request not answered yet
        self.parts = ModeParts()  # modes of which functions are still to come
        self.restarts = 0
        self.idle = idle          # spawned in the idle class (a real-time run's: run_below)
        # and then off the CPUs of the thread making the pair (the stepping thread's, taken
        # here: a restart spawns from a thread of its own), as the loader thread is
        self.away_from = stepping_cpus() if idle else ()
        self.loads = Loads(self.away_from)   # answers whose compiled functions are loading
        self.closed = False
        self.instances = 0        # clients made by client() still alive
        self.deadline = DEADLINE
        self._restarting = None   # the thread starting replacement workers
        self._started = None      # what it made: (fast, slow) or the exception
        self._why = None          # why the workers were started again (``_restart``)
        self.pipes = () if lazy else self._start()       # lazy: none until the first request
        self.fast, self.slow = self.pipes or (None, None)

    def _start(self):
        """The two workers spawned (``helper_class.run_below``): (fast, slow)."""
        return run_below(self._spawn, self.idle, self.away_from)

    def _spawn(self):
        # the newest folder holding embed/ that still exists (a master may delete the one an
        # earlier instance was extracted to), else this package's parent
        here = str(Path(__file__).resolve().parents[2])
        root = next((d for d in reversed(self.roots)
                     if os.path.isdir(os.path.join(d, "embed"))), here)
        env = dict(self.env)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        if self.cmd is None:
            python, scenario, options, jobs, set_up = self._command
            self.cmd = worker_command(python or python_executable(), scenario, options, jobs,
                                      set_up)
        r, w = os.pipe()          # fast -> slow, for what the fast worker prepares (Relay)
        try:
            fast = WorkerPipe("fast", self.cmd + ["--peer-out", str(w)], env, root,
                              pass_fds=(w,))
            slow = WorkerPipe("slow", self.cmd + ["--peer-in", str(r)], env, root,
                              pass_fds=(r,))
        finally:
            os.close(r)
            os.close(w)
        return fast, slow

    # ----------------------------------------------------------------- clients
    def register(self, client):
        with self.lock:
            cid = next(self._client_ids)
            self.clients[cid] = client
            return cid

    @property
    def ready(self):
        return (bool(self.pipes) and self._restarting is None and self.fast.ready
                and self.slow.ready)

    started = property(lambda self: bool(self.pipes) or self._restarting is not None)

    def _wake(self):
        """Lazy workers started now, in a thread as a restart is (``_finish_restart`` sends
        them the announcements and the requests made meanwhile): a scenario whose every mode
        was shipped compiled may never need them (issue 30)."""
        if not (self.started or self.closed):
            self._start_in_thread(())

    def outstanding(self, cid):
        """Client ``cid``'s requests not answered, and answers of it still loading."""
        with self.lock:
            return sum(r.client == cid for r in self.pending.values()) + self.loads.count(cid)

    def request(self, cid, pipe, req, slot=None, what=None):
        with self.lock:
            rid = next(self._rids)
            data = frame((cid, rid, req, slot))
            rec = self.pending[rid] = Request(rid, cid, pipe, data, what)
            self._wake()
            if self._restarting is None:  # else sent with the others when they have started
                getattr(self, pipe).send(data)
            return rec

    def announce(self, cid, req):
        data = frame((cid, None, req, None))
        with self.lock:
            self.history.append(data)
            for p in self.pipes if self._restarting is None else ():
                p.send(data)

    def _tell(self, cid, kind, item):
        """``item`` into client ``cid``'s inbox (``BackgroundCompiler._drain``), if it lives."""
        client = self.clients.get(cid) if cid is not None else None
        if client is not None:
            client._inbox.append((kind, item))
            if client.wake is not None:     # after the append: the woken one sees it
                client.wake()

    # ----------------------------------------------------------------- polling
    def poll(self, max_frames):
        """Write what is queued, read what has arrived, decode at most ``max_frames`` answers
        (control frames not counted) and route them; restart dead workers."""
        with self.lock:
            self._poll(max_frames)

    def _poll(self, max_frames):
        if self.closed or (self._restarting is not None and not self._finish_restart()):
            return
        if not self.pipes:
            return                # lazy, not started: nothing asked yet
        self.loads.release(self._tell)
        if not self.pending and self.ready and not (self.fast.busy or self.slow.busy):
            return                # nothing outstanding: no system call
        for p in self.pipes:
            p.flush()
            if not p.dead:
                p.read()
        n = 0
        for p in self.pipes:
            while n < max_frames:
                msg = p.next_frame()
                if msg is None:
                    break
                self.loads.frame(p.unloaded)
                n += _route(self, p, msg)
        self.loads.release(self._tell)
        if self.fast.dead or self.slow.dead:
            self._restart()
        elif self.pending and (hung := self._hung(time.monotonic())):
            self._restart(hung)

    def _hung(self, now):
        """The workers with work outstanding that have said nothing for ``deadline`` s
        (``START_DEADLINE`` before they are ready): stopped or hung (issue 33)."""
        expect = {"fast": False, "slow": False}
        for rec in self.pending.values():
            expect[rec.pipe] |= not rec.origin_done
            expect["slow"] |= rec.relay_done < rec.relayed
        return [p for p in self.pipes if expect[p.name] and now - p.heard > (
            self.deadline if p.ready else max(self.deadline, START_DEADLINE))]

    def _restart(self, hung=()):
        """Both workers killed and started again (they share a pipe), in a thread: the
        stepping goes on meanwhile (``poll`` finishes the restart when they are there)."""
        codes = {p.name: p.proc.poll() for p in self.pipes}
        old = self.pipes
        for p in old:
            p.dead = True
            try:
                p.proc.kill()             # also a stopped (SIGSTOP) one
            except OSError:
                pass
        self.restarts += 1
        self.parts.clear()
        dropped = []
        for rid, rec in list(self.pending.items()):
            rec.deaths += 1
            if rec.deaths >= MAX_DEATHS:
                del self.pending[rid]
                dropped.append(rec)
        gone = ", ".join([f"the {p.name} worker (silent for more than {self.deadline:g} s with "
                          "work outstanding: hung or stopped)" for p in hung]
                         + [f"the {k} worker (exit status {v})" for k, v in codes.items()
                            if v is not None]) or "a worker (its pipe closed)"
        self._why = gone
        for rec in dropped:           # told now: a client waiting for it stops waiting
            self._tell(rec.client, "error", (rec.what, "dropped: it was outstanding when the "
                                             f"workers ended {rec.deaths} times", ""))
        self._start_in_thread(old)

    def _start_in_thread(self, old):
        """The workers started in a thread, after ``old`` ones are closed; ``poll`` finishes
        (``_finish_restart``) when they are there."""
        def start():
            for p in old:
                p.close(stop=False)
            try:
                self._started = self._start()
            except Exception as exc:  # noqa: BLE001 - reported by _finish_restart
                self._started = exc
        self._restarting = threading.Thread(target=start, name="embed-worker-start",
                                            daemon=True)
        self._restarting.start()

    def _finish_restart(self):
        """The restart's second half, once its thread is done: every announcement and every
        request not answered yet re-sent, each client told.  Returns whether it is done."""
        if self._restarting.is_alive():
            return False
        self._restarting, started = None, self._started
        if isinstance(started, BaseException):
            self.closed = True
            for cid in list(self.clients.keys()):
                self._tell(cid, "error", ("background workers", "could not start them again "
                                          f"({type(started).__name__}: {started}); stepping "
                                          "on without them", ""))
            return False
        self.fast, self.slow = started
        self.pipes = started
        for data in self.history:
            for p in self.pipes:
                p.send(data)
        for rid in sorted(self.pending):
            rec = self.pending[rid]
            rec.origin_done, rec.relayed, rec.relay_done = False, 0, 0
            rec.skip, rec.parts = rec.parts, 0
            getattr(self, rec.pipe).send(rec.data)
        if self._why is not None:          # a restart (else a lazy pair's first start)
            msg = (f"{self._why} ended; started both workers again (restart {self.restarts}) "
                   f"and re-sent {len(self.pending)} outstanding requests")
            for cid in list(self.clients.keys()):
                self._tell(cid, "error", ("background workers", msg, ""))
        return True

    def wait(self, cid, timeout):
        """Block until client ``cid`` has nothing outstanding (its answers routed to it), at
        most ``timeout`` s; hung or dead workers are replaced on the way, and a request
        outstanding at MAX_DEATHS of them dropped (an error).  Returns whether all came."""
        end = time.monotonic() + timeout
        while self.outstanding(cid) and not self.closed and time.monotonic() < end:
            with self.lock:           # what to wait on; waited on without the lock
                restarting = self._restarting
                r = [p.fd_r for p in self.pipes if not p.dead]
                w = [p.fd_w for p in self.pipes if p.out and not p.dead]
            if restarting is not None:
                restarting.join(0.01)
            elif not self.loads.wait(0.01):
                select_io(r, w, 0.01)
            self.poll(max_frames=1 << 20)
        return not self.outstanding(cid)

    def instance_gone(self):
        """A client made by ``client()`` was collected.  With none left and every folder the
        workers were started from deleted (an FMU whose extraction is gone: a new instance
        imports its packages anew, with workers of its own), these workers serve nobody any
        more: stopped, without waiting (this may run in a garbage collection in a step)."""
        with self.lock:
            self._instance_gone()

    def _instance_gone(self):
        self.instances -= 1
        if self.instances > 0 or self.closed:
            return
        if any(os.path.isdir(os.path.join(d, "embed")) for d in self.roots):
            return
        self.closed = True
        self._join_restart()
        for p in self.pipes:
            try:
                p.proc.kill()
                for f in (p.proc.stdin, p.proc.stdout):
                    f.close()
                p.proc.poll()         # reaped now or by a later subprocess call
            except Exception:  # noqa: BLE001
                pass

    def _join_restart(self):
        """A restart under way finished, so that closing reaches the workers it started."""
        if self._restarting is not None:
            self._restarting.join()
            if not isinstance(self._started, BaseException):
                self.pipes = self._started

    def wait_ready(self, timeout):
        with self.lock:
            self._wake()
        deadline = time.monotonic() + timeout
        while not self.ready and not self.closed and time.monotonic() < deadline:
            with self.lock:
                restarting = self._restarting
                fds = [p.fd_r for p in self.pipes if not p.ready and not p.dead]
            select_io(fds, [], 0.05) if restarting is None else restarting.join(0.05)
            self.poll(max_frames=100)
        return self.ready

    def close(self):
        with self.lock:
            self._close()

    def _close(self):
        if not self.closed:
            self.closed = True
            self._join_restart()
            for p in self.pipes:
                p.close()


def _route(w, pipe, msg):
    """Handle one answer to the workers ``w``; returns 1 if it was data (counted against max_frames)."""
    cid, rid, body = msg
    kind = body[0]
    rec = w.pending.get(rid) if rid is not None else None
    if kind == "ready":
        pipe.ready = True
        return 0
    if kind == "done":
        if rec is not None:
            if pipe.name == rec.pipe:
                rec.origin_done = True
            else:
                rec.relay_done += 1
            if rec.answered:
                del w.pending[rid]
        return 0
    if kind == "relayed":
        if rec is not None:
            rec.relayed += body[1]
            w.slow.heard = max(w.slow.heard, time.monotonic())   # work for it
        return 0
    if kind == "call" and rec is not None:
        rec.parts += 1
        if rec.skip:              # re-sent after a restart: delivered already
            rec.skip -= 1
            return 1
    if kind in ("mode", "mode_fn"):
        done = w.parts.add(body)
        if done is not None:
            w.loads.answer(w._tell, cid, "mode", done)
    elif kind in ("entry", "rhs"):
        w.loads.answer(w._tell, cid, "extra", body)
    elif kind in ("call", "error", "numeric"):   # numeric: over the symbolic budget
        w.loads.answer(w._tell, cid, kind, body[1:])
    return 1


def select_io(r, w, timeout):
    """Wait until one of the descriptors is ready, at most ``timeout`` s; a descriptor that
    another thread closed meanwhile (a restart) ends the wait early."""
    try:
        select.select(r, w, [], timeout)
    except (OSError, ValueError):
        time.sleep(min(timeout, 1e-3))
