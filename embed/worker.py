"""Background embedding worker: ``python -m embed.worker SCENARIO OPTIONS_JSON``.

gillespie2005 Sec 6.2 (Fig 11): symbolic embedding runs in parallel with numerical
integration.  A thread of the stepping interpreter would hold its GIL through every
compile (DESIGN.md: 2-20 ms stalls), so this runs as its own process.  It builds the
scenario once, then answers requests read from stdin, each a length-prefixed pickle:

- ("mode", key[, options]): embed the mode (eq 11-16) and compile it with LLVM; the answer
  is ("mode", key, meta, (first function,)) and ("mode_fn", key, i, function) for its other
  functions, one compiled function a frame (LLVM functions pickle), then, unless options
  say "entry": False, the constraint set's entry terms ("entry", active, EntryTerms) and, if
  "rhs", the adaptive solver's right-hand side ("rhs", key, function); "compose_ops" raises
  how large monitors may be to go into the composed RK4 step (one function, one load);
- ("constraint", constraint) and ("modedef", mode): announced at run time, for later modes;
- ("call", fname, args): a scenario's own background work (its module's WORKER_CALLS),
  answered part by part, one frame each;
- ("stop",): exit.

Every "mode" and "call" request is followed, once answered, by a ("done",) frame, so
that the stepping process polls only while something is outstanding.  The worker runs
at a lower priority (nice 10) than the stepping process.

It is started as its own module (not multiprocessing), so a user's script without a
``__main__`` guard is never imported again here.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import sys
import traceback


def read_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack("<I", head)
    return pickle.loads(stream.read(size))


def write_frame(stream, obj):
    from embed.background import frame
    stream.write(frame(obj))
    stream.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if hasattr(os, "nice"):
        os.nice(10)           # if the cores are contended, the stepping process goes first
    name, options = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    from embed import geometry
    geometry.CHECK_TIME_LIMIT = float(os.environ.get("EMBED_CHECK_TIME_LIMIT", "2.0"))
    import scenarios
    from embed.compile import compile_parts, lambdify
    from embed.embedding import EXPLICIT_OPS_OFFLINE
    from embed.numeric import EntryTerms
    from embed.simulator import Simulator

    sc = scenarios.load(name).build(**options)
    sim = Simulator(sc.automaton, sc.defaults(), embedding="symbolic")
    warm = getattr(scenarios.load(name), "warm_worker", None)
    if warm is not None:     # first-call costs (parsers, LLVM) paid before the first request
        warm(sim)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    write_frame(stdout, ("ready",))
    entries = set()          # constraint sets whose entry terms were sent
    while True:
        req = read_frame(stdin)
        if req is None or req[0] == "stop":
            return 0
        if req[0] == "constraint":
            sim.add_constraint(req[1])
            continue
        if req[0] == "modedef":
            sim.add_mode(req[1])
            continue
        if req[0] == "call":
            fname, args = req[1], req[2]
            module = scenarios.load(name)
            if fname not in getattr(module, "WORKER_CALLS", ()):
                write_frame(stdout, ("error", fname, "not a worker call of " + name, ""))
                write_frame(stdout, ("done",))
                continue
            try:
                for part in getattr(module, fname)(sim, *args):
                    write_frame(stdout, ("call", fname, part))
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                write_frame(stdout, ("error", fname, f"{type(exc).__name__}: {exc}",
                                     traceback.format_exc()))
            write_frame(stdout, ("done",))
            continue
        key, opts = req[1], (req[2] if len(req) > 2 else {})
        try:
            parts = sim.mode_parts(key, EXPLICIT_OPS_OFFLINE, opts.get("compose_ops"))
            fns = compile_parts(parts, key, "llvm")
            meta = {k: parts[k] for k in ("kind", "ind", "dep", "sizes")}
            meta["nx"] = len(parts["x"])
            meta["n_fns"] = len(fns)
            meta["frames"] = 1 + sum(fn is not None for fn in fns[1:])
            if parts["kind"] == "linear":
                meta.update(nz=len(parts["z"]), n_ud=parts["n_ud"])
            # one compiled function a frame: loading one costs the stepping process 0.1-0.4 ms
            # in a step that finds the caches cold, and it decodes one frame a step
            write_frame(stdout, ("mode", key, meta, fns[:1]))
            for i, fn in enumerate(fns[1:], start=1):
                if fn is not None:
                    write_frame(stdout, ("mode_fn", key, i, fn))
            active = key[1]
            if active and active not in entries and opts.get("entry", True):
                entries.add(active)
                write_frame(stdout, ("entry", active, EntryTerms(
                    sim.model, sim.constraint_set(active), sim.psyms, "llvm")))
            if opts.get("rhs") and parts["kind"] == "explicit":    # the adaptive solver's
                write_frame(stdout, ("rhs", key, lambdify(parts["args"], parts["f"],
                                                          f"rhs of {key}", "llvm")))
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            write_frame(stdout, ("error", key, f"{type(exc).__name__}: {exc}",
                                 traceback.format_exc()))
        write_frame(stdout, ("done",))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):   # the stepping process has gone: so do we
        sys.exit(0)
