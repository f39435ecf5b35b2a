"""The kneed walker's period-one gait: the fixed point of its stride map, by Newton.

    PYTHONPATH=. python benchmarks/walker_gait.py [--slope 0.0504] [--write]

The stride map P takes the state just after a heel strike, relative to the stance foot,
z = (stance leg angle, swing thigh, swing shank, their rates) (``scenarios.kneed_walker``:
absolute angles from the downward vertical), to the same state just after the next heel
strike, the legs' roles swapped.  It is evaluated by shooting with the engine (the scenario's
simulator, RK4 at 1 ms, the FMU's default): the state after the impact is the one the
simulator logs (``Simulator.impacts``).  Newton on P(z) - z = 0 with a forward-difference
Jacobian (step 1e-7), started from Hsu Chen's published state; it prints the iterations, the
eigenvalues of DP at the fixed point (the gait is stable when they lie inside the unit
circle) and, with --write, the fixed point into ``scenarios/kneed_walker.py``
(``FIXED_POINT``), the scenario's default start.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import scenarios  # noqa: E402
from scenarios.kneed_walker import (FIXED_POINT, Q_NAMES, U_NAMES,  # noqa: E402
                                    start_state)

HSU_CHEN = (0.1877, -0.2884, -0.2884, -1.1014, -0.0399, -0.0399)
FD_STEP = 1e-7


def reduced(q, u, stance):
    """z of the full (q, u) with leg ``stance`` ("i" or "o") on the ground."""
    s, w = (2, 4) if stance == "i" else (4, 2)
    return np.array([q[s], q[w], q[w + 1], u[s], u[w], u[w + 1]])


def stride(sc, z, params=None, t_max=3.0):
    """P(z): the reduced state just after the first heel strike from z (inner leg standing
    at x = 0 at t = 0), and the time of that strike.  Raises RuntimeError if the walker does
    not strike within t_max s."""
    q0, u0 = start_state(z)
    p = {**(params or {}), **{f"{n}_start": float(v) for n, v in zip(Q_NAMES + U_NAMES,
                                                                    np.concatenate((q0, u0)))}}
    sim = sc.simulator(p)
    t = 0.0
    while t < t_max:
        t += 0.05
        sim.advance(t)
        strikes = [e for e in sim.impacts if e[1] == "heel_strike"]
        if strikes:
            t_s, _, q, _, u_plus = strikes[0]
            return reduced(q, u_plus, "o"), t_s
    raise RuntimeError(f"no heel strike within {t_max} s from z = {z}")


def jacobian(sc, z, Pz, params=None):
    """Forward-difference Jacobian of P at z (P(z) given)."""
    J = np.empty((6, 6))
    for k in range(6):
        dz = np.zeros(6)
        dz[k] = FD_STEP * max(1.0, abs(z[k]))
        J[:, k] = (stride(sc, z + dz, params)[0] - Pz) / dz[k]
    return J


def fixed_point(sc, z0, params=None, tol=1e-12, iters=12, log=print):
    """Newton on P(z) - z = 0; returns (z*, DP(z*), stride time)."""
    z = np.array(z0, dtype=float)
    for it in range(iters):
        Pz, T = stride(sc, z, params)
        r = Pz - z
        log(f"  iteration {it}: |P(z) - z| = {np.max(np.abs(r)):.3e}, stride {T:.6f} s")
        J = jacobian(sc, z, Pz, params)
        if np.max(np.abs(r)) < tol:
            return z, J, T
        z = z - np.linalg.solve(J - np.eye(6), r)
    raise RuntimeError(f"Newton did not converge in {iters} iterations (|r| = "
                       f"{np.max(np.abs(r)):.3e})")


def write(z):
    path = ROOT / "scenarios" / "kneed_walker.py"
    text = path.read_text()
    new = "FIXED_POINT = (" + ", ".join(repr(float(v)) for v in z) + ")"
    text, n = re.subn(r"FIXED_POINT = \([^)]*\)", lambda _: new, text)
    assert n == 1, "FIXED_POINT not found"
    path.write_text(text)
    print(f"wrote {new} into {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slope", type=float, default=None)
    ap.add_argument("--write", action="store_true", help="ship the fixed point as the start")
    ap.add_argument("--from-default", action="store_true",
                    help="start Newton at the shipped FIXED_POINT, not Hsu Chen's state")
    a = ap.parse_args()
    sc = scenarios.load("kneed_walker").build()
    params = {} if a.slope is None else {"slope": a.slope}
    z0 = FIXED_POINT if a.from_default else HSU_CHEN
    print(f"kneed walker, slope {params.get('slope', sc.defaults()['slope'])} rad: Newton on "
          f"the stride map from z0 = {tuple(z0)}")
    z, J, T = fixed_point(sc, z0, params)
    ev = np.linalg.eigvals(J)
    print("fixed point z* (stance angle, swing thigh, swing shank, rates):")
    print("  " + ", ".join(f"{v:.12f}" for v in z))
    print(f"stride time {T:.9f} s")
    print("eigenvalues of the stride map at z*: " +
          ", ".join(f"{e.real:+.6f}{e.imag:+.6f}j (|{abs(e):.6f}|)" for e in
                    sorted(ev, key=abs, reverse=True)))
    print("stable" if max(abs(ev)) < 1 else "UNSTABLE", f"(largest |eigenvalue| {max(abs(ev)):.6f})")
    if a.write:
        write(z)


if __name__ == "__main__":
    main()
