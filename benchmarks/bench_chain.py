"""N-link planar chain whose tip is pinned at t = 0.5 s: this project against MuJoCo, one run.

    python benchmarks/bench_chain.py [--n 2,5,10,20] [--pin point|line] [--t-end 1.5] [--quick]

The measuring base of issue 14.  The chain is scenarios/pendulum_chain.py (`build(N)`, its
default l, m, g and initial state); it swings free from t = 0 (``set_constraints([])``) and at
t = 0.5 s its tip is pinned where it is, the way tests/test_pendulums.py pins the chain at run
time: the pin's parameters (x_p, d) are set to the tip's position in ``sim.pvec`` and
``set_constraints(["tip_x", "tip_y"])`` (``--pin line``: d and ``["tip_y"]``) activates them
with the momentum-consistent jump of mueller eq 7.  RK4 at 1 ms throughout, one step per
``advance``.

Peers, in the same process and run:
- MuJoCo (``pip install 'embed[bench]'``): the same chain as MJCF text (hinge joints, a point
  mass m at the end of each massless link of length l, gravity along -y), ``integrator="RK4"``,
  timestep 1 ms; the pin is an ``equality`` ``connect`` of the last body's end to the world,
  inactive at start (``active="false"``, ``model.eq_active0``) and switched on through
  ``data.eq_active`` at t = 0.5 s with its world anchor (``eq_data[3:6]``) set to the tip's
  position then.  MJCF has no point-on-a-line equality: for ``--pin line`` the tip is connected
  to a carriage of 1e-6 kg (1e-5 of a link's mass) on a slide joint along x, placed under the
  tip and moving with it at the switch.  MuJoCo's soft constraint lets that tip drift more the
  lighter the carriage (N = 5: 0.16 m at 1e-6 kg, 0.07 m at 1e-3 kg, 0.014 m at 0.1 kg, where
  the carriage is no longer negligible); the table uses the negligible one.
- PyDy: not measured here (optional in issue 14).

Columns, for the steps after the pin:
- step: median wall time of one 1 ms step (us); for MuJoCo one ``mj_step``;
- switch: the step that switches (constraints activated + the first step with them, us);
- max step: the largest single step after the pin, the switch excluded (us);
- residual: ours, the largest ``sim.residual()`` (|Phi| and |B u + C| of the active
  constraints, the ``constraint_residual`` output); MuJoCo has none ("-");
- tip error: the largest distance of the tip from the pin (point) or line (m), from the
  tip's position (ours: the outputs tip_x, tip_y; MuJoCo: the tip site after each step);
- step/MJ, switch/MJ: ours over MuJoCo's, same N.

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
    sim.advance((k_pin + 1) * H)
    switch = time.perf_counter() - t0
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
    return dict(step=statistics.median(steps), switch=switch, max=max(steps), res=res, err=err,
                resel=sim.reselections - resel0, q0=q0)


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default=None, help="chain lengths, comma-separated (default 2,5,10,20)")
    ap.add_argument("--pin", choices=("point", "line"), default="point")
    ap.add_argument("--t-pin", type=float, default=0.5)
    ap.add_argument("--t-end", type=float, default=None, help="default 1.5 s (--quick 0.7 s)")
    ap.add_argument("--paths", default="symbolic,numeric")
    ap.add_argument("--quick", action="store_true", help="N = 2,5, 0.2 s after the pin")
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
        print(f"MuJoCo not measured: {e} (pip install 'embed[bench]')")

    print(f"pendulum_chain, tip pinned to a {a.pin} at t = {a.t_pin:g} s, RK4 h = 1 ms, "
          f"{k_end - k_pin - 1} steps after the switch; times in us (median), errors in m")
    hdr = (f"{'N':>3s}  {'engine':22s} {'step':>8s} {'switch':>9s} {'max step':>10s} "
           f"{'residual':>9s} {'tip error':>9s} {'re-sel.':>7s} {'step/MJ':>8s} {'switch/MJ':>9s}")
    print(hdr)
    print("-" * len(hdr))
    for N in Ns:
        sc = scenarios.load("pendulum_chain").build(N)
        P = sc.defaults()
        rows = []
        q0 = None
        for path in paths:
            r = run_ours(sc, path, a.pin, k_pin, k_end)
            q0 = r["q0"]
            rows.append((f"{path} path", r))
        ref = None
        if mj is not None:
            if q0 is None:
                q0, _ = sc.initial_state(P)
            ref = run_mujoco(N, P, np.asarray(q0), k_pin, k_end, a.pin)
            rows.append((mj, ref))
        for label, r in rows:
            ratio = (lambda key: f"{r[key] / ref[key]:.2f}") if ref is not None else (lambda key: "-")
            print(f"{N:3d}  {label:22s} {1e6 * r['step']:8.1f} {1e6 * r['switch']:9.1f} "
                  f"{1e6 * r['max']:10.1f} "
                  f"{'-' if r['res'] is None else format(r['res'], '.1e'):>9s} {r['err']:9.1e} "
                  f"{'-' if r['resel'] is None else r['resel']:>7} "
                  f"{ratio('step'):>8s} {ratio('switch'):>9s}", flush=True)
    print("PyDy: not measured (optional, issue 14)")


if __name__ == "__main__":
    main()
