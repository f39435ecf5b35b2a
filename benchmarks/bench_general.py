"""General embedding figures (issue: general on-line embedding), measured in one run.

    python benchmarks/bench_general.py [--t-end 100] [--reps 7] [--quick]

1. Long runs (RK4, h = 1e-3): largest position (|Phi|) and velocity (|B u + C|) constraint
   errors sampled every 10 ms, energy drift, re-selections and their share of CPU time (all of
   it, and without the first embeddings of a partition: "(cached)"; both in process time).
2. Time from a constraint set being declared active to the end of the first integration
   step with it, for combinations never active before (numeric path; the unconstrained
   terms and each constraint's own terms are compiled at initialization, as allowed).
3. Symbolic embedding (recombination, eq 13-14) against the peer, sympy's KanesMethod
   re-derived with u_dependent for the same constraints (the chain's tip on a line, and pinned
   to a point), and the compile that follows.
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

import scenarios  # noqa: E402


def constraint_errors(sim):
    """(max |Phi|, max |B u + C|) over the active constraints at the current state."""
    n = sim.model.n
    tq = np.concatenate(([sim.t], sim.q, sim.pvec))
    pos = vel = 0.0
    for c in sim.active:
        terms = sim.forms.constraint_terms(c)
        bc = terms.BC(tq)
        vel = max(vel, abs(float(bc[:n] @ sim.u + bc[n])))
        if terms.holonomic:
            pos = max(pos, abs(float(terms.phi(tq)[0])))
    return pos, vel


def long_run(label, sc, t_end, params=None, **options):
    sim = sc.simulator(params, **options)
    o = sc.observe(sim)
    e0 = o.get("kinetic_energy", 0.0) + o.get("potential_energy", 0.0)
    pos = vel = drift = 0.0
    cpu0 = time.process_time()
    k = 0
    while sim.t < t_end - 1e-9:
        k += 1
        sim.advance(min(t_end, 0.01 * k))
        p, v = constraint_errors(sim)
        pos, vel = max(pos, p), max(vel, v)
        o = sc.observe(sim)
        if "kinetic_energy" in o:
            e = o["kinetic_energy"] + o["potential_energy"]
            drift = max(drift, abs(e - e0) / abs(e0) if e0 else abs(e - e0))
    cpu = time.process_time() - cpu0
    return dict(label=label, pos=pos, vel=vel, drift=drift, resel=sim.reselections,
                share=sim.reselect_time / cpu, recharts=sim.recharts,
                warm=(sim.reselect_time - sim.reselect_compile_time) / cpu,
                cpu=cpu, steps=int(round(t_end / 1e-3)))


def activation_latency(sc, before, after, reps, setup=None):
    """Median wall time of set_constraints(after) + one RK4 step, on a never-seen set."""
    out = []
    for _ in range(reps):
        sim = sc.simulator(embedding="numeric")
        for c in sc.automaton.constraints:          # each constraint's own terms, at init
            sim.forms.constraint_terms(c)
        if before is not None:
            sim.set_constraints(before)
        sim.advance(0.01)
        if setup:
            setup(sim)
        sim.library.numeric_modes = {k: v for k, v in sim.library.numeric_modes.items()
                                     if k[1] != tuple(sorted(after))}
        t0 = time.perf_counter()
        sim.set_constraints(after)
        sim.advance(sim.t + 1e-3)
        out.append(time.perf_counter() - t0)
        assert sim.compiled_mode.path == "numeric"
    return statistics.median(out), max(out)


def pin_mid(sim):
    n = sim.model.n
    l = sim.param("l")
    sim.pvec[sim.pnames.index("y_m")] = -l * np.sum(np.cos(np.array(sim.q)[:n // 2]))


def chain_peer(N, reps, point=False):
    """sympy KanesMethod for the N-chain with its tip on the line (u_N dependent) or pinned to a
    point (``point``: u_N-1, u_N dependent)."""
    import sympy as sp
    from sympy.physics.mechanics import KanesMethod, Particle, Point, ReferenceFrame, dynamicsymbols
    q = dynamicsymbols(f"q1:{N + 1}")
    u = dynamicsymbols(f"u1:{N + 1}")
    l, m, g = sp.symbols("l m g")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    bodies, loads = [], []
    x = y = 0
    for i in range(N):
        x, y = x + l * sp.sin(q[i]), y - l * sp.cos(q[i])
        P = O.locatenew(f"P{i}", x * frame.x + y * frame.y)
        P.set_vel(frame, sum(l * u[j] * (sp.cos(q[j]) * frame.x + sp.sin(q[j]) * frame.y)
                             for j in range(i + 1)))
        bodies.append(Particle(f"p{i}", P, m))
        loads.append((P, -m * g * frame.y))
    vc = [sum(l * sp.sin(q[i]) * u[i] for i in range(N))]
    if point:
        vc.insert(0, sum(l * sp.cos(q[i]) * u[i] for i in range(N)))
    n_dep = len(vc)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        km = KanesMethod(frame, q, u[:-n_dep], kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)],
                         u_dependent=u[-n_dep:], velocity_constraints=vc)
        km.kanes_equations(bodies, loads)
        km.mass_matrix_full, km.forcing_full      # noqa: B018 - the explicit form
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def ours_symbolic(sc, mode_id, active, dep, reps):
    sim = sc.simulator()
    from embed.modes.compile import compile_parts
    emb, comp = [], []
    for _ in range(reps):
        sim.library.embeddings.clear()
        t0 = time.perf_counter()
        parts = sim.forms.mode_parts((mode_id, tuple(sorted(active)), tuple(dep)))
        t1 = time.perf_counter()
        compile_parts(parts, "bench")
        comp.append(time.perf_counter() - t1)
        emb.append(t1 - t0)
    return statistics.median(emb), statistics.median(comp)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=100.0)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="10 s runs and chains up to N = 10")
    a = ap.parse_args(argv)
    t_end = 10.0 if a.quick else a.t_end
    Ns = (5, 10) if a.quick else (5, 10, 20)

    print(f"1. Long runs, RK4 h = 1e-3 unless noted, {t_end:g} s (targets: errors <= 1e-10; top "
          "energy drift < 2e-4 %)")
    print(f"{'scenario':26s} {'max|Phi|':>10s} {'max|Bu+C|':>10s} {'energy drift %':>15s} "
          f"{'re-sel.':>8s} {'re-sel. CPU %':>14s} {'(cached) %':>11s} "
          f"{'recharts':>9s}")
    # slider_crank3's torque grows without bound as q2 -> +-pi/2 and turns the crank in
    # well under 1 ms there: a fixed 1 ms step cannot follow it over 100 s, error control can
    runs = [("pendulum_line", scenarios.load("pendulum_line").build(), {}),
            ("slider_crank3 (adaptive 1e-10)", scenarios.load("slider_crank3").build(),
             dict(solver="adaptive", rtol=1e-10)),
            ("top", scenarios.load("top").build(), {}),
            ("top (paper's qdot speeds)", scenarios.load("top").build("qdot"), {}),
            ("top tilted 0.3 rad", scenarios.load("top").build(), {"params": {"tilt_start": 0.3}}),
            ("top tilted, qdot speeds", scenarios.load("top").build("qdot"),
             {"params": {"tilt_start": 0.3}})]
    for label, sc, options in runs:
        r = long_run(label, sc, t_end, **options)
        print(f"{label:26s} {r['pos']:10.2e} {r['vel']:10.2e} {100 * r['drift']:15.2e} "
              f"{r['resel']:8d} {100 * r['share']:14.4f} {100 * r['warm']:11.4f} "
              f"{r['recharts']:9d}")

    print("\n2. Declared never-seen constraint set -> end of its first RK4 step, numeric path "
          "(target <= 1 ms)")
    print(f"{'scenario':26s} {'constraints':34s} {'median ms':>10s} {'max ms':>8s}")
    cases = [("disk_ramp", None, ["rolling"], None),
             ("pendulum_line", None, [], None),
             ("slider_crank3", None, ["slider3_link"], None),
             ("top", None, ["normalization"], None),
             ("ball_bowl", None, ["contact", "euler_norm", "roll_alpha"], None)]
    for name, before, after, setup in cases:
        sc = scenarios.load(name).build()
        med, mx = activation_latency(sc, before, after, a.reps, setup)
        print(f"{name:26s} {'+'.join(after) or '(none)':34s} {1e3 * med:10.3f} {1e3 * mx:8.3f}")
    for N in Ns:
        sc = scenarios.load("pendulum_chain").build(N)
        med, mx = activation_latency(sc, None, ["mid_y", "tip_y"], a.reps, pin_mid)
        print(f"{'pendulum_chain N=' + str(N):26s} {'mid_y+tip_y':34s} {1e3 * med:10.3f} {1e3 * mx:8.3f}")

    print("\n3. Symbolic embedding (recombination eq 13-14 + eq 15 system) against the peer, "
          "sympy KanesMethod with u_dependent")
    print(f"{'system':26s} {'ours ms':>10s} {'peer ms':>10s} {'peer/ours':>10s} {'compile ms':>11s}")
    for N in Ns:
        sc = scenarios.load("pendulum_chain").build(N)
        reps = max(1, a.reps // (N // 5))
        emb, comp = ours_symbolic(sc, 1, ["tip_y"], (N - 1,), reps)
        peer = chain_peer(N, max(1, reps // 2))
        print(f"{'pendulum_chain N=' + str(N) + ' tip_y':26s} {1e3 * emb:10.2f} {1e3 * peer:10.2f} "
              f"{peer / emb:10.1f} {1e3 * comp:11.1f}")
        emb, comp = ours_symbolic(sc, 2, ["tip_x", "tip_y"], (N - 2, N - 1), reps)   # point pin
        peer = chain_peer(N, max(1, reps // 2), point=True)
        print(f"{'pendulum_chain N=' + str(N) + ' point':26s} {1e3 * emb:10.2f} {1e3 * peer:10.2f} "
              f"{peer / emb:10.1f} {1e3 * comp:11.1f}")
    sc = scenarios.load("pendulum_line").build()
    emb, comp = ours_symbolic(sc, 1, ["tip_on_line"], (1,), a.reps)
    peer = chain_peer(2, a.reps)
    print(f"{'pendulum_line':26s} {1e3 * emb:10.2f} {1e3 * peer:10.2f} {peer / emb:10.1f} "
          f"{1e3 * comp:11.1f}")


if __name__ == "__main__":
    main()
