"""N-link planar chain, its tip pinned at t = 0.5 s: this project against MuJoCo and PyDy, one run.

    python benchmarks/bench_chain.py [--n 2,5,10,20] [--pin point|line] [--t-end 1.5] [--quick]
                                     [--no-pydy] [--pydy-max-n 40] [--repeat 3]

The measuring base of issue 14.  The chain is scenarios/pendulum_chain.py (`build(N)`, its
default l, m, g and initial state); it swings free from t = 0 (``set_constraints([])``) and at
t = 0.5 s its tip is pinned where it is, the way tests/test_pendulums.py pins the chain at run
time: the pin's parameters (x_p, d) are set to the tip's position in ``sim.pvec`` and
``set_constraints(["tip_x", "tip_y"])`` (``--pin line``: d and ``["tip_y"]``) activates them
with the momentum-consistent jump of mueller eq 7.  RK4 at 1 ms throughout, one step per
``advance``.  The pin is prepared at t = 0 (``sim.prepare``: its compiled-terms program,
rehearsed and undone), and on the numeric path the free chain too (its own program: one
compiled call a step, like the pinned one's).

Peers, in the same process and run:
- MuJoCo (``pip install 'embed-fmu[bench]'``): the same chain as MJCF text (hinge joints, a point
  mass m at the end of each massless link of length l, gravity along -y), ``integrator="RK4"``,
  timestep 1 ms; the pin is an ``equality`` ``connect`` of the last body's end to the world,
  inactive at start (``active="false"``, ``model.eq_active0``) and switched on through
  ``data.eq_active`` at t = 0.5 s with its world anchor (``eq_data[3:6]``) set to the tip's
  position then.  MJCF has no point-on-a-line equality: for ``--pin line`` the tip is connected
  to a carriage of 1e-6 kg (1e-5 of a link's mass) on a slide joint along x, placed under the
  tip and moving with it at the switch.  MuJoCo's soft constraint lets that tip drift more the
  lighter the carriage (N = 5: 0.16 m at 1e-6 kg, 0.07 m at 1e-3 kg, 0.014 m at 0.1 kg, where
  the carriage is no longer negligible); the table uses the negligible one.
- PyDy (``pip install 'embed-fmu[bench]'``: pydy, cython and a C compiler): the same chain in
  ``sympy.physics.mechanics.KanesMethod`` (absolute angles), the pin as velocity constraints
  on the tip (x and y; line: y) with the last two (one) speeds dependent, PyDy's fixed
  partition; the right-hand side from ``generate_ode_function(generator="cython")``, stepped
  by RK4 in numpy at 1 ms from our state just after the pin's jump (q and u), which it has no
  machinery for: derived and compiled before the run, it starts pinned.  Its accelerations
  there are asserted to be ours (relative 1e-9) before it is timed.  Nothing holds Phi:
  its tip drifts.  Not at N = 2 with the point pin (no independent speed left, which
  KanesMethod needs); ``--pydy-max-n`` (40: derivation + compile about 40 s at N = 40)
  and ``--no-pydy`` leave it out.

A run gives one switch, a single sample on a shared machine: ours and MuJoCo's runs are
repeated (``--repeat``, 3 by default, interleaved: ours, MuJoCo, ours, ...), each from a
scenario built afresh (its own mode library: nothing compiled by an earlier repetition), and
the table gives the medians over the repetitions.  The symbolic path's switch, which embeds and
compiles in the step, is its first repetition's (sympy's caches would make later ones cheaper).

Columns, for the steps after the pin:
- step: median wall time of one 1 ms step (us), the median over the repetitions; for MuJoCo
  one ``mj_step``; for PyDy one RK4 step (4 calls of its rhs);
- switch: the step that switches (constraints activated + the first step with them, us),
  the median over the repetitions; PyDy: its first step (nothing to switch);
- max step: the largest single step after the pin, the switch excluded (us), over the
  repetitions;
- residual: ours, the largest ``sim.residual()`` (|Phi| and |B u + C| of the active
  constraints, the ``constraint_residual`` output); PyDy the same, from its state;
  MuJoCo has none ("-");
- tip error: the largest distance of the tip from the pin (point) or line (m), from the
  tip's position (ours: the outputs tip_x, tip_y; MuJoCo: the tip site after each step;
  PyDy: from q);
- re-sel.: ours, the re-selections of the independent speeds after the pin;
- step/MJ, switch/MJ: each engine's over MuJoCo's, same N.

Medians of one run on a shared machine: no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import scenarios  # noqa: E402

H = 1e-3


def pin_constraints(pin):
    return ["tip_x", "tip_y"] if pin == "point" else ["tip_y"]


def run_ours(sc, path, pin, k_pin, k_end):
    """One run on ``path`` ('symbolic' or 'numeric'): free, then pinned at step k_pin."""
    sim = sc.simulator(embedding=path)
    q0 = np.array(sim.q)
    if path != "symbolic":
        sim.prepare([])                   # the free chain's compiled-terms program
    sim.set_constraints([], label="free")
    sim.prepare(pin_constraints(pin))     # the pin's compiled-terms program, ahead
    for k in range(1, k_pin + 1):
        sim.advance(k * H)
    o = sc.observe(sim)
    x0, y0 = o["tip_x"], o["tip_y"]
    pv = sim.pvec
    pv[sim.pnames.index("x_p")] = x0
    pv[sim.pnames.index("d")] = -y0
    resel0 = sim.reselections
    t0 = time.perf_counter()
    sim.set_constraints(pin_constraints(pin), label="pin")
    t1 = time.perf_counter()     # PyDy's start, after the jump (untimed)
    mode, x1, u1 = sim.compiled_mode, np.array(sim.x), np.array(sim.u)
    t2 = time.perf_counter()
    sim.advance((k_pin + 1) * H)
    switch = time.perf_counter() - t2 + t1 - t0
    assert sim.compiled_mode.path == path, (path, sim.compiled_mode.path)
    steps, res, err = [], sim.residual(), 0.0
    for k in range(k_pin + 2, k_end + 1):
        t0 = time.perf_counter()
        sim.advance(k * H)
        steps.append(time.perf_counter() - t0)
        res = max(res, sim.residual())
        o = sc.observe(sim)
        e = (math.hypot(o["tip_x"] - x0, o["tip_y"] - y0) if pin == "point"
             else abs(o["tip_y"] - y0))
        err = max(err, e)
    n = len(q0)      # the state at the pin and its accelerations [udot_i, i in ind] (PyDy's check)
    at_pin = dict(q=x1[:n], u=u1, ind=mode.ind, udot_ind=mode.rhs(k_pin * H, x1, pv)[n:])
    return dict(step=statistics.median(steps), switch=switch, max=max(steps), res=res, err=err,
                resel=sim.reselections - resel0, q0=q0, at_pin=at_pin)


CARRIAGE = 1e-6      # kg: the line pin's carriage (MuJoCo), 1e-5 of a link's mass


def chain_mjcf(N, l, m, g, pin="point"):
    """The scenario's chain as MJCF: absolute angles q_i become relative hinge angles.  The
    pin connects the tip to the world (point) or to a carriage sliding along x (line)."""
    tiny = 1e-9       # a point mass: MuJoCo wants a positive inertia, this one is negligible
    body = (f'<inertial pos="0 {-l} 0" mass="{m}" diaginertia="{tiny} {tiny} {tiny}"/>'
            f'<site name="tip" pos="0 {-l} 0"/>')
    for i in range(N, 0, -1):
        pos = "0 0 0" if i == 1 else f"0 {-l} 0"
        inner = body if i == N else (f'<inertial pos="0 {-l} 0" mass="{m}" '
                                     f'diaginertia="{tiny} {tiny} {tiny}"/>' + body)
        body = (f'<body name="b{i}" pos="{pos}"><joint name="j{i}" type="hinge" axis="0 0 1"/>'
                f'{inner}</body>')
    other = "world"
    if pin == "line":
        other = "carriage"
        body += (f'<body name="carriage"><joint name="slide" type="slide" axis="1 0 0"/>'
                 f'<inertial pos="0 0 0" mass="{CARRIAGE}" '
                 f'diaginertia="{CARRIAGE} {CARRIAGE} {CARRIAGE}"/></body>')
    return f"""<mujoco model="chain{N}">
  <option timestep="{H}" integrator="RK4" gravity="0 {-g} 0"/>
  <worldbody>{body}</worldbody>
  <equality><connect name="pin" body1="b{N}" body2="{other}" anchor="0 {-l} 0" active="false"/></equality>
</mujoco>"""


def run_mujoco(N, P, q0, k_pin, k_end, pin="point"):
    import mujoco
    m = mujoco.MjModel.from_xml_string(chain_mjcf(N, P["l"], P["m"], P["g"], pin))
    d = mujoco.MjData(m)
    assert not m.eq_active0[0] and not d.eq_active[0]
    d.qpos[:N] = np.diff(np.concatenate(([0.0], q0)))      # relative hinge angles
    d.qvel[:] = 0.0
    tip = m.site("tip").id
    for _ in range(k_pin):
        mujoco.mj_step(m, d)
    mujoco.mj_kinematics(m, d)
    p0 = d.site_xpos[tip].copy()
    if pin == "point":
        m.eq_data[0, 3:6] = p0                           # the world anchor: where the tip is
    else:                                                # the carriage under the tip, at its speed
        jac = np.zeros((3, m.nv))
        mujoco.mj_jacSite(m, d, jac, None, tip)
        d.qpos[N], d.qvel[N] = p0[0], float(jac[0] @ d.qvel)
        m.eq_data[0, 3:6] = (0.0, p0[1], 0.0)            # anchor in the carriage's frame
    t0 = time.perf_counter()
    d.eq_active[0] = 1
    mujoco.mj_step(m, d)
    switch = time.perf_counter() - t0
    steps, err = [], 0.0
    for _ in range(k_pin + 2, k_end + 1):
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        steps.append(time.perf_counter() - t0)
        mujoco.mj_kinematics(m, d)
        e = d.site_xpos[tip] - p0
        err = max(err, float(np.linalg.norm(e) if pin == "point" else abs(e[1])))
    return dict(step=statistics.median(steps), switch=switch, max=max(steps), res=None, err=err,
                resel=None, version=mujoco.__version__)


def pydy_chain(N, pin="point"):
    """The scenario's chain in sympy.physics.mechanics (absolute angles q_i from the downward
    vertical, a particle m at each link's end, gravity -y), the tip's velocity held by
    velocity constraints on the last speeds (KanesMethod's ``u_dependent``), through PyDy's
    Cython generator: rhs(x, t, [l, m, g]) -> xdot, x = [q, u]; also the seconds taken to
    derive and to compile."""
    import sympy as sp
    from pydy.codegen.ode_function_generators import generate_ode_function
    from sympy.physics.mechanics import KanesMethod, Particle, Point, ReferenceFrame, dynamicsymbols
    t0 = time.perf_counter()
    q, u = dynamicsymbols(f"q1:{N + 1}"), dynamicsymbols(f"u1:{N + 1}")
    l, m, g = sp.symbols("l m g")
    A, P = ReferenceFrame("A"), Point("O")
    P.set_vel(A, 0)
    particles, loads = [], []
    for i in range(N):
        P = P.locatenew(f"P{i + 1}", l * (sp.sin(q[i]) * A.x - sp.cos(q[i]) * A.y))
        P.set_vel(A, sum(l * u[j] * (sp.cos(q[j]) * A.x + sp.sin(q[j]) * A.y)
                         for j in range(i + 1)))
        particles.append(Particle(f"p{i + 1}", P, m))
        loads.append((P, -m * g * A.y))
    v = P.vel(A)
    cons = [v.dot(A.x), v.dot(A.y)] if pin == "point" else [v.dot(A.y)]
    kane = KanesMethod(A, q_ind=q, u_ind=u[:N - len(cons)], u_dependent=u[N - len(cons):],
                       kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)], velocity_constraints=cons)
    kane.kanes_equations(particles, loads)
    t1 = time.perf_counter()
    rhs = generate_ode_function(kane.forcing, q, u, [l, m, g], mass_matrix=kane.mass_matrix,
                                coordinate_derivatives=sp.Matrix(u), generator="cython",
                                constants_arg_type="array")
    return rhs, t1 - t0, time.perf_counter() - t1


def run_pydy(N, P, at_pin, k_pin, k_end, pin="point"):
    """PyDy's pinned chain from our state at the pin (after the jump), k_end - k_pin steps of
    RK4 in numpy; its accelerations there checked against ours first."""
    rhs, derive, compile_ = pydy_chain(N, pin)
    p = np.array([P["l"], P["m"], P["g"]])
    x = np.concatenate((at_pin["q"], at_pin["u"]))
    ud = rhs(x, k_pin * H, p)[N:]
    ind, ours = list(at_pin["ind"]), at_pin["udot_ind"]
    dacc = np.abs(ud[ind] - ours).max() / np.abs(ours).max()
    assert dacc < 1e-9, ("PyDy's accelerations at the pin are not ours", ud[ind], ours)

    def tip(x):
        return P["l"] * np.sin(x[:N]).sum(), -P["l"] * np.cos(x[:N]).sum()

    def tip_vel(x):
        return P["l"] * x[N:] @ np.cos(x[:N]), P["l"] * x[N:] @ np.sin(x[:N])

    x0, y0 = tip(x)
    steps, res, err = [], 0.0, 0.0
    for k in range(k_pin, k_end):
        t0 = time.perf_counter()
        t = k * H      # rhs returns the same array at every call: copies
        k1 = rhs(x, t, p).copy()
        k2 = rhs(x + H / 2 * k1, t + H / 2, p).copy()
        k3 = rhs(x + H / 2 * k2, t + H / 2, p).copy()
        k4 = rhs(x + H * k3, t + H, p)
        x = x + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        steps.append(time.perf_counter() - t0)
        (xt, yt), (vx, vy) = tip(x), tip_vel(x)
        phi = (xt - x0, yt - y0) if pin == "point" else (0.0, yt - y0)
        vel = (vx, vy) if pin == "point" else (0.0, vy)
        res = max(res, *map(abs, phi + vel))
        err = max(err, math.hypot(*phi))
    return dict(step=statistics.median(steps[1:]), switch=steps[0], max=max(steps[1:]), res=res,
                err=err, resel=None, derive=derive, compile=compile_, dacc=dacc)


def over_runs(rs, first_switch=False):
    """One row from repeated runs: medians of step and switch (the first run's switch if
    ``first_switch``), the largest max step, residual and tip error."""
    r = dict(rs[0])
    r["step"] = statistics.median(x["step"] for x in rs)
    r["switch"] = rs[0]["switch"] if first_switch else statistics.median(x["switch"] for x in rs)
    r["max"] = max(x["max"] for x in rs)
    if r["res"] is not None:
        r["res"] = max(x["res"] for x in rs)
    r["err"] = max(x["err"] for x in rs)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default=None, help="chain lengths, comma-separated (default 2,5,10,20)")
    ap.add_argument("--pin", choices=("point", "line"), default="point")
    ap.add_argument("--t-pin", type=float, default=0.5)
    ap.add_argument("--t-end", type=float, default=None, help="default 1.5 s (--quick 0.7 s)")
    ap.add_argument("--paths", default="symbolic,numeric")
    ap.add_argument("--quick", action="store_true", help="N = 2,5, 0.2 s after the pin")
    ap.add_argument("--no-pydy", action="store_true", help="leave PyDy out")
    ap.add_argument("--pydy-max-n", type=int, default=40,
                    help="PyDy for N up to this (derivation + compile: ~40 s at N = 40)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of ours and MuJoCo's (medians; each a fresh scenario)")
    a = ap.parse_args(argv)
    Ns = [int(x) for x in (a.n or ("2,5" if a.quick else "2,5,10,20")).split(",")]
    t_end = a.t_end if a.t_end is not None else (a.t_pin + 0.2 if a.quick else 1.5)
    k_pin, k_end = round(a.t_pin / H), round(t_end / H)
    paths = [p for p in a.paths.split(",") if p]
    try:
        import mujoco
        mj = f"MuJoCo {mujoco.__version__} RK4"
    except ImportError as e:
        mujoco, mj = None, None
        print(f"MuJoCo not measured: {e} (pip install 'embed-fmu[bench]')")
    pydy = None
    if not a.no_pydy:
        try:
            import Cython  # noqa: F401 - PyDy's generator='cython'
            import pydy
            pydy = f"PyDy {pydy.__version__} Cython RK4"
        except ImportError as e:
            print(f"PyDy not measured: {e} (pip install 'embed-fmu[bench]')")

    print(f"pendulum_chain, tip pinned to a {a.pin} at t = {a.t_pin:g} s, RK4 h = 1 ms, "
          f"{k_end - k_pin - 1} steps after the switch; times in us (median), errors in m; "
          f"medians over {max(1, a.repeat)} runs of ours and MuJoCo")
    hdr = (f"{'N':>3s}  {'engine':22s} {'step':>8s} {'switch':>9s} {'max step':>10s} "
           f"{'residual':>9s} {'tip error':>9s} {'re-sel.':>7s} {'step/MJ':>8s} {'switch/MJ':>9s}")
    print(hdr)
    print("-" * len(hdr))
    pydy_times = []
    for N in Ns:
        runs = {}
        q0 = at_pin = None
        for rep in range(max(1, a.repeat)):
            sc = scenarios.load("pendulum_chain").build(N)    # its own library each time
            P = sc.defaults()
            for path in paths:
                r = run_ours(sc, path, a.pin, k_pin, k_end)
                q0, at_pin = r["q0"], at_pin or r["at_pin"]
                runs.setdefault(f"{path} path", []).append(r)
            if mj is not None:
                if q0 is None:
                    q0, _ = sc.initial_state(P)
                runs.setdefault(mj, []).append(run_mujoco(N, P, np.asarray(q0), k_pin, k_end,
                                                          a.pin))
        rows = [(label, over_runs(rs, first_switch=label == "symbolic path"))
                for label, rs in runs.items()]
        ref = rows[-1][1] if mj is not None else None
        if pydy and N > a.pydy_max_n:
            rows.append((pydy, f"not measured: N > --pydy-max-n {a.pydy_max_n}"))
        elif pydy and N <= len(pin_constraints(a.pin)):
            rows.append((pydy, "not measured: no independent speed left (KanesMethod needs one)"))
        elif pydy and at_pin is None:
            rows.append((pydy, "not measured: it starts from our state at the pin (no --paths)"))
        elif pydy:
            r = run_pydy(N, P, at_pin, k_pin, k_end, a.pin)
            pydy_times.append(f"N = {N} {r['derive']:.1f} + {r['compile']:.1f} s, "
                              f"{r['dacc']:.0e}")
            rows.append((pydy, r))
        for label, r in rows:
            if isinstance(r, str):
                print(f"{N:3d}  {label:22s} {r}")
                continue
            ratio = (lambda key: f"{r[key] / ref[key]:.2f}") if ref is not None else (lambda key: "-")
            print(f"{N:3d}  {label:22s} {1e6 * r['step']:8.1f} {1e6 * r['switch']:9.1f} "
                  f"{1e6 * r['max']:10.1f} "
                  f"{'-' if r['res'] is None else format(r['res'], '.1e'):>9s} {r['err']:9.1e} "
                  f"{'-' if r['resel'] is None else r['resel']:>7} "
                  f"{ratio('step'):>8s} {ratio('switch'):>9s}", flush=True)
    if pydy:
        print("PyDy: `switch` is its first step with the tip pinned (no switch machinery: the "
              "pinned equations, derived and compiled before the run, start from our state after "
              "the jump); no re-selection (fixed partition, the last speeds dependent)")
        print("PyDy derivation + Cython compile, and its accelerations at the pin against ours "
              f"(max |difference| / max |udot|): {'; '.join(pydy_times) or '-'}")


if __name__ == "__main__":
    main()
