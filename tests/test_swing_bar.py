"""The swing bar of wang2019 Sec 3.1 (scenarios/swing_bar.py) against independent references.

- Invariants: with T = b = 0 the energy is constant and |S_j| = 1 over 100 s; with Table 2's
  T and b the work-energy balance E(t) - E(0) = int (T dq_H - b sum |v_i|^2) dt holds (Simpson
  on the 1 ms grid).
- sympy's own KanesMethod on the same System (the quaternion's normalization a holonomic
  constraint with sigma_w, sigma_n dependent): the same accelerations at random states.
- Newton-Euler written here for the steady state of wang2019 Fig 6: bar 1 turning at Omega,
  bars 2-3 at rest relative to it; the run damps toward it.
"""

import math

import numpy as np
import pytest
import symengine as se
import sympy as sp
from scipy.optimize import fsolve
from scipy.spatial.transform import Rotation

from embed import ModeLibrary, Simulator
from scenarios import swing_bar

_SC = []


def scenario():
    if not _SC:
        _SC.append(swing_bar.build())
    return _SC[0]


def test_interface():
    sc = scenario()
    names = [v.name for v in sc.outputs]
    ends = [f"end{k}_{c}" for k in (1, 2, 3) for c in "xyz"]
    for n in ends + ["energy", "power_in", "power_damping", "quat_norm_error",
                     "constraint_residual", "mode", "event_count", "last_event_time"]:
        assert n in names
    P = sc.defaults()
    assert {k: P[k] for k in ("L1", "L2", "L3", "M1", "M2", "M3", "g", "b", "T")} == dict(
        L1=1.0, L2=1.0, L3=0.5, M1=1.0, M2=1.0, M3=0.5, g=9.81, b=0.2, T=2.0)   # Table 2
    assert (P["q_H_start"], P["dq_H_start"]) == (0.0, -5.0)
    h = math.sqrt(2) / 2
    assert [P[f"sigma_{c}_start"] for c in "wxyz"] == [h, 0.0, h, 0.0]
    assert [P[f"dq_{c}_start"] for c in "xyz"] == [0.0, 0.0, 0.0]
    o = sc.observe(sc.simulator())       # the start drawn in the docstring
    assert np.allclose([o[n] for n in ends], [1, 0, 0, 2, 0, 0, 2, 0, -0.5], atol=1e-15)
    assert o["power_in"] == pytest.approx(-10.0)


def test_conservative_run_keeps_energy_and_unit_quaternion():
    """T = b = 0: energy constant to 1e-9 of its scale and |S_j| = 1 to 1e-12 over 100 s."""
    sc = scenario()
    sim = sc.simulator({"T": 0.0, "b": 0.0})
    o = sc.observe(sim)
    E0 = o["energy"]
    drift = norm = 0.0
    for k in range(1, 201):
        sim.advance(0.5 * k)
        o = sc.observe(sim)
        drift = max(drift, abs(o["energy"] - E0))
        norm = max(norm, o["quat_norm_error"], o["constraint_residual"])
        assert o["power_in"] == 0.0 and o["power_damping"] == 0.0
    S = np.array([o[f"sigma_{c}"] for c in "wxyz"])
    assert abs(np.linalg.norm(S) - 1) < 1e-12
    assert norm < 1e-12
    assert drift < 1e-9 * abs(E0), drift
    assert abs(o["dq_x"]) + abs(o["dq_y"]) + abs(o["dq_z"]) > 0.1     # it did swing


def test_work_energy_balance_table_2():
    """E(t) - E(0) = int_0^t (power_in - power_damping) dt to 1e-6 of the energy scale over
    10 s (Simpson's rule on the 1 ms steps), power_damping >= 0 throughout."""
    sc = scenario()
    sim = sc.simulator()
    o = sc.observe(sim)
    E0, scale = o["energy"], abs(o["energy"])
    h, n = 1e-3, 10000
    f, E = np.empty(n + 1), np.empty(n + 1)
    f[0] = o["power_in"] - o["power_damping"]
    E[0] = E0
    for k in range(1, n + 1):
        sim.advance(k * h)
        o = sc.observe(sim)
        assert o["power_damping"] >= 0.0
        f[k] = o["power_in"] - o["power_damping"]
        E[k] = o["energy"]
    for m in (2000, 5000, 10000):            # Simpson over [0, m h], m even
        W = h / 3 * (f[0] + f[m] + 4 * f[1:m:2].sum() + 2 * f[2:m:2].sum())
        assert abs(E[m] - E0 - W) < 1e-6 * scale, (m, E[m] - E0, W)
    assert E[-1] - E0 < -10.0                # the damping took most of the start's energy


# ------------------------------------------------------------------- sympy's KanesMethod
def _kanes_reference():
    """KanesMethod on the scenario's own System, the normalization a holonomic constraint
    with sigma_w and sigma_n dependent: a numeric function (q, u, params) -> udot."""
    system, _, _ = swing_bar.build_system()
    ball = system.get_joint("ball")
    q, u = list(system.q), list(system.u)
    system.q_ind, system.q_dep = [q[0]] + q[2:], [q[1]]
    system.u_ind, system.u_dep = u[:4], [u[4]]
    system.add_holonomic_constraints(ball.normalization)
    system.form_eoms()
    qs, us = list(system.q), list(system.u)
    plain = {x: sp.Symbol(f"_{k}") for k, x in enumerate(qs + us)}
    args = list(plain.values()) + list(swing_bar.PARAMS)
    MM, FF = system.mass_matrix_full, system.forcing_full
    fM = se.Lambdify(args, [se.sympify(e.xreplace(plain)) for e in MM], cse=True)
    fF = se.Lambdify(args, [se.sympify(e.xreplace(plain)) for e in FF], cse=True)
    names = [str(x.func) for x in qs + us]
    n = len(qs)

    def udot(q_model, u_model, model, params):
        """udot in the model's speed order at the model's (q, u)."""
        value = dict(zip([str(s) for s in model.q + model.u], list(q_model) + list(u_model)))
        x = np.concatenate(([value[k] for k in names], params))
        xd = np.linalg.solve(np.asarray(fM(x)).reshape(MM.shape), np.asarray(fF(x)).ravel())
        by_name = dict(zip(names[n:], xd[n:]))
        return np.array([by_name[str(s)] for s in model.u])
    return udot


def test_accelerations_match_sympy_kanes_method():
    """The engine's embedded accelerations (gillespie2005 eq 16) equal sympy's KanesMethod with
    the dependent speed sigma_n (its own elimination) at random states and parameters."""
    sc = scenario()
    model = sc.automaton.model
    ref = _kanes_reference()
    lib = ModeLibrary.of(sc.automaton, "symbolic")
    rng = np.random.default_rng(17)
    for _ in range(5):
        S = rng.normal(size=4)
        S /= np.linalg.norm(S)
        q = np.concatenate(([rng.uniform(-np.pi, np.pi)], S))
        u = np.concatenate((rng.normal(scale=3, size=4), [0.0]))
        P = dict(zip(map(str, swing_bar.PARAMS),
                     [*rng.uniform(0.3, 2, 3), *rng.uniform(0.2, 3, 3), rng.uniform(1, 20),
                      rng.uniform(0, 1), rng.uniform(-5, 5)]))
        sim = Simulator(sc.automaton, {**sc.defaults(), **P}, library=lib)
        sim.start(0.0, q, u)
        assert np.allclose(sim.q, q, atol=1e-15) and np.allclose(sim.u, u, atol=1e-15)
        got = sim.compiled_mode.rhs(0.0, sim.x, sim.pvec)
        want = ref(q, u, model, [P[str(s)] for s in swing_bar.PARAMS])
        ind = [i for i in range(5) if i not in sim.dep]
        assert [str(model.u[i]) for i in sim.dep] == ["sigma_n"]
        scale = max(1.0, np.abs(want).max())
        assert np.allclose(got[5:], want[ind], rtol=1e-10, atol=1e-10 * scale), (got, want)


# --------------------------------------------------------- the steady state of Fig 6
def steady_state(P, guess):
    """Newton-Euler for bar 1 turning at Omega about z with bars 2-3 at rest relative to it
    (the relative orientation R = A(S_j), bar 1 along x): about the ball joint B, the moments
    of gravity, damping (-b v_i) and inertia (-m_i a_i, a_i = Omega z x (Omega z x r_i); the
    bodies' dH/dt = omega x I omega) on bars 2-3 vanish; about the hinge, T equals the
    damping's moment b Omega sum (x_i^2 + y_i^2).  Returns Omega, R."""
    L1, L2, L3, M1, M2, M3, g, b, T = (P[k] for k in ("L1", "L2", "L3", "M1", "M2", "M3",
                                                       "g", "b", "T"))
    z = np.array([0.0, 0.0, 1.0])
    I2 = np.diag([M2 * L2 ** 2 / 12, M2 * L2 ** 2 / 12, 0.0])     # bar 2 along its z
    I3 = np.diag([0.0, M3 * L3 ** 2 / 12, M3 * L3 ** 2 / 12])     # bar 3 along its x

    def parts(x):
        Om, R = x[0], Rotation.from_rotvec(x[1:]).as_matrix()
        B = np.array([L1, 0.0, 0.0])
        r1 = B / 2
        r2 = B + L2 / 2 * R[:, 2]
        r3 = B + L2 * R[:, 2] + L3 / 2 * R[:, 0]
        return Om, R, B, r1, r2, r3

    def equations(x):
        Om, R, B, r1, r2, r3 = parts(x)
        w = Om * z
        M = np.zeros(3)
        for m, r, I in ((M2, r2, I2), (M3, r3, I3)):
            F = m * g * -z - b * np.cross(w, r) - m * np.cross(w, np.cross(w, r))
            M += np.cross(r - B, F) - np.cross(w, R @ I @ R.T @ w)
        hinge = T - b * Om * sum(r[0] ** 2 + r[1] ** 2 for r in (r1, r2, r3))
        return [*M, hinge]

    x = fsolve(equations, guess, xtol=1e-12)
    assert np.abs(equations(x)).max() < 1e-10
    return x[0], Rotation.from_rotvec(x[1:]).as_matrix()


def test_run_damps_to_the_steady_state_of_fig_6():
    """From Table 2's start the ball joint's rates die out and bar 1 settles at the Newton-Euler
    steady state: Omega and the relative orientation of bars 2-3 (A(S_j)), the drive's power
    T Omega balancing the damping's."""
    sc = scenario()
    sim = sc.simulator()
    P = sc.defaults()
    errors = []
    for t_end in (40.0, 80.0):
        sim.advance(t_end)
        o = sc.observe(sim)
        S = np.array([o[f"sigma_{c}"] for c in "wxyz"])
        R_sim = Rotation.from_quat([*S[1:], S[0]]).as_matrix()      # scipy: scalar last
        guess = np.concatenate(([o["dq_H"]], Rotation.from_matrix(R_sim).as_rotvec()))
        Om, R = steady_state(P, guess)
        rates = np.abs([o["dq_x"], o["dq_y"], o["dq_z"]]).max()
        errors.append(max(abs(o["dq_H"] - Om), np.abs(R_sim - R).max(), rates))
    assert Om > 0 and errors[1] < 1e-2 and errors[1] < errors[0] / 3, errors
    assert o["power_in"] == pytest.approx(P["T"] * Om, rel=1e-2)
    assert o["power_damping"] == pytest.approx(o["power_in"], rel=5e-2)
    assert o["end2_z"] < 0 and o["end3_z"] < o["end1_z"]       # bars 2-3 hang below bar 1
