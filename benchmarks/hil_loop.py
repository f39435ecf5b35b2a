"""The 1 kHz wall-clock loop of the hardware-in-the-loop masters (hil_disk_fence, hil_chain).

An FMU stepped once per millisecond of wall-clock time through fmpy's ctypes bindings with
value-reference and value arrays made once, as a rig's C master would (fmpy's convenience
wrappers build them at every call): fmi2SetInteger at the scheduled cycles, fmi2DoStep,
fmi2GetReal, fmi2GetInteger.  A deadline is missed when a cycle (inputs, doStep, outputs) has
not finished by the end of its millisecond.

The master spins between cycles, keeping its core (another thread takes it only by preempting
it); with HIL_PACE=sleep in the environment it sleeps until SPIN before each cycle and spins
the rest, giving the core up between cycles as a rig that sleeps does (measured worse here:
docs/benchmarks.md).

``floor`` runs the same loop over the trivial pythonfmu FMU (benchmarks/floor_fmu.py: one
Euler step of x' = -x in Python): what any pythonfmu FMU's step costs on this machine in the
same run, the figures' floor (issue 30, tails).
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np


SPIN = 2e-4      # s: HIL_PACE=sleep sleeps until this long before a cycle, then spins


def realtime_policy():
    """Ahead of the FMU's background worker and other processes, if permitted: nice -10, or
    with HIL_POLICY=fifo in the environment SCHED_FIFO at priority 50, as a rig's stepping
    thread (pace it with HIL_PACE=sleep there: a thread that never sleeps in the real-time
    class is throttled)."""
    if os.environ.get("HIL_POLICY") == "fifo":
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
            return "SCHED_FIFO 50"
        except (AttributeError, OSError):
            pass
    try:
        os.nice(-10)
        return "nice -10"
    except (AttributeError, OSError):
        return "nice 0"


def run(runner, seconds, out_real, out_int, actions, cpu=False):
    """Step ``runner`` (fmu_src.host.master.FmuRunner, initialized) at 1 kHz for ``seconds``.

    ``actions``: {cycle k: [(input name, value), ...]} (or one pair) set before that cycle's
    doStep, an integer by fmi2SetInteger, a str by fmi2SetString (outside the doStep time).
    Returns a dict: step_us (doStep alone), cpu_us (with ``cpu``: the CPU time of the
    stepping thread in doStep, which a loaded machine's other processes do not add to),
    queue_us (with ``cpu``: its time waiting on the run queue in doStep), sys_us, faults,
    switches (with ``cpu``: the doStep's system CPU time, tick-sampled, minor and major page
    faults and context switches: getrusage(RUSAGE_THREAD)), cycle_us, wake_us
    (how late each cycle began), misses, timeline [(t, ints..., reals..., doStep us)]
    whenever an integer output changed, and the last reals and ints."""
    from fmpy.fmi2 import fmi2Integer, fmi2Real, fmi2True, fmi2ValueReference
    f = runner.fmu
    sleep = os.environ.get("HIL_PACE", "spin") == "sleep"
    vr_real = (fmi2ValueReference * len(out_real))(*[runner.vr(k) for k in out_real])
    vr_int = (fmi2ValueReference * len(out_int))(*[runner.vr(k) for k in out_int])
    acts = {k: [((fmi2ValueReference * 1)(runner.vr(name)),
                 v if isinstance(v, str) else (fmi2Integer * 1)(int(v)))
                for name, v in ([a] if isinstance(a[0], str) else a)]
            for k, a in actions.items()}
    real = (fmi2Real * len(out_real))()
    ints = (fmi2Integer * len(out_int))()
    comp, do_step = f.component, f.fmi2DoStep
    get_real, get_int, set_int = f.fmi2GetReal, f.fmi2GetInteger, f.fmi2SetInteger
    n = int(round(seconds * 1000))
    dt = 1e-3
    step_us, cycle_us, wake_us, cpu_us = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    thread_ns = time.thread_time_ns
    # the stepping thread's time waiting on the run queue (schedstat's second field): the
    # guest's scheduler gave its core to another thread; wall time over CPU time with none of
    # it was taken below the guest (the host holding the virtual CPU)
    queue_us = np.zeros(n)
    sys_us, faults, switches = np.zeros(n), np.zeros(n, dtype=int), np.zeros(n, dtype=int)
    stat = os.open("/proc/thread-self/schedstat", os.O_RDONLY) if cpu else None
    misses, timeline = 0, []
    get_int(comp, vr_int, len(out_int), ints)
    last = list(ints)
    clock = time.perf_counter
    t0 = clock() + 0.01
    for k in range(n):
        slot = t0 + k * dt
        ahead = slot - clock() - SPIN
        if sleep and ahead > 0:
            time.sleep(ahead)                   # the core given up until SPIN before
        while clock() < slot:               # wait for this millisecond (busy: sleep is coarse)
            pass
        s = clock()
        for vr, v in acts.get(k, ()):
            if isinstance(v, str):
                f.setString(list(vr), [v])
            else:
                set_int(comp, vr, 1, v)
        if cpu:
            u0 = resource.getrusage(resource.RUSAGE_THREAD)
            q0 = int(os.pread(stat, 64, 0).split()[1])
            c0 = thread_ns()
        m = clock()
        do_step(comp, k * dt, dt, fmi2True)
        d = clock()
        if cpu:
            cpu_us[k] = (thread_ns() - c0) * 1e-3
            queue_us[k] = (int(os.pread(stat, 64, 0).split()[1]) - q0) * 1e-3
            u1 = resource.getrusage(resource.RUSAGE_THREAD)
            sys_us[k] = (u1.ru_stime - u0.ru_stime) * 1e6
            faults[k] = u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt
            switches[k] = u1.ru_nvcsw - u0.ru_nvcsw + u1.ru_nivcsw - u0.ru_nivcsw
        get_real(comp, vr_real, len(out_real), real)
        get_int(comp, vr_int, len(out_int), ints)
        e = clock()
        step_us[k] = (d - m) * 1e6
        wake_us[k] = (s - slot) * 1e6
        cycle_us[k] = (e - s) * 1e6
        if e > slot + dt:
            misses += 1
        now = list(ints)
        if now != last:
            timeline.append(((k + 1) * dt, *now, *list(real), step_us[k]))
        last = now
    if stat is not None:
        os.close(stat)
    return dict(step_us=step_us, cpu_us=cpu_us, queue_us=queue_us, sys_us=sys_us,
                faults=faults, switches=switches, cycle_us=cycle_us, wake_us=wake_us,
                misses=misses,
                timeline=timeline, real=list(real), ints=list(ints), dt=dt)


def run_c(fmu, seconds, out_real, out_int, params, actions, tmp, preload=False):
    """``run``'s loop in a C master (benchmarks/hil_c_master.c, compiled into ``tmp``), a
    rig's: no Python in its process but the FMU's, at the priority of this one (``nice``
    inherited).  ``params``: {name: value} set before initialization (bool, float or str);
    ``actions`` as ``run``'s; ``preload``: libpython preloaded (``bench_masters.env``: a stock
    pythonfmu binary, the floor's).  Returns ``run``'s dict (its CPU and queue times
    included)."""
    from bench_masters import compile_master, env
    from fmpy import extract, read_model_description
    exe = Path(tmp) / "hil_c_master"
    if not exe.exists():
        compile_master(tmp, "hil_c_master")
    md = read_model_description(fmu)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzip = extract(fmu, str(Path(tmp) / Path(fmu).stem))
    args = [str(exe), unzip, md.coSimulation.modelIdentifier, md.guid, str(seconds),
            str(len(out_real)), str(len(out_int))]
    args += [str(vr[k]) for k in (*out_real, *out_int)]
    for name, v in params.items():
        kind = "b" if isinstance(v, bool) else "s" if isinstance(v, str) else "r"
        args += [kind, str(vr[name]), str(int(v) if kind == "b" else v)]
    for k, acts in actions.items():
        for name, v in ([acts] if isinstance(acts[0], str) else acts):
            args += [f"@{k}", "s" if isinstance(v, str) else "i", str(vr[name]), str(v)]
    out = subprocess.run(args, env=env(preload=preload), capture_output=True, text=True,
                         check=False)
    if out.returncode:
        raise RuntimeError(f"hil_c_master failed ({out.returncode}): {out.stderr[-2000:]}")
    n, ni = int(round(seconds * 1000)), len(out_int)
    step_us, cpu_us, queue_us, sys_us = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    faults, switches = np.zeros(n, dtype=int), np.zeros(n, dtype=int)
    timeline, end = [], None
    for line in out.stdout.splitlines():
        w = line.split()
        if w[0] == "step":
            k = int(w[1])
            step_us[k], cpu_us[k], queue_us[k], sys_us[k] = map(float, w[2:6])
            faults[k], switches[k] = int(w[6]), int(w[7])
        elif w[0] == "row":
            timeline.append((float(w[1]), *map(int, w[2:2 + ni]), *map(float, w[2 + ni:])))
        elif w[0] == "end":
            end = w[1:]
    return dict(step_us=step_us, cpu_us=cpu_us, queue_us=queue_us, sys_us=sys_us,
                faults=faults, switches=switches, misses=int(end[0]),
                timeline=timeline, ints=[int(x) for x in end[1:1 + ni]],
                real=[float(x) for x in end[1 + ni:]], dt=1e-3)


def floor(seconds, cpu=False):
    """``run`` over the trivial pythonfmu FMU for ``seconds`` (built in a temporary folder)."""
    from bench_masters import floor_fmu
    from fmu_src.host.master import FmuRunner
    with tempfile.TemporaryDirectory() as tmp:
        r = FmuRunner(floor_fmu(tmp))
        try:
            return run(r, seconds, ("x",), (), {}, cpu=cpu)
        finally:
            r.close()


def report(r, seconds, max_target="<= 500", base=None):
    """The figures of a run (``run``) as a table, with the slowest steps and each second's;
    ``base``: the floor's run (``floor``), its do_step figures in a column beside."""
    step_us, cycle_us, wake_us, dt = r["step_us"], r["cycle_us"], r["wake_us"], r["dt"]
    fl = base["step_us"] if base is not None else None

    def cell(f):
        return f"{f(fl):10.1f}" if fl is not None else f"{'':10s}"
    print(f"{'figure':48s} {'value':>10s} {'target':>10s} {'floor':>10s}")
    print(f"{'do_step median (us)':48s} {np.median(step_us):10.1f} {'':10s} {cell(np.median)}")
    print(f"{'do_step p99 (us)':48s} {np.percentile(step_us, 99):10.1f} {'<= 100':>10s} "
          f"{cell(lambda x: np.percentile(x, 99))}")
    print(f"{'do_step max (us)':48s} {step_us.max():10.1f} {max_target:>10s} "
          f"{cell(np.max)}")
    print(f"{'cycle (doStep + get outputs) median / p99 (us)':48s} "
          f"{np.median(cycle_us):5.1f} / {np.percentile(cycle_us, 99):5.1f}")
    print(f"{'cycle max (us)':48s} {cycle_us.max():10.1f}")
    print(f"{'deadline misses (cycle not done within its ms)':48s} {r['misses']:10d} {'0':>10s}")
    print(f"{'  of which the cycle itself took > 1 ms':48s} {int(np.sum(cycle_us > 1000)):10d}")
    print(f"{'cycles the master started > 0.5 ms late':48s} {int(np.sum(wake_us > 500)):10d}")
    print(f"{'  (the OS held the master: max late start, ms)':48s} {wake_us.max() / 1e3:10.2f}")
    late = np.nonzero(wake_us > 500)[0]
    if late.size:
        print("  late starts at t (s):", ", ".join(f"{k * dt:.3f}" for k in late[:10]))


def report_steps(r, seconds):
    """The slowest steps and each second's median / p99 / max."""
    step_us, cycle_us, dt = r["step_us"], r["cycle_us"], r["dt"]
    print("slowest do_steps (t, us):", ", ".join(
        f"{(k + 1) * dt:.3f} s {step_us[k]:.0f}" for k in np.argsort(step_us)[::-1][:8]))
    print("per second: do_step median / p99 / max (us), misses")
    for sec in range(int(seconds)):
        w = step_us[sec * 1000:(sec + 1) * 1000]
        c = cycle_us[sec * 1000:(sec + 1) * 1000]
        print(f"  {sec:2d}-{sec + 1:2d} s  {np.median(w):7.1f} {np.percentile(w, 99):8.1f} "
              f"{w.max():9.1f}  {int(np.sum(c > 1000))}")
