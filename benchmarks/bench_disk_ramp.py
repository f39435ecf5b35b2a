"""Disk on the ramp: per-step cost through fmpy and first-embedding cost, medians side by side.

    python benchmarks/bench_disk_ramp.py [--fmu build/disk_ramp.fmu] [--steps 8000] [--reps 30]

Figures (issue: disk on a ramp end to end):
- per communication step of 1 ms through fmpy's FMU2Slave (setReal, doStep, getReal), RK4,
  in a mode already embedded: median <= 25 us, p99 <= 60 us;
- first embedding of the rolling constraint (symbolic recombination + compile, cold cache)
  <= 1 ms, against the peer: sympy KanesMethod re-derived with u_dependent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def fmi_step_times(fmu, n_steps, dt=1e-3):
    """Wall time of setReal + doStep + getReal for each step; flags steps in which the mode changed."""
    from fmu_src.host.master import FmuRunner
    r = FmuRunner(fmu)
    fmu2 = r.fmu
    vin = [r.vr("F_ext"), r.vr("T_ext")]
    vout = [r.vr(k) for k in ("q1", "q2", "u1", "u2", "slip", "N", "F_f", "constraint_residual",
                              "last_event_time")]
    vint = [r.vr("mode"), r.vr("event_count"), r.vr("status")]
    times = np.empty(n_steps)
    event = np.zeros(n_steps, dtype=bool)
    last = fmu2.getInteger(vint)
    t = 0.0
    clock = time.perf_counter
    for k in range(n_steps):
        t0 = clock()
        fmu2.setReal(vin, [0.0, 0.0])
        fmu2.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
        fmu2.getReal(vout)
        ints = fmu2.getInteger(vint)
        times[k] = clock() - t0
        t += dt
        event[k] = ints[1] != last[1]
        last = ints
    r.close()
    return times, event


def first_embedding_times(reps):
    """Cold-cache embedding + compile of the rolling mode (what a mode switch costs the first time)."""
    from scenarios import disk_ramp
    sc = disk_ramp.build()
    sim = sc.simulator()
    out = []
    for _ in range(reps):
        sim.library.embeddings.clear()
        sim.library.modes.clear()
        t0 = time.perf_counter()
        sim.mode_compiler.compiled(disk_ramp.ROLLING, (1,))
        out.append(time.perf_counter() - t0)
    return out


def peer_kane_times(reps):
    """sympy KanesMethod re-deriving the rolling disk with u2 dependent (the peer)."""
    import sympy as sp
    from sympy.physics.mechanics import (KanesMethod, Point, ReferenceFrame, RigidBody,
                                         dynamicsymbols, inertia)
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2, ua = dynamicsymbols("u1 u2 ua")
    m, J, r, phi, g = sp.symbols("m J r phi g")
    N, F_f, F_ext, T_ext = sp.symbols("N F_f F_ext T_ext")
    frame = ReferenceFrame("N")
    A = frame.orientnew("A", "Axis", [phi, frame.z])
    O = Point("O")
    O.set_vel(frame, 0)
    Bo = O.locatenew("Bo", q1 * A.x + r * A.y)
    Bo.set_vel(frame, u1 * A.x + ua * A.y)
    B = A.orientnew("B", "Axis", [q2, A.z])
    B.set_ang_vel(frame, u2 / r * A.z)
    P = Bo.locatenew("P", -r * A.y)
    P.v2pt_theory(Bo, frame, B)
    disk = RigidBody("disk", Bo, B, m, (inertia(A, 0, 0, J), Bo))
    loads = [(Bo, -m * g * frame.y + F_ext * A.x), (P, -F_f * A.x + N * A.y), (B, T_ext * A.z)]
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        km = KanesMethod(frame, [q1, q2], [u1], kd_eqs=[q1.diff() - u1, r * q2.diff() - u2],
                         u_dependent=[u2], velocity_constraints=[u1 + u2], u_auxiliary=[ua])
        km.kanes_equations([disk], loads)
        km.mass_matrix_full, km.forcing_full      # noqa: B018 - the explicit form, as ours
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmu", default=str(ROOT / "build" / "disk_ramp.fmu"))
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args(argv)
    if not Path(a.fmu).exists():
        import build_fmu
        build_fmu.build("disk_ramp", Path(a.fmu).parent)
    times, event = fmi_step_times(a.fmu, a.steps)
    steady = times[~event] * 1e6
    ev = times[event] * 1e6
    emb = np.array(first_embedding_times(a.reps)) * 1e3
    peer = np.array(peer_kane_times(max(5, a.reps // 3))) * 1e3
    print(f"disk_ramp, {a.steps} communication steps of 1 ms, RK4, fmpy FMU2Slave "
          "(setReal + doStep + getReal + getInteger)")
    print(f"{'figure':58s} {'median':>10s} {'p99':>10s} {'max':>10s} {'target':>14s}")
    print(f"{'step in an embedded mode (us)':58s} {np.median(steady):10.1f} "
          f"{np.percentile(steady, 99):10.1f} {steady.max():10.1f} {'<=25 / p99<=60':>14s}")
    if ev.size:
        print(f"{'step containing an event (us), n=' + str(ev.size):58s} {np.median(ev):10.1f} "
              f"{np.percentile(ev, 99):10.1f} {ev.max():10.1f} {'':>14s}")
    print(f"{'first embedding of rolling, cold cache (ms)':58s} {np.median(emb):10.3f} "
          f"{np.percentile(emb, 99):10.3f} {emb.max():10.3f} {'<=1':>14s}")
    print(f"{'peer: sympy KanesMethod with u_dependent (ms)':58s} {np.median(peer):10.3f} "
          f"{np.percentile(peer, 99):10.3f} {peer.max():10.3f} {'':>14s}")
    print(f"{'ratio peer / ours (medians)':58s} {statistics.median(peer) / statistics.median(emb):10.1f}")


if __name__ == "__main__":
    main()
