"""The fast path's Python side (issue 30, "Python only on events"): the slave arms the FMU's C
loader (fmu_src/runtime/loader/fast_step.c) to run communication steps with no event without
entering Python, and takes the state those steps made back before anything else reaches it.

After every FMI call that may change the slave's state (``fmi2_call``: all but the getters) the
slave decides, per mode and per call, whether the next steps may run in C (``ineligible``; armed
at the next doStep, ``arm``): a mode whose RK4 step is compiled code (``CompiledMode``: its step,
and its monitors if apart; ``ProgramMode``: one call, its memo included; a mode stepped stage by
stage, ``staged_step``: a free-form fence's ``JetMode``), the fixed-step RK4 integrator, no
formulation's step hook but the engine's projection and watch (``switching.after_step``: the
loader calls Python back for a step whose residual monitor asks for the projection,
``fast_project``, and gives Python a step whose kappa(B1) monitor would re-select,
``after_step_tests``), an idle extension and background compiler (below), no input changed, the
monitors fresh. Then it hands the loader an arming record (``Record``, mirrored by loader.h's
``FastStep``): the compiled step's address, argument and state buffers of its own, the guards'
slice and how each is watched, the RK4 grid, and the outputs fmi2GetReal/GetInteger can answer
from the record. Otherwise it disarms it. The C loop reproduces ``embed.hybrid.stepping._run``'s
arithmetic and tests to the bit and gives any step with an event (a guard due or approaching), a
non-finite value or a refusal to Python whole; before any call reaches Python the loader calls
``sync``, which writes t, x, the monitors, the guards' arming and the communication point back
into the simulator: every Python entry point sees the state the C steps made.

An extension (disk_fence's fence) and the background compiler are idle when a step would ask
nothing of them: the extension has nothing under way and no input to act on (its
``idle(inputs)``: an announcement is an input it takes, in Python; an extension without
``idle`` never is), and the compiler's client has no request outstanding and nothing routed to
it untaken (``BackgroundCompiler.idle``).  Then a Python step's calls of them (``before_step``,
the poll in ``Simulator.advance``, the errors and notes ``do_step`` logs) change nothing, so the
C steps give the same bits as Python's; offline runs wait for every answer in the step that
asks, so nothing is outstanding at a later step.  Real time: answers to a request come only
after the Python step that made it, and the client is not idle until they are installed;
nothing else arrives for an idle client but the notice of a worker restart another instance's
poll made, and the client's ``wake`` (any thread) disarms the record, so that the next doStep
goes to Python and logs it.  The workers' own start (3-7 s of CPU in an offline run) is no
request: it does not keep the record off.  The extension's outputs (``get``) change only in its
calls: the loader serves them as constants, as the simulator's event counters.

EMBED_FAST_STEP=0 in the environment turns the fast path off (both sides), for comparisons.
"""

from __future__ import annotations

import ctypes
import os
import weakref

import numpy as np

from embed.base.tolerances import EVENT_TOL, GRID_TOL, PHI_TOL
from embed.hybrid import events, rehearsal
from embed.hybrid.integrators import RK4
from embed.hybrid.simulator import MAX_STEPS, Simulator
from embed.modes.modes import CompiledMode, ProgramMode
from fmu_src.runtime.fast_project import Projector, after_step_tests
from fmu_src.runtime.fast_stages import c_array as _array, stages_record, staged_step
from fmu_src.runtime.fmi2 import State
from fmu_src.runtime.simulation import extension_inputs

MAX_GUARDS = 64        # fast_step.c's bound on the guards of a mode
LEAD = 1     # doSteps Python takes before the rehearsal's: the first after C's is cold (design.md)
# what fast_step.c assumes of embed.hybrid.events
assert (events.UNARMED, events.ARMED, events.HELD) == (0, 1, 2)
assert events.LEVEL == {events.ARMED: 0.0, events.HELD: -events.PROBE_G}

# the simulator's attributes outputs read that change only at events (or at the start)
CONSTANT_ATTRIBUTES = {("attr", a) for a in ("mode_number", "event_count", "impact_count",
                                             "last_event_time", "start_correction")}
_P, _I, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
_SYNC = ctypes.CFUNCTYPE(None)
_PROJECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double, ctypes.c_void_p)


class Record(ctypes.Structure):
    """loader.h's ``FastStep``, field for field."""

    _fields_ = [("f", _P), ("sync", _P), ("args", _P), ("y", _P), ("s1", _P), ("s2", _P),
                ("armed", _P), ("enabled", _P), ("served_vr", _P), ("served_at", _P),
                ("served_value", _P),
                ("on", _I), ("pending", _I), ("nx", _I), ("ny", _I), ("g0", _I), ("ng", _I),
                ("rehearsed", _I), ("nserved", _I),
                ("t", _D), ("t0", _D), ("h_max", _D), ("t_next", _D), ("t_comm", _D),
                ("grid_tol", _D), ("event_tol", _D), ("probe_g", _D), ("max_steps", _D),
                ("int_vr", _P), ("int_value", _P), ("int_boolean", _P), ("nint", _I),
                ("armable", _I), ("arm", _P),
                ("i_res", _I), ("i_kappa", _I), ("phi_tol", _D), ("kappa_max", _D),
                ("fm", _P), ("memo", _I), ("approach_steps", _D), ("stages", _P),
                ("project", _P), ("projected", _I)]


def enabled():
    """Whether the fast path may run in this process (EMBED_FAST_STEP=0 turns it off)."""
    return os.environ.get("EMBED_FAST_STEP", "1") != "0"


def install(slave):
    """The slave's ``FastStep``, registered with its loader, or None (no C loader: a slave
    constructed in Python; or turned off)."""
    lib = slave.loader._lib
    if lib is None or not enabled() or not hasattr(lib, "embed_fast_set"):
        return None
    return FastStep(slave, lib)


def step_function(mode):
    """The addresses (f, fm) of ``mode``'s compiled RK4 step f([t, h, x, p, tail]) -> [x,
    monitors, sum |x|] (fm 0), or, a mode with its monitors apart, f -> [x, sum |x|] and its
    monitors fm([t + h, 0, x, p, tail]), when they are the whole of its ``rk4``
    (``CompiledMode``'s, ``ProgramMode``'s: one call, the monitors in it) and its arguments
    are ``_load``'s (``step_arguments``); else None.  A program's memo (``programs.Memo``:
    the last step's final stage, global to the compiled code) is read and written by the C
    steps as by Python's (holding the GIL, as Python's calls do: ``Record.memo``): a remembered
    evaluation is used only where the arguments it read are the same to the bit, so whoever
    made it, the result is the same."""
    kind = type(mode)
    if not isinstance(mode, CompiledMode) or \
            (kind.rk4, kind._load) not in ((CompiledMode.rk4, CompiledMode._load),
                                           (ProgramMode.rk4, ProgramMode._load)):
        return None
    apart = kind.rk4 is CompiledMode.rk4 and mode._mon is not None
    f, fm = _address(mode._step), _address(mode._mon) if apart else 0
    return None if f is None or fm is None else (f, fm)


def step_arguments(mode, x, p):
    """The arguments [t, h, x..., p..., tail...] of ``mode``'s step as its ``rk4`` loads them
    (the tail: a program's correction flag, a partition), t and h left for the loader; a
    staged mode's: [t, h, x..., p...]."""
    if not isinstance(mode, CompiledMode):
        return np.concatenate(([0.0, 1.0], x, p))
    return mode._load(0.0, 1.0, x, p).copy()


def _address(fn):
    """The address of a compiled function's code, or None.  A lambda function's translation
    not called yet (``LambdaNative``, its ``_f`` read at its first call): its function's,
    placed now if it was left for its first call (``native._unpickled``)."""
    f = getattr(fn, "_f", None)
    if f is None and getattr(fn, "native", None) is not None:
        f = getattr(fn.native, "_f", None)
    return None if f is None else ctypes.cast(f, ctypes.c_void_p).value


def extension_outputs(slave):
    """The names of the outputs of the scenario's extension (constant while it is idle)."""
    ext = slave.sc.extension
    return {v.name for v in ext.outputs} if ext is not None else set()


def ineligible(slave, workers=True):
    """Why the next communication steps may not run in C, or None if they may (``workers``
    False: as if the background workers had started)."""
    sim = slave.sim
    if slave.fmi_state != State.STEP_COMPLETE or sim is None:
        return "not in step mode"
    if slave.status or slave.broken is not None:
        return "a failed or refused call to report"
    if workers and getattr(slave, "workers_later", None) is not None:
        return "the background workers start at a doStep (simulation.start_workers_later)"
    if slave.variables.inputs_changed or sim.flags.dirty or sim.flags.rearm:
        return "inputs changed"
    if type(sim.integrator) is not RK4 or type(sim).accept is not Simulator.accept:
        return "not the fixed-step RK4 loop"
    st = sim.state
    m = st.compiled_mode
    if step_function(m) is None:
        # (asked before staged_step, which copies the mode's buffer: after every Python call)
        if hasattr(m, "c_stages") and getattr(slave, "real_time", False):
            return (f"mode {m.key} is stepped stage by stage: in Python in a real-time run, whose "
                    "steps keep its projection's and events' Python warm")   # (docs/design.md)
        if staged_step(m) is None:
            return f"mode {m.key}'s step is not compiled code"
    if (st.projection.holonomic or st.watch or sim.after_every_step) \
            and after_step_tests(sim) is None:
        return "a formulation's step hook"
    if st.mon.size != m.n_mon or st.x.size != m.nx:
        return "state and mode sizes differ"
    if m.sl_guards.stop - m.sl_guards.start > MAX_GUARDS:
        return "too many guards"
    idle = getattr(slave.ext, "idle", None)       # (the costlier questions last)
    if slave.ext is not None and (idle is None or not idle(extension_inputs(slave))):
        return "the extension has work under way or an input to take"
    if sim.compiler is not None and not sim.compiler.idle():
        return "the background compiler has an answer to come or to take"
    return None


class FastStep:
    """One slave's arming record and the buffers it points to (kept alive here)."""

    def __init__(self, slave, lib):
        self.rec = Record(grid_tol=GRID_TOL, event_tol=EVENT_TOL, probe_g=events.PROBE_G,
                          phi_tol=PHI_TOL, i_res=-1, i_kappa=-1,
                          max_steps=float(MAX_STEPS), rehearsed=-1,
                          approach_steps=float(rehearsal.STEPS + LEAD))
        ref = weakref.ref(slave)     # the slave owns this object: no cycle through the callback
        self._callback = _SYNC(lambda: self.sync(ref()))
        self.rec.sync = ctypes.cast(self._callback, ctypes.c_void_p).value
        self._arm_callback = _SYNC(lambda: self.arm(ref()))
        self.rec.arm = ctypes.cast(self._arm_callback, ctypes.c_void_p).value
        self._projector = Projector()
        self._project_callback = _PROJECT(lambda t, y: self._projector(ref(), self.rec, t, y))
        self.rec.project = ctypes.cast(self._project_callback, ctypes.c_void_p).value
        self.reason = "not armed yet"
        self._keep = ()
        self._prepared = False
        self._rehearsed = (None, None)   # (rehearsed, warmed) at the last ``update``
        self._mode = None
        self._served = None
        self._ints = None
        lib.embed_fast_set.argtypes = [ctypes.c_void_p]
        lib.embed_fast_set(ctypes.addressof(self.rec))

    def served(self, slave):
        """(vr, kind, where) of the Real outputs fmi2GetReal may read from the record: a
        monitor (kind "mon": the state buffer), or one constant between events (kind "const":
        a discrete variable, the last event's time, the start's correction; ``where`` is its
        getter, read at arming)."""
        if self._served is None:
            sc, out, ext = slave.sc, [], extension_outputs(slave)
            for vr, getter in slave.variables.getters.items():
                kind, where = sc.source(slave.variables.specs[vr][0].name)
                if kind == "mon":
                    out.append((vr, kind, where))
                elif kind == "discrete" or (kind, where) in CONSTANT_ATTRIBUTES:
                    out.append((vr, "const", getter))
            out += [(vr, "const", slave.vars[vr].getter) for vr, (v, _) in
                    slave.variables.specs.items() if v.name in ext and v.type == "Real"]
            self._served = out
        return self._served

    def constant_integers(self, slave):
        """[(vr, getter, is Boolean)] of the Integer and Boolean outputs that change only at
        events or calls: the ``status`` output, the extension's and those read from the
        simulator's attributes (``mode``, counters) or discrete variables, never a monitor."""
        if self._ints is None:
            out, ext = [], extension_outputs(slave)
            for vr, (v, causality) in slave.variables.specs.items():
                if v.type not in ("Integer", "Boolean") or causality.name != "output" \
                        or vr not in slave.vars:
                    continue
                try:
                    source = (("status", None) if v.name == "status" or v.name in ext
                              else slave.sc.source(v.name))
                except KeyError:
                    continue
                if source[0] in ("status", "discrete") or source in CONSTANT_ATTRIBUTES:
                    out.append((vr, slave.vars[vr].getter, v.type == "Boolean"))
            self._ints = out
        return self._ints

    def update(self, slave):
        """Disarm the record, and say whether the slave's current state may be armed
        (``ineligible``): the loader arms it (``arm``) when the next doStep comes, so that a
        master setting an input before every step pays no arming it never uses."""
        rec = self.rec
        rec.on = rec.armable = 0
        self._projector.charts.clear()     # (synced before this call reached Python)
        rec.projected = 0
        early = False
        try:
            self.reason = ineligible(slave)
            # the workers start at the second doStep: the buffers are made before it
            early = (not self._prepared and getattr(slave, "workers_later", None) is not None
                     and ineligible(slave, workers=False) is None)
        except Exception as exc:  # noqa: BLE001 - the Python path serves all the same
            self.reason = f"internal error: {type(exc).__name__}: {exc}"
        rec.armable = self.reason is None
        flags = slave.sim.flags if slave.sim is not None else None
        rehearsed = (flags.rehearsed, flags.warmed) if flags is not None else (None, None)
        if rec.armable and rehearsed != self._rehearsed and rehearsed != (None, None):
            # an event rehearsed, or its parts warmed, in the call just made
            # (``embed.hybrid.rehearsal``): the next step is as a rule the event's or its
            # rehearsal's, which C gives to Python; arming for it cost 0.05-0.13 ms of a
            # 1 ms contact step (issue 30, tails).  One step, not more
            self.reason = "an event was rehearsed: the next step is likely the event's"
            rec.armable = 0
        self._rehearsed = rehearsed
        if not self._prepared and (rec.armable or early):
            self.prepare(slave)

    def prepare(self, slave):
        """The record's buffers made now, in the call that first finds the slave armable
        (fmi2ExitInitializationMode's, as a rule), and left disarmed: the first arming
        allocates a dozen ctypes arrays and their types and reads the served outputs' sources
        (0.77 ms measured, against 0.06-0.09 ms for a re-arming), which made the first doStep
        cost 0.9-1.2 ms (issue 30, tails).  The doStep arms it again (``arm``: values only)."""
        self._prepared = True
        self.arm(slave)
        self.rec.on = 0
        self.rec.armable = self.reason is None

    def arm(self, slave):
        """Arm the record for the slave's state (the loader's callback at a doStep)."""
        self.rec.armable = 0
        try:
            if slave is not None:
                self._arm(slave)
        except Exception as exc:  # noqa: BLE001 - a ctypes callback: nothing may escape
            self.rec.on = 0
            self.reason = f"internal error: {type(exc).__name__}: {exc}"

    def _arm(self, slave):
        rec = self.rec
        sim = slave.sim
        st, integ = sim.state, sim.integrator
        m = st.compiled_mode
        nx, sl = m.nx, m.sl_guards
        y = np.concatenate((st.x, st.mon, [0.0]))     # [x, monitors, (sum |x|: unread)]
        args = step_arguments(m, st.x, st.pvec)
        served, ints = self.served(slave), self.constant_integers(slave)
        vals = [0.0 if k == "mon" else float(w()) for _, k, w in served]     # get_real's
        ivals = [int(bool(g())) if b else int(g()) for _, g, b in ints]      # get_values'
        if self._keep and self._mode is m and self._args.size == args.size:
            # the same mode as at the last arming (an input set every step re-arms after
            # every doStep): its buffers take the new values, nothing is allocated
            # (a mode with no guards has arrays of one unused element: ``_array``)
            self._args[:], self._y[:] = args, y
            armed, on = [int(a) for a in st.armed], [int(bool(e)) for e in st.enabled]
            self._armed[:len(armed)], self._on[:len(on)] = armed, on
            self._val[:len(vals)], self._ival[:len(ivals)] = vals, ivals
        else:
            self._buffers(m, args, y, st, served, ints, vals, ivals)
        rehearsed = sim.flags.rehearsed
        rec.rehearsed = next((i for i in range(sl.stop - sl.start)
                              if (st.mode, i) == rehearsed), -1)
        rec.nx, rec.ny, rec.g0, rec.ng = nx, y.size, sl.start, sl.stop - sl.start
        rec.t, rec.t0, rec.h_max, rec.t_next = st.t, integ.t0, integ.h_max, integ.t_next
        rec.t_comm = slave.t_comm
        rec.i_res, rec.i_kappa, rec.kappa_max = after_step_tests(sim)
        rec.pending = 0
        rec.on = 1
        bc = sim.compiler
        if bc is not None:     # an answer routed by another thread from now on disarms it;
            bc.wake = self.wake     # one routed since ``update`` asked: not armed (``idle``)
            if not bc.idle():
                rec.on = 0

    def wake(self):
        """Something was routed to the background compiler's client (any thread): the next
        call goes to Python (synced first, as always), which takes it."""
        self.rec.on = 0

    def _buffers(self, m, args, y, st, served, ints, vals, ivals):
        """The record's buffers for mode ``m``, allocated (kept alive in ``_keep``)."""
        rec, nx, ny = self.rec, m.nx, y.size
        a, a_args = _array(ctypes.c_double, args.tolist())
        ybuf, a_y = _array(ctypes.c_double, y.tolist())
        s1, a_s1 = _array(ctypes.c_double, [0.0] * ny)
        s2, a_s2 = _array(ctypes.c_double, [0.0] * ny)
        armed, a_armed = _array(ctypes.c_int, [int(x) for x in st.armed])
        on, a_on = _array(ctypes.c_int, [int(bool(e)) for e in st.enabled])
        vrs, a_vrs = _array(ctypes.c_uint, [vr for vr, _, _ in served])
        at, a_at = _array(ctypes.c_int, [nx + w if k == "mon" else -1 for _, k, w in served])
        val, a_val = _array(ctypes.c_double, vals)
        ivr, a_ivr = _array(ctypes.c_uint, [vr for vr, _, _ in ints])
        ival, a_ival = _array(ctypes.c_int, ivals)
        ib, a_ib = _array(ctypes.c_int, [int(b) for _, _, b in ints])
        self._keep = (a, ybuf, s1, s2, armed, on, vrs, at, val, ivr, ival, ib)
        self._projector.views = {a_s1: np.frombuffer(s1, count=ny),
                                 a_s2: np.frombuffer(s2, count=ny)}
        self._mode = m
        self._args, self._y = np.frombuffer(a, count=args.size), np.frombuffer(ybuf, count=ny)
        self._armed, self._on, self._val, self._ival = armed, on, val, ival
        stages = staged_step(m)
        rec.f, rec.fm = step_function(m) or (None, None)
        rec.stages = None
        if stages is not None:
            rec.stages, kept = stages_record(m, stages)
            self._keep += kept
        fns = getattr(m, "fns", ()) if stages is not None else (getattr(m, "_step", None),)
        rec.memo = any(getattr(fn, "memo", None) is not None for fn in fns)
        rec.args, rec.y, rec.s1, rec.s2 = a_args, a_y, a_s1, a_s2
        rec.armed, rec.enabled = a_armed, a_on
        rec.served_vr, rec.served_at, rec.served_value = a_vrs, a_at, a_val
        rec.nserved = len(served)
        rec.int_vr, rec.int_value, rec.int_boolean, rec.nint = a_ivr, a_ival, a_ib, len(ints)

    def sync(self, slave):
        """The state the C steps made, into the simulator and the slave (the loader calls this
        before any call reaches Python): as ``Simulator.accept`` and ``stepping._run`` leave
        it."""
        rec = self.rec
        if slave is None or not rec.pending:
            return
        rec.pending = 0
        try:
            sim = slave.sim
            st = sim.state
            self._projector.commit(st, rec.projected)
            rec.projected = 0
            y = self._y.copy()
            nx = rec.nx
            st.x, st.mon = y[:nx], y[nx:-1]
            st.t = rec.t
            sim.integrator.t_next = rec.t_next
            st.armed = tuple(self._armed[:rec.ng])
            slave.t_comm = rec.t_comm
        except Exception as exc:  # noqa: BLE001 - a ctypes callback: nothing may escape
            rec.on = 0
            slave.loader.log_now(3, f"fast path: the state could not be synced: {exc}")
