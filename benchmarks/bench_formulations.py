"""The formulations side by side (issue 15): embedding against multipliers, Baumgarte, explicit
correction and soft constraints, on the same models, measured the same way in one run.

    python benchmarks/bench_formulations.py [--t-end 100] [--quick] [--only NAME,...]

Scenarios: pendulum_line, slider_crank3 (through its singular configurations: it starts in
C3 and its crank torque keeps it there, haug_pavesic2023 Sec 7.2), top (Sec 7.1), ball_bowl
(braun_goldfarb2012 Sec 3.1, nonholonomic, at the paper's 10 ms step) and the chain N = 10
swinging free and latched at run time (its tip pinned where it is at t = 0.5 s, the way
benchmarks/bench_chain.py does it).  RK4 at 1 ms (ball_bowl: 10 ms), one ``advance`` per
step, ``--t-end`` seconds (default 100; ``--quick``: 5).

Rows, one per formulation (``embed.modes.formulations``):
- embedding/symbolic: the engine's default (compiled modes, configuration projection);
- embedding/numeric: the same equations on the compiled-terms path (numpy per stage, like
  the other formulations here, so its cost is the fair comparator for them);
- embedding, no proj.: embedding/numeric without haug_pavesic2023's projection;
- multipliers: [M B^T; B 0] [udot; lambda] = [f; -gamma], unstabilized;
- Baumgarte a=b=5: the same with alpha = beta = 5 1/s;
- projection: braun_goldfarb2012 eq 3-4 after each step (one explicit correction);
- soft: wang2019 eq 13-14, K_s = 1e5, K_d = 600 (defaults); and softer, K_s = 1e4, K_d = 200.

Columns:
- max|Phi|: the largest |Phi| of the active holonomic constraints after any step;
- max|Bu+C|: the largest velocity-constraint residual after any step;
- drift: the largest |E - E(0)| (J; for the chain from the pin on) or, for the ball, the
  first integral's |FI - FI(0)| (1/s, the paper's epsilon of Fig 2(d));
- step: median wall time of one step (us; the chain: once pinned);
- switch: the chain's pin: set_constraints plus its first step (us); "-" elsewhere;
- note: why a formulation could not run.

The papers' own figures stand below the table (haug_pavesic2023 Table 1 for the top and
Table 2 for the slider-crank, at Tol = 1e-10; braun_goldfarb2012 Fig 2 has no numbers in its
text).  Medians of one run on a shared machine: no timing is asserted anywhere.
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
from embed import EmbedError  # noqa: E402

FORMULATIONS = [
    ("embedding/symbolic", "symbolic", "embedding", None),
    ("embedding/numeric", "numeric", "embedding", None),
    ("embedding, no proj.", "numeric", "embedding", dict(configuration_projection=False)),
    ("multipliers", "numeric", "multipliers", None),
    ("Baumgarte a=b=5", "numeric", "multipliers", dict(baumgarte_alpha=5.0, baumgarte_beta=5.0)),
    ("projection", "numeric", "projection", None),
    ("soft", "numeric", "soft", None),
    ("soft K=1e4 D=200", "numeric", "soft", dict(soft_stiffness=1e4, soft_damping=200.0)),
]
SCENARIOS = ["pendulum_line", "slider_crank3", "top", "ball_bowl", "chain10"]
PIN_AT = 0.5

PAPERS = """The papers' figures (their formulation, their step and tolerance):
- haug_pavesic2023 Table 1 (top, 100 s, Tol = 1e-10): position 2e-12, velocity 2e-10,
  acceleration 4e-9 (Tol = 1e-8: 2e-10, 3e-8, 2e-7).
- haug_pavesic2023 Table 2 (triple slider-crank in C3, Tol = 1e-10): position 7e-15, velocity
  7e-11, acceleration 4e-10 (Tol = 1e-8: 5e-12, 8e-9, 8e-8).
- braun_goldfarb2012 Fig 2 (ball in bowl, 100 s at 1e-2 s, RK4): constraint, energy and
  first-integral errors on semilog plots; their numbers are not in the paper's text."""


def residuals(sim):
    """(max |Phi|, max |B u + C|) of the active constraints at the simulator's state, from
    each constraint's own compiled terms (the same for every formulation)."""
    n = sim.model.n
    tq = np.concatenate(([sim.t], sim.q, sim.pvec))
    u = np.asarray(sim.u)
    phi = vel = 0.0
    for c in sim.state.active:
        ct = sim.forms.constraint_terms(c)
        bc = ct.BC(tq)
        vel = max(vel, abs(float(np.dot(bc[:n], u) + bc[n])))
        if ct.holonomic:
            phi = max(phi, abs(float(ct.phi(tq)[0])))
    return phi, vel


def run(name, path, formulation, options, t_end):
    chain = name == "chain10"
    sc = scenarios.load("pendulum_chain").build(10) if chain else scenarios.load(name).build()
    h = 1e-2 if name == "ball_bowl" else 1e-3
    sim = sc.simulator(embedding=path, h_max=h, formulation=formulation,
                       formulation_options=options)
    k_end = int(round(t_end / h))
    k_pin = int(round(PIN_AT / h)) if chain else -1
    if chain:
        sim.set_constraints([], label="free")
        if formulation == "embedding":       # the pin's compiled-terms program, ahead
            sim.prepare(["tip_x", "tip_y"])
    o = sc.observe(sim)
    inv = (lambda o: o["first_integral"]) if name == "ball_bowl" else \
        (lambda o: o["kinetic_energy"] + o["potential_energy"])
    ref = inv(o)
    steps, switch, phi, vel, drift = [], None, 0.0, 0.0, 0.0
    for k in range(1, k_end + 1):
        if k == k_pin + 1:
            o = sc.observe(sim)
            pv = sim.pvec
            pv[sim.pnames.index("x_p")] = o["tip_x"]
            pv[sim.pnames.index("d")] = -o["tip_y"]
            t0 = time.perf_counter()
            sim.set_constraints(["tip_x", "tip_y"], label="pin")
            sim.advance(k * h)
            switch = time.perf_counter() - t0
            ref = inv(sc.observe(sim))
        else:
            t0 = time.perf_counter()
            sim.advance(k * h)
            if not chain or k > k_pin:          # the chain: its steps once pinned
                steps.append(time.perf_counter() - t0)
        p, v = residuals(sim)
        phi, vel = max(phi, p), max(vel, v)
        if not chain or k > k_pin:
            drift = max(drift, abs(inv(sc.observe(sim)) - ref))
    return dict(phi=phi, vel=vel, drift=drift, step=statistics.median(steps) * 1e6,
                switch=None if switch is None else switch * 1e6, note="")


def fmt(v, spec):
    return format(v, spec) if v is not None else "-".rjust(int(spec.split(".")[0] or 0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t-end", type=float, default=100.0)
    ap.add_argument("--quick", action="store_true", help="5 s runs")
    ap.add_argument("--only", default="", help="scenarios, comma-separated")
    args = ap.parse_args(argv)
    t_end = 5.0 if args.quick else args.t_end
    names = [s for s in SCENARIOS if not args.only or s in args.only.split(",")]
    print(f"formulations over {t_end:g} s (RK4 at 1 ms; ball_bowl at 10 ms), one run\n")
    head = (f"{'scenario':<14}{'formulation':<21}{'max|Phi|':>10}{'max|Bu+C|':>11}"
            f"{'drift':>10}{'step us':>9}{'switch us':>11}  note")
    print(head)
    print("-" * len(head))
    for name in names:
        for label, path, form, opts in FORMULATIONS:
            try:
                r = run(name, path, form, opts, t_end)
            except EmbedError as exc:
                r = dict(phi=None, vel=None, drift=None, step=None, switch=None,
                         note=f"{type(exc).__name__}: {str(exc)[:50]}")
            print(f"{name:<14}{label:<21}{fmt(r['phi'], '10.1e')}{fmt(r['vel'], '11.1e')}"
                  f"{fmt(r['drift'], '10.1e')}{fmt(r['step'], '9.0f')}{fmt(r['switch'], '11.0f')}"
                  f"  {r['note']}", flush=True)
        print()
    print(PAPERS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
