"""The slave's simulator, built from the FMU's variables at initialization (and at
instantiation, for the outputs' exact start values), and the inputs it takes at each step.
"""

from __future__ import annotations

import ctypes
import math
import os
import weakref

import numpy as np
from pythonfmu.enums import Fmi2Status

from embed import EmbedError
from embed.base.helper_class import run_below, stepping_cpus
from fmu_src.runtime.fmi2 import CallError
from fmu_src.runtime.instances import compiler
from fmu_src.runtime.status import INPUT_REJECTED, describe, model_broken, status_of
from fmu_src.runtime.variables import FORMULATION

WORKER_START_TIMEOUT = 60.0   # s that initialization waits for the background worker's start


def initialize(slave):
    """fmi2ExitInitializationMode's simulator: the start values checked, the simulator
    started (``start_sim``), warmed up, and its background workers waited for; CallError
    naming what stopped it."""
    slave.status = 0
    if slave.variables.rejected:
        raise CallError("initialization failed: values were refused for "
                        f"{'; '.join(slave.variables.rejected.values())}; set valid values (the "
                        "defaults are not used instead) and call fmi2ExitInitializationMode "
                        "again", code=INPUT_REJECTED)
    slave.read_inputs()
    failed = start_sim(slave)
    if failed is not None:
        fix = ("fix the model (embed-fmu check) and build the FMU again"
               if model_broken(failed) else "set valid parameters and call "
               "fmi2ExitInitializationMode again")
        raise CallError(f"initialization failed: {describe(failed)}; {fix}",
                        code=status_of(failed))
    try:
        # first calls made now, scipy's LAPACK loaded, and every shipped function placed
        # only for a real-time run (an offline run pays each at its first use, if any:
        # issue 30, start-up)
        real_time = bool(getattr(slave, "real_time", False))
        slave.sim.warm_up(calls=real_time)
        if real_time:
            from embed.codegen.native import place_pending
            place_pending()
            keep_warm(slave)
            gil_gate(slave)
    except Exception as exc:  # noqa: BLE001 - warming is an optimization only
        slave.log(f"warm-up skipped: {exc}", Fmi2Status.warning)
    if not workers_ready(slave.sim, WORKER_START_TIMEOUT):
        slave.log(f"background embedding worker not ready after {WORKER_START_TIMEOUT} s;"
                  " stepping on the numeric path until it is", Fmi2Status.warning)


KEEP_WARM_MS = 30      # ms between the sweeps over the process's pages (EMBED_KEEP_WARM)


def keep_warm(slave) -> None:
    """A real-time run's pages kept warm between events (fmu_src/runtime/loader/keep_warm.c:
    on the machines measured, 1-3 % of the pages left alone for 0.2-1 s cost 130 us each at
    their next touch, docs/design.md).  EMBED_KEEP_WARM: the period in ms, 0 turns it off;
    30 (not 100) took the steps over 1 ms of CPU with two large fences from 9-14 to 0-1 in
    six runs, for about 17 % of a core against 8.5 % (docs/benchmarks.md)."""
    lib = getattr(slave.loader, "_lib", None)
    start = getattr(lib, "embed_keep_warm", None)
    try:
        period = int(os.environ.get("EMBED_KEEP_WARM", KEEP_WARM_MS))
    except ValueError:
        period = KEEP_WARM_MS
    if start is None or period <= 0:
        return
    start.argtypes = [ctypes.c_int]
    # started from a thread kept off this (the stepping) thread's CPUs: the sweeper takes
    # that thread's affinity (helper_class.run_below)
    if run_below(lambda: start(period), away_from=stepping_cpus()) != 0:
        slave.log("the page-warming thread did not start: steps after seconds without an "
                  "event may find their memory cold", Fmi2Status.warning)


def gil_gate(slave) -> None:
    """A real-time run's loader thread gives the GIL way to FMI calls: at its next Python call
    or return after one began, it drops the GIL and waits until none is under way
    (fmu_src/runtime/loader/gil_gate.c), so that a doStep never waits out the switch interval
    for the GIL while a fence is placed (issue 30, tails); the page-warming thread pauses
    while the loader works (``loader_thread.WORKING``)."""
    gate = getattr(getattr(slave.loader, "_lib", None), "embed_gil_gate", None)
    if gate is None:
        return
    from embed.codegen import loader_thread
    loader_thread.start_loader(away_from=stepping_cpus())
    # called holding the GIL (PYFUNCTYPE), in the loader thread (PyEval_SetProfile is its own)
    at = ctypes.cast(gate, ctypes.c_void_p).value
    gate = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(at)
    held, working = map(ctypes.addressof, (loader_thread.HOLD, loader_thread.WORKING))
    if loader_thread.run_later(lambda: gate(held, working)).result(timeout=10) == 1:
        lib = slave.loader._lib
        lib.embed_gate_pause.restype, lib.embed_gate_resume.restype = ctypes.c_int, None
        loader_thread.GATE[:] = [lib.embed_gate_pause, lib.embed_gate_resume]
    else:
        slave.log("the loader thread is not gated (no PyEval_SetProfile in this Python, or the "
                  "FMU's binary could not be kept loaded): a step may wait for the GIL while a "
                  "fence is placed", Fmi2Status.warning)


def start_sim(slave, worker=True):
    """The slave's simulator from its parameters, at the start time; ``worker``: start the
    background embedding worker if the embedding asks for it (not at build time, when
    pythonfmu only reads the start values).  Returns None if it started, else the
    exception that stopped it (``slave.sim`` is then None)."""
    for name, pname in slave.sc.input_defaults.items():   # "used when set"
        if name not in slave.variables.inputs_set:
            val = getattr(slave, pname)
            setattr(slave, name, val)
            slave.variables.good_inputs[name] = float(val)
    slave.close_client()
    slave.sim = None
    try:
        embedding = str(slave.embedding)
        if embedding == "background" and not worker:
            embedding = "numeric"     # (on the background path's shipped library: formed.load)
        # a scenario without an extension (whose jobs run in the workers) starts them at
        # its first request: never, where every mode it enters was shipped compiled; one
        # with an extension offline at its second doStep (``start_workers_later``)
        real_time = bool(getattr(slave, "real_time", False))
        ext = slave.sc.extension is not None
        bc = (compiler(slave.scenario_name, slave.scenario_options, resource_dir(slave.resources),
                       lazy=not (ext and real_time), idle=real_time)
              if embedding == "background" else None)
        slave.workers_later = [bc, 1] if bc is not None and ext and worker else None
        if bc is not None:     # an instance freed without fmi2Terminate leaves too
            weakref.finalize(slave, bc.close)
            bc.real_time = real_time
            bc.deadline = float(getattr(slave, "worker_deadline", 20.0))
        params = {v.name: float(getattr(slave, v.name)) for v in slave.sc.parameters}
        formulation, options = formulation_of(slave)
        sim = slave.sc.simulator(params, solver=str(slave.solver), h_max=float(slave.h_max),
                                rtol=float(slave.rtol), inputs=dict(slave.variables.good_inputs),
                                embedding=embedding, compiler=bc, t0=slave.start_time,
                                formulation=formulation, formulation_options=options)
        if not np.isfinite(sim.mon).all():
            bad = [name for name, x in slave.sc.observe(sim).items()
                   if isinstance(x, float) and not math.isfinite(x)]
            raise EmbedError(f"the initial state is not finite (outputs {bad}); check the "
                             "parameters' magnitudes")
        slave.sim = sim
        if sim.start_log:
            slave.log(sim.start_log, Fmi2Status.ok)
        if slave.sc.extension is not None:
            from fmu_src.runtime.formed import extension
            slave.ext = extension(slave.sc, slave.scenario_name, slave.scenario_options,
                                  str(slave.embedding) == "background")(
                slave.sim, bc, lambda msg: slave.log(msg, Fmi2Status.warning))
    except Exception as exc:   # noqa: BLE001 - never let an exception reach pythonfmu
        return exc
    return None


def start_workers_later(slave):
    """Called at each doStep while ``slave.workers_later`` is set: the background workers of
    an offline run of a scenario with an extension (disk_fence) started at its second doStep
    (in a thread, ``Workers._wake``), not at initialization.  Each request waits for its
    answer offline (the same bits at any pace), and a request made earlier starts them
    itself; their two spawns (``fork_exec``) and their interpreters' start, which shared the
    cores with the initialization, no longer delay the first step (issue 30, start-up).  A
    real-time run starts them at initialization and waits for them there
    (``workers_ready``)."""
    bc, first = slave.workers_later
    if first:
        slave.workers_later[1] = 0
    else:
        slave.workers_later = None
        bc.start()


def workers_ready(sim, timeout) -> bool:
    """At the end of initialization of a real-time run: the background workers' start
    (imports, the model: seconds of CPU) waited for, at most ``timeout`` s, so that the
    master's first steps do not share the core with it; not for lazy workers
    (``BackgroundCompiler``) whose automaton's every mode has its compiled-terms program.
    An offline run (``real_time`` false) never waits here: each request it makes waits for
    its answer (the same bits at any pace), so its workers start while it steps (disk_fence:
    7 s of initialization before).  Returns False if they are still not ready."""
    bc = sim.compiler
    if bc is None or not bc.real_time or not (bc.started or worker_needed(sim)):
        return True
    return bc.wait_ready(timeout)


def worker_needed(sim) -> bool:
    """Whether the background workers may be asked for one of the automaton's own modes:
    some mode has no prepared compiled-terms program (``PreparedPrograms.terms_mode``: any
    partition, shipped or compiled at warm-up), or the integrator needs the right-hand side
    alone (the adaptive solver: no program serves it)."""
    if sim.mode_compiler.uses_rhs:
        return True
    programs = sim.library.terms_programs
    return any(programs.get((mid, tuple(sorted(md.constraints)))) is None
               for mid, md in sim.aut.modes.items())


def formulation_of(slave):
    """(formulation, its options) from the FMU parameters (their defaults before they are
    registered: the start values are computed first)."""
    opts = {name: getattr(slave, name, start) for name, start, _, _ in FORMULATION[1:]}
    return str(getattr(slave, "formulation", "embedding")), opts


def resource_dir(resources):
    """The FMU's resources folder (from its URI) (holding embed/ and scenarios/), if it has one."""
    from urllib.parse import unquote, urlparse
    res = resources or ""
    path = unquote(urlparse(res).path) if res.startswith("file:") else res
    return path if path and os.path.isdir(os.path.join(path, "embed")) else None


def read_inputs(slave):
    """Inputs the master changed (each was checked when set) go to the simulator, all or
    none: one the engine refuses is set back to its last good value."""
    if not slave.variables.inputs_changed:        # the per-step cost when nothing was set
        return
    slave.variables.inputs_changed = False
    good = slave.variables.good_inputs
    new = {name: float(getattr(slave, name)) for name in slave.variables.input_names}
    if new == good:
        return
    if slave.sim is not None:
        try:
            slave.sim.set_inputs(new)
        except Exception:
            for name, value in good.items():
                setattr(slave, name, value)
            raise
    good.update(new)


def extension_inputs(slave):
    """The values of the inputs of the scenario's extension, FMI 3.0's arrays too (its
    ``before_step``'s argument, and its ``idle``'s: fmu_src/runtime/fast_step.py)."""
    return {**{n: getattr(slave, n) for n in slave.ext_inputs}, **slave.arrays.values}
