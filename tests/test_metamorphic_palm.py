"""metamorphic_palm (mueller Fig 1, eq 5-7): the spherical five-bar, its lock and release.

The references are written here, independently of the scenario's sympy model: the mass matrix
of the open chain from the links' rotation about O (T = 1/2 sum omega_i^T I_O,i omega_i, the arc
inertia by quadrature), the loop's Jacobian from d a / dt = omega_4 x a, and mueller eq 7 in its
projector form (N_{J1,M}) solved for the jump.
"""

import math

import numpy as np
import pytest

from scenarios import metamorphic_palm as mp

DEG = math.pi / 180


@pytest.fixture(scope="module")
def palm():
    return mp.build()


def rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def arc_inertia(m, R, a, n=40):
    """Inertia about O of the thin uniform arc (0, -R sin phi, R cos phi), phi in [0, a], in its
    link frame, by Gauss-Legendre quadrature."""
    x, w = np.polynomial.legendre.leggauss(n)
    phi, w = a / 2 * (x + 1), w / 2
    I = np.zeros((3, 3))
    for f, wk in zip(phi, w):
        p = R * np.array([0.0, -math.sin(f), math.cos(f)])
        I += m * wk * ((p @ p) * np.eye(3) - np.outer(p, p))
    return I


def chain(q, P):
    """Link frames R_i (in N) and joint axes z_i (in N) of the open chain, and the joint-5 axis
    a that link 4 carries, for q = theta1..theta4."""
    alpha = [P[n] for n in mp.NAMES]
    R, frames, axes = np.eye(3), [], []
    for t, a in zip(q, alpha[:4]):
        axes.append(R[:, 2].copy())          # joint i's axis: z of the frame before it turns
        R = R @ rz(t)
        frames.append(R.copy())
        R = R @ rx(a)
    return frames, axes, R[:, 2], rx(-alpha[4])


def mass_matrix(q, P):
    """M of T = 1/2 sum_i omega_i^T I_O,i omega_i, omega_i = sum_{j <= i} u_j z_j."""
    frames, axes, _, _ = chain(q, P)
    M = np.zeros((4, 4))
    for i, (Ri, a) in enumerate(zip(frames, [P[n] for n in mp.NAMES])):
        I = Ri @ arc_inertia(P["m"], P["R"], a) @ Ri.T
        J = np.zeros((3, 4))
        for j in range(i + 1):
            J[:, j] = axes[j]
        M += J.T @ I @ J
    return M


def loop_jacobian(q, P):
    """J_1: d/dt (a . x_5, a . y_5) = J_1 u, with da/dt = omega_4 x a."""
    _, axes, a, G5 = chain(q, P)
    return np.array([[np.cross(z, a) @ G5[:, k] for z in axes] for k in (0, 1)])


def loop_residual(q, P):
    _, _, a, G5 = chain(q, P)
    return math.hypot(a @ G5[:, 0], a @ G5[:, 1])


def eq7_jump(q, u, P):
    """mueller eq 7: [M, N^T J2^T; J2 N, 0] [du; Lambda] = [0; -J2 u-], N = I - J1^+_M J1."""
    M, J1 = mass_matrix(q, P), loop_jacobian(q, P)
    J2 = np.array([[1.0, 0, 0, 0]])
    Mi = np.linalg.inv(M)
    N = np.eye(4) - Mi @ J1.T @ np.linalg.solve(J1 @ Mi @ J1.T, J1)
    K = np.block([[M, N.T @ J2.T], [J2 @ N, np.zeros((1, 1))]])
    z = np.linalg.solve(K, np.concatenate((np.zeros(4), -J2 @ u)))
    return z[:4], z[4]


def state(sc, sim):
    o = sc.observe(sim)
    return (np.array([o[f"theta{i}"] for i in range(1, 5)]),
            np.array([o[f"omega{i}"] for i in range(1, 5)]), o)


def test_mass_matrix_and_energy_match_the_independent_formulation(palm):
    """The scenario's kinetic energy (its energy output minus the potentials) equals
    1/2 u^T M u of the test's own M at the start, and the start closes the loop."""
    P = palm.defaults()
    sim = palm.simulator(embedding="numeric")
    q, u, o = state(palm, sim)
    T = 0.5 * u @ mass_matrix(q, P) @ u
    frames = chain(q, P)[0]
    V = 0.0
    for Ri, a in zip(frames, [P[n] for n in mp.NAMES]):
        c = Ri @ (P["R"] * math.sin(a / 2) / (a / 2) * np.array([0, -math.sin(a / 2),
                                                                 math.cos(a / 2)]))
        V += P["m"] * P["g"] * c[1]
    V += P["k"] / 2 * ((q[0] - P["theta1_home"]) ** 2 + (o["theta5"] - P["theta5_home"]) ** 2)
    assert o["energy"] == pytest.approx(T + V, rel=1e-12, abs=1e-15)
    assert loop_residual(q, P) < 1e-12 and abs(loop_jacobian(q, P) @ u).max() < 1e-12


def test_lock_jump_is_mueller_eq7_and_release_makes_none(palm):
    """Lock at two instants: closure <= 1e-10 throughout, omega1 = 0 after the lock, the jump
    equal to the test's eq 7, no energy gained; the release leaves the speeds as they were."""
    P = palm.defaults()
    for t_lock in (0.23, 0.61):
        sim = palm.simulator(embedding="numeric")
        t, worst = 0.0, 0.0
        while t < t_lock - 1e-12:
            t = round(t + 0.01, 10)
            sim.advance(min(t, t_lock))
            q, u, o = state(palm, sim)
            worst = max(worst, o["loop_residual"], loop_residual(q, P))
        q0, u_minus, before = state(palm, sim)
        assert abs(u_minus[0]) > 0.05                  # drive 1 moves: the lock acts
        sim.set_inputs({"lock_drive1": 1})
        sim.advance(sim.t)                             # the event, at the same instant
        q1, u_plus, after = state(palm, sim)
        assert after["mode"] == mp.LOCKED and np.array_equal(q1, q0)
        assert abs(u_plus[0]) <= 1e-12
        du, Lam = eq7_jump(q0, u_minus, P)
        assert np.abs((u_plus - u_minus) - du).max() <= 1e-10
        # eq 5: M du + N^T J2^T Lambda = 0; the lock's impulse on link 1 is -Lambda
        assert after["lock_impulse"] == pytest.approx(-Lam, rel=1e-9)
        M = mass_matrix(q0, P)
        assert 0.5 * u_plus @ M @ u_plus <= 0.5 * u_minus @ M @ u_minus
        assert after["energy"] <= before["energy"]
        for k in range(1, 41):                         # locked: theta1 held
            sim.advance(t_lock + k * 0.01)
            q, u, o = state(palm, sim)
            assert abs(q[0] - q0[0]) <= 1e-10 and abs(u[0]) <= 1e-10
            worst = max(worst, o["loop_residual"], loop_residual(q, P))
        q2, u_held, _ = state(palm, sim)
        sim.set_inputs({"lock_drive1": 0})
        sim.advance(sim.t)
        q3, u_free, released = state(palm, sim)
        assert released["mode"] == mp.FREE and np.array_equal(q3, q2)
        assert np.abs(u_free - u_held).max() <= 1e-12
        for k in range(1, 31):
            sim.advance(sim.t + 0.01)
            q, u, o = state(palm, sim)
            worst = max(worst, o["loop_residual"], loop_residual(q, P))
        assert worst <= 1e-10


def test_energy_is_conserved_while_free_and_while_locked(palm):
    """No torques: the energy output is constant between the events (RK4 at 1 ms)."""
    sim = palm.simulator(embedding="numeric")
    E0 = palm.observe(sim)["energy"]
    sim.advance(0.5)
    assert palm.observe(sim)["energy"] == pytest.approx(E0, rel=1e-7)
    sim.set_inputs({"lock_drive1": 1})
    sim.advance(0.5)
    E1 = palm.observe(sim)["energy"]
    sim.advance(1.0)
    assert palm.observe(sim)["energy"] == pytest.approx(E1, rel=1e-7)


def test_drive_torque_does_the_work(palm):
    """tau1 on link 1 while free: E(t) - E(0) = integral of tau1 omega1 (trapezoid on 1 ms)."""
    sim = palm.simulator(embedding="numeric", inputs={"tau1": 0.01})
    E0, work = palm.observe(sim)["energy"], 0.0
    w_prev = palm.observe(sim)["omega1"]
    for k in range(1, 301):
        sim.advance(k * 1e-3)
        w = palm.observe(sim)["omega1"]
        work += 0.01 * (w + w_prev) / 2 * 1e-3
        w_prev = w
    assert palm.observe(sim)["energy"] - E0 == pytest.approx(work, rel=1e-4, abs=1e-9)


def test_symbolic_path_falls_back_and_agrees(palm):
    """The symbolic embedding of the closed loop is over budget (SymbolicBudgetError): the
    modes run on the numeric path, and the run is the numeric simulator's."""
    sym = palm.simulator(embedding="symbolic")
    num = palm.simulator(embedding="numeric")
    assert ("loop_x", "loop_y") in sym.library.over_budget
    for sim in (sym, num):
        sim.advance(0.2)
        sim.set_inputs({"lock_drive1": 1})
        sim.advance(0.3)
    assert ("lock", "loop_x", "loop_y") in sym.library.over_budget
    a, b = palm.observe(sym), palm.observe(num)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-9, abs=1e-12), k


def test_fmu_steps_in_fmpy_with_the_lock_toggled(tmp_path):
    """The FMU built and stepped by fmpy; lock_drive1 set through the Boolean input."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    import build_fmu
    build_fmu.main(["metamorphic_palm", "--out", str(tmp_path)])
    path = str(tmp_path / "metamorphic_palm.fmu")
    md = read_model_description(path)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    d = extract(path)
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName="palm")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    names = ["omega1", "loop_residual", "energy", "lock_impulse"]
    t, h, rows = 0.0, 1e-3, []
    for k in range(600):
        if k == 200:
            fmu.setBoolean([vr["lock_drive1"]], [True])
        if k == 400:
            fmu.setBoolean([vr["lock_drive1"]], [False])
        fmu.doStep(t, h)
        t += h
        rows.append(fmu.getReal([vr[n] for n in names])
                    + fmu.getInteger([vr["mode"], vr["status"]]))
    fmu.terminate()
    fmu.freeInstance()
    rows = np.array(rows)
    assert (rows[:, 5] == 0).all()
    assert (rows[:200, 4] == 1).all() and (rows[200:400, 4] == 2).all()
    assert (rows[400:, 4] == 1).all()
    assert np.abs(rows[200:400, 0]).max() <= 1e-10      # drive 1 held
    assert abs(rows[300, 3]) > 0 and rows[:, 1].max() <= 1e-10
    assert rows[201, 2] <= rows[199, 2] + 1e-12         # the lock adds no energy
