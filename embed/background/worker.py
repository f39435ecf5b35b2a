"""Background embedding worker: ``python -m embed.background.worker MODULE OPTIONS_JSON [--job MODULE:FUNCTION]...
[--set-up MODULE:FUNCTION] [--peer-in FD | --peer-out FD]``.

gillespie2005 Sec 6.2 (Fig 11): symbolic embedding runs in parallel with numerical
integration.  A thread of the stepping interpreter would hold its GIL through every
compile (stalls: docs/design.md, facts), so this runs as its own process.  It builds the
scenario once (``MODULE.build(**options)``), runs the set-up function named by --set-up
(called as function(forms, default parameter vector)), and
then answers requests, each a length-prefixed pickle (client, number,
request, slot), the client being the instance that asked (its answers carry its number):

- ("mode", key[, options]): embed the mode (eq 11-16) and compile it with LLVM; the answer
  is ("mode", key, meta, (first function,)) and ("mode_fn", key, i, function) for its other
  functions, one compiled function a frame (LLVM functions pickle), then, unless options
  say "entry": False, the constraint set's entry terms ("entry", active, EntryTerms) and, if
  "rhs", the adaptive solver's right-hand side ("rhs", key, function); "compose_ops" raises
  how large monitors may be to go into the composed RK4 step (one function, one load);
- ("constraint", constraint) and ("modedef", mode): announced at run time, for later modes;
- ("call", "module:function", args): a scenario's own background work, one of the jobs
  named on the command line by --job (no other is run: the worker never imports a scenario
  by itself), called as function(forms, *args), ``forms`` being the worker's
  ``embed.modes.forming.AutomatonForms`` of the scenario (no simulator), and answered part by part, one frame each; a part that is a ``Relay`` goes to the slow worker
  directly (--peer-out), the stepping process being told only how many answers it will
  send (("relayed", n));
- ("stop",): exit.

Every "mode" and "call" request is followed, once answered, by a ("done",) frame, so
that the stepping process polls only while something is outstanding.  A request with a
slot is answered only by its "done" when a later one of the same client and slot is
already waiting, which is served in its place: a burst of announcements costs one answer,
the latest, and a client announcing faster than it is answered starves no other.

Requests are read by a thread per input (the stepping process's pipe, and the fast
worker's for the slow one), so that whoever writes to this worker never waits for it to
finish a compile; what the fast worker relays is written by a thread of its own, so that it
never waits for the slow one.  The worker runs at a lower priority (nice 10) than the
stepping process, and leaves when its input closes (the stepping process has gone).

It is started as its own module (not multiprocessing), so a user's script without a
``__main__`` guard is never imported again here.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import struct
import sys
import threading


ANSWERED = ("mode", "call")      # the requests answered (by a "done" at least)
_SERVING = {}                    # the call being served: its inbox, client and slot


def superseded() -> bool:
    """Whether a later request of the client and slot of the call being served is waiting
    (it will be served in this one's place): a job may then skip work only its own answer
    would use, e.g. a compile that makes the answer no different in value (a fence's jet:
    ``scenarios/disk_fence/family.worker_jet``).  False outside a worker's call."""
    inbox = _SERVING.get("inbox")
    return inbox is not None and inbox.waiting(_SERVING["cid"], _SERVING["slot"])


def _trace() -> str:
    """The exception being handled, formatted (``traceback`` imported here: the stepping
    process imports this module for ``superseded`` and never formats one, 0.5 ms of its
    start)."""
    import traceback
    return traceback.format_exc()


def read_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack("<I", head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


class _Inbox:
    """Requests from every input, in arrival order, with a look ahead for later ones."""

    def __init__(self):
        self.items = collections.deque()
        self.cond = threading.Condition()
        self.open = 0

    def reader(self, stream, main):
        self.open += 1

        def run():
            try:
                while True:
                    try:
                        req = read_frame(stream)
                    except Exception:  # noqa: BLE001 - a torn frame: the writer has gone
                        req = None
                    if req is None:
                        break
                    with self.cond:
                        self.items.append(req)
                        self.cond.notify()
            finally:
                with self.cond:
                    if main:          # the stepping process has gone: so do we
                        self.items.append((None, None, ("stop",), None))
                    self.cond.notify()

        threading.Thread(target=run, daemon=True).start()

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            return self.items.popleft()

    def waiting(self, cid, slot):
        """Whether a request of client ``cid`` with ``slot`` (not None) is waiting."""
        if slot is None:
            return False
        with self.cond:
            return any(it[0] == cid and it[3] == slot and it[2][0] in ANSWERED
                       for it in self.items)

    def latest(self, cid, slot):
        """The latest waiting request of client ``cid`` with ``slot``, taken out of the inbox in
        place of an earlier one (so a client announcing faster than it is answered is not
        starved by another), with the earlier ones it replaces and the announcements waiting
        ahead of it (cheap, taken first: they may be what it needs).  None if there is none."""
        with self.cond:
            same = [i for i, it in enumerate(self.items)
                    if it[0] == cid and it[3] == slot and it[2][0] in ANSWERED]
            if not same:
                return None
            last = same[-1]
            items = list(self.items)
            ahead = [it for it in items[:last] if it[2][0] in ("constraint", "modedef")]
            skipped = [items[i] for i in same[:-1]]
            taken = set(same) | {i for i in range(last) if items[i][2][0] in ("constraint",
                                                                              "modedef")}
            self.items = collections.deque(it for i, it in enumerate(items) if i not in taken)
            return ahead, skipped, items[last]


class _PeerWriter:
    """Frames for the slow worker, written by a thread of their own."""

    def __init__(self, fd):
        self.stream = os.fdopen(fd, "wb")
        self.queue = collections.deque()
        self.cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def put(self, data):
        with self.cond:
            self.queue.append(data)
            self.cond.notify()

    def _run(self):
        while True:
            with self.cond:
                while not self.queue:
                    self.cond.wait()
                data = self.queue.popleft()
            try:
                self.stream.write(data)
                self.stream.flush()
            except OSError:               # the slow worker has gone (it is started again)
                return


def parse_command_line(argv):
    """(model module, options, job names, set-up name or None, peer_in fd, peer_out fd) of
    the worker's command line (module docstring)."""
    options = {"--job": [], "--set-up": [], "--peer-in": [], "--peer-out": []}
    positional = []
    i = 0
    while i < len(argv):
        if argv[i] in options:
            options[argv[i]].append(argv[i + 1])
            i += 2
        else:
            positional.append(argv[i])
            i += 1
    module = positional[0]
    build_options = json.loads(positional[1]) if len(positional) > 1 else {}
    set_up = options["--set-up"][-1] if options["--set-up"] else None
    peer_in = int(options["--peer-in"][-1]) if options["--peer-in"] else None
    peer_out = int(options["--peer-out"][-1]) if options["--peer-out"] else None
    return module, build_options, tuple(options["--job"]), set_up, peer_in, peer_out


def _build(module, options):
    """The scenario of ``module`` built with ``options``; in an FMU that ships Kane's terms
    (issue 30, ``embed.model.kane_terms``), from them: bit for bit the stepping process's
    model, without deriving Kane's equations a second time."""
    from pathlib import Path
    from embed.base import shipped
    from embed.base.targets import load_target
    from embed.model import kane_terms
    root = Path(__file__).resolve().parents[2]
    name = module.rsplit(".", 1)[-1]
    terms = shipped.load_kane(root, name, options, shipped.tag_of(module))[0]
    with kane_terms.shipped(terms):
        return load_target(f"{module}:build")(**options)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    from embed.background.worker_pipe import NICED, NICENESS
    if NICED in argv:         # started through ``nice`` (``worker_command``)
        argv = [a for a in argv if a != NICED]
    elif hasattr(os, "nice"):
        os.nice(NICENESS)     # if the cores are contended, the stepping process goes first
    module, options, job_names, set_up, peer_in, peer_out = parse_command_line(argv)
    from embed.background.worker_pipe import Relay, frame
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    inbox = _Inbox()
    inbox.reader(stdin, main=True)       # requests wait here while the model is built
    if peer_in is not None:
        inbox.reader(os.fdopen(peer_in, "rb"), main=False)
    peer = _PeerWriter(peer_out) if peer_out is not None else None

    def write(cid, rid, obj):
        stdout.write(frame((cid, rid, obj)))
        stdout.flush()

    from embed.modes.compile import compile_parts
    from embed.modes.functions import lambdify
    from embed.modes.programs import linear_program
    from embed.codegen.native import OPT_FAST, OPT_RUN, NativeFunction, compile_program
    from embed.embedding.equations import EXPLICIT_OPS_OFFLINE
    from embed.modes.forming import AutomatonForms
    from embed.modes.library import ModeLibrary
    from embed.modes.numeric import EntryTerms
    from embed.base.errors import SymbolicBudgetError
    from embed.base.targets import load_target

    sc = _build(module, options)
    forms = AutomatonForms(sc.automaton, ModeLibrary())   # the symbolic layer, no simulator
    defaults = forms.parameter_vector(sc.defaults())
    jobs = {name: load_target(name) for name in job_names}
    if set_up is not None:   # e.g. first-call costs (parsers, LLVM) paid before the first request
        load_target(set_up)(forms, defaults)
    write(None, None, ("ready",))
    entries = set()          # constraint sets whose entry terms were sent
    todo = collections.deque()
    while True:
        cid, rid, req, slot = todo.popleft() if todo else inbox.get()
        if req[0] == "stop":
            return 0
        if (slot is not None and req[0] in ANSWERED
                and (later := inbox.latest(cid, slot)) is not None):
            ahead, skipped, chosen = later       # a later request of this client replaces it
            for _, r, _, _ in [(cid, rid, req, slot)] + skipped:
                write(cid, r, ("done",))
            todo.extendleft(reversed(ahead + [chosen]))
            continue
        if req[0] in ("constraint", "modedef"):
            try:
                if req[0] == "constraint":
                    if forms.automaton.constraints.get(req[1].name) is not None:
                        continue        # announced already (by another client, or again)
                    forms.add_constraint(req[1])
                elif req[1].id not in forms.automaton.modes:
                    forms.add_mode(req[1])
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                write(cid, None, ("error", req[0], f"{type(exc).__name__}: {exc}",
                                  _trace()))
            continue
        if req[0] == "call":
            fname, args = req[1], req[2]
            if fname not in jobs:
                write(cid, rid, ("error", fname, "not a job of this worker (its command line "
                                 f"names {sorted(jobs)})", ""))
                write(cid, rid, ("done",))
                continue
            try:
                _SERVING.update(inbox=inbox, cid=cid, slot=slot)
                for part in jobs[fname](forms, *args):
                    if isinstance(part, Relay):
                        n = sum(r[0] in ANSWERED for r in part.requests)
                        if peer is None:
                            raise RuntimeError("a Relay needs the slow worker (--peer-out)")
                        # told before the slow worker can answer, so its count is right
                        write(cid, rid, ("relayed", n))
                        peer.put(b"".join(frame((cid, rid, r, slot if r[0] in ANSWERED
                                                       else None)) for r in part.requests))
                        part = part.part
                        if part is None:
                            continue
                    write(cid, rid, ("call", fname, part))
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                write(cid, rid, ("error", fname, f"{type(exc).__name__}: {exc}",
                                 _trace()))
            _SERVING.clear()
            write(cid, rid, ("done",))
            continue
        key, opts = req[1], (req[2] if len(req) > 2 else {})
        try:
            parts = forms.mode_parts(key, EXPLICIT_OPS_OFFLINE, opts.get("compose_ops"))
            fns = compile_parts(parts, key, "llvm")
            meta = {k: parts[k] for k in ("kind", "ind", "dep", "sizes")}
            meta["nx"] = len(parts["x"])
            meta["n_fns"] = len(fns)
            meta["frames"] = 1 + sum(fn is not None for fn in fns[1:])
            if parts["kind"] == "linear":
                meta.update(nz=len(parts["z"]), n_ud=parts["n_ud"])
            # one compiled function a frame: loading one is costly in a step that finds the
            # caches cold (docs/design.md, facts), and the stepping process decodes one a step
            write(cid, rid, ("mode", key, meta, fns[:1]))
            for i, fn in enumerate(fns[1:], start=1):
                if fn is not None:
                    write(cid, rid, ("mode_fn", key, i, fn))
            if isinstance(fns[0], NativeFunction) and fns[0].opt == OPT_FAST:
                # a large program came first at codegen level 0 (compiled in a fraction of
                # the time); the faster code follows and replaces it (embed.codegen.native)
                write(cid, rid, ("mode", key, meta, (compile_program(
                    *linear_program(parts), f"the RK4 step of mode {key}", OPT_RUN),)))
            active = key[1]
            if active and active not in entries and opts.get("entry", True):
                entries.add(active)
                write(cid, rid, ("entry", active, EntryTerms(
                    forms.model, forms.constraint_set(active), forms.psyms, "llvm")))
            if opts.get("rhs") and parts["kind"] == "explicit":    # the adaptive solver's
                write(cid, rid, ("rhs", key, lambdify(parts["args"], parts["f"],
                                                      f"rhs of {key}", "llvm")))
            elif opts.get("rhs") and isinstance(fns[0], NativeFunction):
                write(cid, rid, ("rhs", key, compile_program(
                    *linear_program(parts, rhs_only=True), f"rhs of {key}")))
        except SymbolicBudgetError as exc:    # the mode stays on the numeric path: no failure
            write(cid, rid, ("numeric", key, str(exc)))
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            write(cid, rid, ("error", key, f"{type(exc).__name__}: {exc}",
                             _trace()))
        write(cid, rid, ("done",))


if __name__ == "__main__":
    # inside an FMU (``python -m embed_ab12.background.worker``): its modules from the FMU's
    # bytecode bundle, as in the stepping process (they ship without ``__pycache__`` files)
    from embed.base.bundle import install
    install(__spec__.name.split(".")[0][len("embed"):] if __spec__ else "")
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):   # the stepping process has gone: so do we
        sys.exit(0)
