"""Client of the background embedding workers (``embed.background.worker``), polled from the stepping loop.

Two worker processes: a *fast* one runs a scenario's own jobs (a geometry announced at
run time: parse, check, form its constraints; a few ms), a *slow* one embeds and compiles
modes with LLVM (tens to hundreds of ms each).  A second announcement therefore never
waits behind the compile of the first.

The stepping process never blocks on a pipe, and a step's cost does not depend on the size
of what a worker is sent:

- its writes are non-blocking: a request goes into an outgoing queue, of which each poll
  writes what the pipe takes, at most ``worker_pipe.WRITE_BUDGET`` bytes;
- what the fast worker prepares for the slow one (the constraints, mode and mode request
  of a new geometry, which may be large) goes from worker to worker through a pipe of
  their own (``worker_pipe.Relay``): the stepping process is only told how many answers to expect;
- each poll reads at most ``worker_pipe.READ_BUDGET`` bytes and decodes at most ``max_frames``
  answers, and costs no system call at all while nothing is outstanding.

One pair of workers serves every instance of a scenario in a process: each instance talks
to it through a client of its own (``BackgroundCompiler.client``), whose requests carry its
number and whose answers only it receives.  A worker that dies, or that has work and has
said nothing for ``deadline`` s (stopped, hung: issue 33), is replaced (both are killed and
started again, they share a pipe; the start runs in a thread, off the stepping path), every
announcement is sent again and every request not answered yet re-sent; the clients are told
through ``errors`` (the FMU logs them).  A request outstanding at two deaths is dropped with
an error rather than sent a third time.

Instances may step from threads of their own (issue 33): the pair's state (pipes, queues,
requests outstanding) is changed only under its lock, and an answer routed by whichever
thread polled goes into its client's inbox (a deque), which only the client's own calls
empty into its lists.  No lock is held while waiting (``wait``, ``wait_ready``).

Offline runs (``real_time`` False, the default) are deterministic: a client ``wait``s for an
answer the run needs instead of stepping on without it; a real-time master only steps faster.
"""

from __future__ import annotations

import collections
import weakref

from .workers import MAX_DEATHS, START_DEADLINE, Workers

class BackgroundCompiler:
    """One client of a pair of background workers: its requests, and the answers to them.

    ``BackgroundCompiler(scenario, options)`` starts a pair of workers; ``client()`` gives
    another client of the same pair (one per FMU instance: its answers are its own).

    Parameters
    ----------
    scenario : str
        the module that builds the model ("package.module": ``build(**options)``), or a
        scenario's name (transitional, ``model_module``).
    options : dict, optional
        the keyword arguments of ``build``.
    python : str, optional
        the workers' interpreter (``python_executable``).
    root : str, optional
        the folder holding embed/ (an FMU's resources).
    jobs : sequence of str, optional
        "module:function" of the jobs the fast worker may run (``call``); default: the
        model module's WORKER_JOBS.
    set_up : str, optional
        "module:function" run once in each worker before its first request; default: the
        model module's WORKER_SET_UP.
    lazy : bool, optional
        Start the workers at the first request (or ``wait_ready``), not now: never, if every
        mode the run enters was compiled already (shipped in an FMU, issue 30).
    idle : bool, optional
        Spawn the workers in the idle scheduling class, off the CPUs of the thread making
        them (a real-time run's, whose stepping thread they must never hold up:
        ``helper_class.run_below``), not at nice 10 on any CPU.
    """

    def __init__(self, scenario, options=None, python=None, root=None, *, jobs=None,
                 set_up=None, lazy=False, idle=False, _workers=None):
        self._w = _workers if _workers is not None else Workers(scenario, options, python,
                                                                   root, jobs, set_up, lazy,
                                                                   idle)
        self._inbox = collections.deque()   # (kind, answer) routed by any thread's poll
        self._errors = []            # (what, message, detail)
        self._notes = []             # (mode key, why): modes left on the numeric path
        self._modes = []
        self._calls = []
        self._extras = []
        self._rest = False
        self._closed = False
        self.real_time = False    # True: never wait for an answer (the master keeps time)
        self.wake = None          # called (any thread) after an answer enters the inbox
        self.id = self._w.register(self)

    def _drain(self):
        """The answers routed to this client so far, into its own lists (its thread only)."""
        inbox = self._inbox
        while inbox:
            kind, item = inbox.popleft()
            {"mode": self._modes, "extra": self._extras, "call": self._calls,
             "error": self._errors, "numeric": self._notes}[kind].append(item)

    @property
    def errors(self):
        """(what, message, detail) of what failed, oldest first; the caller may remove them."""
        self._drain()
        return self._errors

    @property
    def notes(self):
        """(mode key, why) of modes left on the numeric path (over the symbolic budget)."""
        self._drain()
        return self._notes

    @property
    def deadline(self):
        """Seconds a worker with work may stay silent before it is replaced as hung."""
        return self._w.deadline

    @deadline.setter
    def deadline(self, seconds):
        self._w.deadline = float(seconds)

    def idle(self):
        """Whether nothing of this client's is under way: no request outstanding (nor its
        compiled functions loading), nothing routed to it and not yet taken, no ``rest``
        pending.  Then no poll of this client can hand the stepping anything, so the FMU's C
        loader may step without polling (fmu_src/runtime/fast_step.py); whatever is routed to
        it later (only ``errors`` of a restart another client's poll made) calls ``wake``.
        The workers' own start (``ready``) is not waited for: it gives this client nothing."""
        if self._rest or self._inbox or self._modes or self._calls or self._extras \
                or self._errors or self._notes:
            return False
        w = self._w        # (nothing pending for anyone: no lock taken; only this client's
        return not (w.pending or w.loads.queue) or w.outstanding(self.id) == 0   # own calls ask)

    def wait(self, timeout=None):
        """Block until this client's requests are answered (``Workers.wait``; default
        bound: enough for every allowed restart).  Returns whether they all were."""
        if timeout is None:
            timeout = (MAX_DEATHS + 1) * (self._w.deadline + START_DEADLINE)
        return self._w.wait(self.id, timeout)

    def client(self, root=None):
        """Another client of this pair of workers (an FMU instance of its own); ``root``: its
        folder holding embed/ (an FMU's resources), used if the workers are started again."""
        if root:
            self._w.roots.append(str(root))
        c = BackgroundCompiler(None, _workers=self._w)
        self._w.instances += 1
        weakref.finalize(c, self._w.instance_gone)
        return c

    @property
    def ready(self):
        return self._w.ready

    @property
    def started(self):
        """Whether the workers were started (``lazy`` ones: at the first request)."""
        return self._w.started

    @property
    def outstanding(self):
        """This client's requests not answered yet (and 1 while the workers start)."""
        return self._w.outstanding(self.id) + (self._w.started and not self._w.ready)

    @property
    def restarts(self):
        return self._w.restarts

    def worker_pids(self):
        return [p.proc.pid for p in self._w.pipes]

    def alive(self):
        """Usable: not closed (a worker that died is started again at the next poll)."""
        return not self._w.closed

    def start(self):
        """Lazy workers not started yet started now, in a thread (``Workers._wake``)."""
        with self._w.lock:
            self._w._wake()

    def wait_ready(self, timeout):
        """Block until both workers have built their model (at most ``timeout`` s): called at
        set-up, so that their start-up (imports, model: 1-3 s of CPU) is over before the
        first real-time step.  Returns whether they are ready."""
        return self._w.wait_ready(timeout)

    def submit(self, key, rhs=False):
        """Ask for mode ``key`` (mode id, active constraints, dependent speeds) compiled, with
        the right-hand side alone too if ``rhs`` (the adaptive solver)."""
        self._w.request(self.id, "slow", ("mode", key, {"rhs": rhs}), what=key)

    def announce(self, constraint):
        """A constraint defined at run time, for the modes submitted later (both workers)."""
        self._w.announce(self.id, ("constraint", constraint))

    def announce_mode(self, mode):
        self._w.announce(self.id, ("modedef", mode))

    def call(self, fname, *args, supersede=None):
        """Run the job ``fname`` ("module:function", one of the fast worker's jobs: its command
        line names them) in the fast worker; its results arrive, part by part, through
        ``call_results``.  With ``supersede`` (a name), a call of this client with the same name made later and
        waiting in the worker replaces this one, which then answers nothing (nor does the
        slow worker's part of it)."""
        self._w.request(self.id, "fast", ("call", fname, args), slot=supersede, what=fname)

    def poll(self, max_frames=1):
        """Decode at most ``max_frames`` finished answers in all, the fast worker's first:
        loading a compiled function costs 0.1-0.4 ms in a step that finds the caches cold,
        so a step decodes one (``rest`` skips the next poll: a step that installed one)."""
        if self._rest:
            self._rest = False
            return
        self._w.poll(max_frames)
        self._drain()

    def rest(self):
        """Decode nothing at the next ``poll``: this step has done its share."""
        self._rest = True

    def results(self):
        """Finished modes as (key, functions, meta); never blocks."""
        self.poll()
        self._drain()
        out, self._modes = self._modes, []
        return out

    def extras(self):
        """What followed the modes: ("entry", constraint names, EntryTerms) and ("rhs", key,
        function); never blocks (``results`` polls)."""
        self._drain()
        out, self._extras = self._extras, []
        return out

    def call_results(self):
        """Parts answered by ``call`` requests, as (fname, part); never blocks."""
        self._drain()
        out, self._calls = self._calls, []
        return out

    def close(self):
        """This client leaves; the workers stop with the last one."""
        with self._w.lock:
            if not self._closed:
                self._closed = True
                self._w.clients.pop(self.id, None)
                if not self._w.clients:
                    self._w.close()

    def stop_workers(self):
        self._w.close()
