"""Free-form fences announced to disk_fence.fmu in quick succession, stepped at a paced 1 kHz.

Run by the tests as a subprocess (``python tests/fence_storm.py FMU OPTIONS_JSON``) so that a
step that never returns ends in the test's own timeout (the test fails, it does not hang):
the master here is fmpy's FMU2Slave (``fmu_src.host.master.FmuRunner``), several instances of
the FMU in this one process, each announcing fences of its own.  Prints one JSON line: per
instance the largest step (wall s) and when it happened, the largest CPU time of a step and
the longest time a step slept (blocked in a system call; from Linux's schedstat, which also
tells the time the step waited for a core on a loaded machine), the last fence it announced, its
final outputs and its warnings.  Time a step spent neither on its CPU nor waiting for one nor
asleep (no voluntary context switch: the thread never blocked) is time the virtual machine's
core was held by its host (steal): it is counted apart ("stalled"), not as blocking.

Options: instances, duration (s of simulated and wall time, paced), every (s between two
announcements of one instance), first/last (the number of sine factors of the first and of
the largest fence: each announcement one more, wrapping round), quiet (s at the end
without announcements), start (s before the first announcement), near_fence (start the
disk slowly rolling so that it meets the fence at the end of the run), amplitudes (the
fences' overall factor, one per instance), count (announcements per instance at most).
"""

from __future__ import annotations

import gc
import json
import math
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fmu_src.host.master import FmuRunner  # noqa: E402

G = 9.81
PHI_SLOW = -math.radians(0.01)     # a nearly level ramp: the disk creeps to the fence
OUTPUTS = ("mode", "status", "q1", "q2", "q3", "q4", "constraint_residual",
           "geometry_version_active", "geometry_status", "embed_pending", "answers_late")


def _sched():
    """(cpu s, s waiting for a core) of this thread so far (Linux schedstat), or None."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            cpu, wait = f.read().split()[:2]
        return int(cpu) * 1e-9, int(wait) * 1e-9
    except OSError:
        return None


def _slept():
    """Voluntary context switches of this thread so far: one each time it blocked (a pipe, a
    lock, a page read from disk), none while its virtual core is held by the host."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


def curve(amplitude, n, j):
    """A valid fence (tangent at P, smooth, gently curved over 6.7 m): amplitude s^2 times n
    factors (1 + 0.01 sin(k s + j)), k cycling over 1..12; j makes each text its own fence."""
    factors = "*".join(f"(1+0.01*sin({1 + m % 12}*s+{j % 97}))" for m in range(n))
    return f"{amplitude}*s**2*{factors}"


class _Collections:
    """The time the cyclic collector ran in the current step (``gc.callbacks``): a full
    collection over objects made since the FMU froze its own is one cause of a long step."""

    def __init__(self):
        self.t0 = self.step = 0.0
        self.what = None          # the longest collection of the step: (generation, collected)
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if phase == "start":
            self.t0 = time.perf_counter()
        else:
            dt = time.perf_counter() - self.t0
            if dt > self.step:
                self.what = (info["generation"], info["collected"])
            self.step += dt


def main(fmu, opts):
    n_inst = int(opts.get("instances", 2))
    duration = float(opts.get("duration", 60.0))
    every = float(opts.get("every", 0.01))
    first, last = int(opts.get("first", 10)), int(opts.get("last", 24))
    quiet = float(opts.get("quiet", 3.0))
    start = float(opts.get("start", 0.5))
    count = int(opts.get("count", 1 << 30))
    amps = opts.get("amplitudes", [0.002, 0.004, 0.003, 0.005][:n_inst])
    params = {"real_time": True}          # a paced 1 kHz master: answers taken as they arrive
    if opts.get("near_fence"):
        # from rest down the (frictionless: the disk slides) ramp: a = g sin|phi|
        a = G * math.sin(-PHI_SLOW)
        reach = duration - 2.0
        params.update({"phi": PHI_SLOW, "q4_start": 25.3 - 0.5 * a * reach ** 2})
    runs = [FmuRunner(fmu, params=params, strings={"embedding": "background"},
                      instance=f"storm{i}") for i in range(n_inst)]
    info = [{"max_step": 0.0, "at": None, "version": 0, "text": "", "n": 0,
             "steps_over_10ms": 0, "steps_blocked_10ms": 0, "max_cpu": 0.0, "cpu_at": None,
             "max_blocked": 0.0, "steps_stalled_10ms": 0, "max_stalled": 0.0, "stalled_at": None,
             "blocked_at": None, "max_own": 0.0, "own_at": None, "max_gc": 0.0, "gc_at": None, "gc_what": None,
             "schedstat": _sched() is not None, "entered": None, "last_at": None} for _ in runs]
    texts = [{} for _ in runs]          # version -> text, of each instance's announcements
    collector = _Collections()
    h = 1e-3
    n_steps = int(round(duration / h))
    next_at = [start + i * every / n_inst for i in range(n_inst)]
    t0, cpu0 = time.monotonic(), time.process_time()
    for k in range(n_steps):
        t = k * h
        for i, r in enumerate(runs):
            d = info[i]
            if t >= next_at[i] and t < duration - quiet and d["n"] < count:
                next_at[i] += every
                size = first + d["n"] % (last - first + 1)
                d["n"] += 1
                d["version"] += 1
                d["text"] = curve(amps[i], size, d["version"] + 31 * i)
                texts[i][d["version"]] = d["text"]
                d["last_at"] = t
                r.fmu.setString([r.vr("fence_curve")], [d["text"]])
                r.set(fence_version=d["version"])
            s0, v0 = _sched(), _slept()
            collector.step = 0.0
            a = time.perf_counter()
            r.step(h)
            dt = time.perf_counter() - a
            s1, v1 = _sched(), _slept()
            if collector.step > d["max_gc"]:
                d["max_gc"], d["gc_at"], d["gc_what"] = collector.step, t, collector.what
            if dt > d["max_step"]:
                d["max_step"], d["at"] = dt, t
            if s0 is not None:
                # the step's wall time is its CPU time, the time it waited for a core (a
                # shared machine) and the time it slept (blocked in a system call: a pipe)
                cpu, wait = s1[0] - s0[0], s1[1] - s0[1]
                if cpu > d["max_cpu"]:
                    d["max_cpu"], d["cpu_at"] = cpu, t
                off = dt - cpu - wait             # asleep, or the host held the core
                kind = "blocked" if v1 > v0 else "stalled"
                if off > d[f"max_{kind}"]:
                    d[f"max_{kind}"], d[f"{kind}_at"] = off, t
                d[f"steps_{kind}_10ms"] += off > 0.01
                own = cpu + off * (kind == "blocked")      # what the step itself took
                if own > d["max_own"]:
                    d["max_own"], d["own_at"] = own, t
            d["steps_over_10ms"] += dt > 0.01
            if d["entered"] is None and t >= start:
                # the fence the disk meets: the version active in the step it entered mode 3
                if r.get("mode")["mode"] == 3:
                    v = r.get("geometry_version_active")["geometry_version_active"]
                    d["entered"] = {"t": t + h, "version": v, "text": texts[i].get(v, "")}
        lag = t0 + (k + 1) * h - time.monotonic()
        if lag > 0:
            time.sleep(lag)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    # the last announcements answered: on a loaded machine the workers may lag behind the
    # paced run; 10 us steps (the disk barely moves) until none is pending, a minute at most
    t1 = time.monotonic()
    while (any(r.get("embed_pending")["embed_pending"] for r in runs)
           and time.monotonic() - t1 < 60.0):
        for r in runs:
            r.step(1e-5)
        time.sleep(1e-3)
    out = []
    for d, r in zip(info, runs):
        d["cpu_per_step"], d["wall"] = cpu / n_steps / n_inst, wall
        d["settle"] = time.monotonic() - t1
        d["outputs"] = r.get(*OUTPUTS)
        d["warnings"] = [m for _, m in r.messages]
        d["params"] = params
        d["announced"] = d["version"]
        out.append(d)
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
    sys.exit(0)
