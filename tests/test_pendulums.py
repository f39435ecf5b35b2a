"""pendulum_line and pendulum_chain against a Lagrangian written out in the test.

For particles m_k at the joints of a planar chain of massless links (absolute angles q_i
from the downward vertical) the mass matrix is M_ij = l_i l_j cos(q_i - q_j) sum_{k>=max(i,j)} m_k
and the generalized forces are f_i = -l_i sum_j l_j sin(q_i - q_j) u_j^2 sum_{k>=max(i,j)} m_k
- g l_i sin(q_i) sum_{k>=i} m_k.  With constraint rows B and Bdot u, the accelerations and
multipliers solve [M B^T; B 0] [u'; -lambda] = [f; -Bdot u]: the augmented Lagrange
multiplier system, an independent formulation of what the engine embeds.
"""

import math

import numpy as np
import pytest

from scenarios import pendulum_chain, pendulum_line


def lagrange(q, u, l, m, g):
    n = len(q)
    tail = np.array([sum(m[k] for k in range(max(i, j), n)) for i in range(n) for j in range(n)]
                    ).reshape(n, n)
    dq = q[:, None] - q[None, :]
    M = np.outer(l, l) * np.cos(dq) * tail
    f = -(np.outer(l, l) * np.sin(dq) * tail) @ (u ** 2)
    f -= g * l * np.sin(q) * np.array([sum(m[k:]) for k in range(n)])
    return M, f


def rows(q, u, l, names, x_p=0.0):
    """B and Bdot u of the tip constraints (tip_y: sum l cos q = d, tip_x: sum l sin q = x_p)."""
    B, gam = [], []
    for c in names:
        if c == "tip_y":
            B.append(l * np.sin(q))
            gam.append(np.sum(l * np.cos(q) * u ** 2))
        elif c == "tip_x":
            B.append(l * np.cos(q))
            gam.append(-np.sum(l * np.sin(q) * u ** 2))
    return np.array(B), np.array(gam)


def augmented(q, u, l, m, g, names):
    M, f = lagrange(q, u, l, m, g)
    B, gam = rows(q, u, l, names)
    k = len(names)
    K = np.block([[M, B.T], [B, np.zeros((k, k))]])
    z = np.linalg.solve(K, np.concatenate((f, -gam)))
    return z[:len(q)], -z[len(q):]          # u', lambda with M u' = f + B^T lambda


def consistent_line_state(rng, l1, l2, d):
    while True:
        q1 = rng.uniform(-1.2, 1.2)
        c = (d - l1 * math.cos(q1)) / l2
        if abs(c) < 0.95:
            q2 = math.copysign(math.acos(c), rng.choice([-1, 1]))
            u1 = rng.normal()
            u2 = -l1 * math.sin(q1) * u1 / (l2 * math.sin(q2))
            return np.array([q1, q2]), np.array([u1, u2])


@pytest.fixture(scope="module")
def line():
    return pendulum_line.build()


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_line_accelerations_and_normal_force_match_lagrange(line, embedding):
    rng = np.random.default_rng(3)
    P = line.defaults()
    sim = line.simulator(embedding=embedding)
    for _ in range(15):
        q, u = consistent_line_state(rng, P["l1"], P["l2"], P["d"])
        for dep in [(0,), (1,)]:
            compiled = sim.mode_compiler.compiled(1, dep)
            x = np.concatenate((q, u[list(compiled.ind)]))
            ud_ref, lam_ref = augmented(q, u, np.array([P["l1"], P["l2"]]),
                                        [P["m1"], P["m2"]], P["g"], ["tip_y"])
            xdot = compiled.rhs(0.0, x, sim.pvec)
            assert xdot[:2] == pytest.approx(u, abs=1e-12)
            assert xdot[2:] == pytest.approx(ud_ref[list(compiled.ind)], rel=1e-10, abs=1e-10)
            mon = compiled.monitors(0.0, x, sim.pvec)
            assert mon[compiled.sl_lambda][0] == pytest.approx(lam_ref[0], rel=1e-10, abs=1e-10)
            assert mon[compiled.sl_u] == pytest.approx(u, rel=1e-12, abs=1e-12)
            # kappa(B1) = ||B||_1 ||B1^-1||_1 for the one row B = (l1 sin q1, l2 sin q2)
            B = np.array([P["l1"], P["l2"]]) * np.sin(q)
            assert mon[compiled.i_kappa] == pytest.approx(np.max(np.abs(B)) / abs(B[dep[0]]), rel=1e-10)


def test_line_energy_and_constraints_over_a_run(line):
    sim = line.simulator()
    o = line.observe(sim)
    e0 = o["kinetic_energy"] + o["potential_energy"]
    worst = 0.0
    for k in range(1, 51):
        sim.advance(0.1 * k)
        o = line.observe(sim)
        worst = max(worst, o["constraint_residual"], abs(o["tip_y"] + line.defaults()["d"]))
    assert worst <= 1e-10
    assert o["kinetic_energy"] + o["potential_energy"] == pytest.approx(e0, rel=1e-7)
    assert sim.reselections >= 1          # q2 passes through 0: u2 cannot stay dependent


def test_line_both_paths_give_the_same_trajectory(line):
    a, b = line.simulator(), line.simulator(embedding="numeric")
    a.advance(1.0)
    b.advance(1.0)
    assert a.q == pytest.approx(b.q, abs=1e-10)
    assert a.u == pytest.approx(b.u, abs=1e-10)


@pytest.fixture(scope="module")
def chain():
    return pendulum_chain.build(4)


def chain_state(rng, N, l, d):
    while True:
        q = rng.uniform(-0.9, 0.9, N)
        c = (d - l * np.sum(np.cos(q[:-1]))) / l
        if abs(c) < 0.95:
            q[-1] = math.acos(c) * rng.choice([-1, 1])
            u = rng.normal(size=N)
            u[-1] = -np.sum(np.sin(q[:-1]) * u[:-1]) / math.sin(q[-1])
            return q, u


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_chain_accelerations_match_lagrange(chain, embedding):
    rng = np.random.default_rng(5)
    P = chain.defaults()
    N, l = 4, P["l"]
    sim = chain.simulator(embedding=embedding)
    for _ in range(10):
        q, u = chain_state(rng, N, l, P["d"])
        compiled = sim.mode_compiler.compiled(1, (N - 1,))
        x = np.concatenate((q, u[list(compiled.ind)]))
        ud_ref, lam_ref = augmented(q, u, np.full(N, l), [P["m"]] * N, P["g"], ["tip_y"])
        assert compiled.rhs(0.0, x, sim.pvec)[N:] == pytest.approx(ud_ref[:-1], rel=1e-9, abs=1e-9)
        assert compiled.monitors(0.0, x, sim.pvec)[compiled.sl_lambda][0] == pytest.approx(lam_ref[0], rel=1e-9)


def test_latch_catches_the_tip_momentum_consistently(chain):
    """Armed latch: the tip is caught where it passes x_p (a located event); the jump
    M (u+ - u-) = B^T Lambda (mueller eq 5-7) removes exactly the tip's horizontal velocity."""
    P = chain.defaults()
    N, l = 4, P["l"]
    sim = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    o = chain.observe(sim)
    x0 = o["tip_x"]
    before = {}
    t = 0.0
    while sim.mode == 1 and t < 3.0:
        before = dict(q=np.array(sim.q), u=np.array(sim.u), t=sim.t)
        t += 1e-3
        sim.advance(t)
    assert sim.mode == 2, "the tip never reached the latch"
    t_e, guard, frm, to = sim.events[-1]
    assert guard.startswith("latch") and (frm, to) == (1, 2)
    o = chain.observe(sim)
    assert abs(o["tip_x"] - P["x_p"]) <= 1e-10 and abs(o["tip_vx"]) <= 1e-10
    assert np.sign(x0 - P["x_p"]) != 0
    # momentum balance at the event: replay the jump from the pre-event state
    sim2 = chain.simulator(params={"u_start": 2.0}, inputs={"pin": 2})
    sim2.advance(before["t"])
    sim2.advance(t_e)                     # stops exactly at the event (handled at t_e)
    assert sim2.mode == 2
    imp = sim2.last_impulse
    q = np.array(sim2.q)
    u_plus = np.array(sim2.u)
    # u- is the state an instant before: step to t_e on mode 1 from the saved pre-event state
    M, _ = lagrange(q, u_plus, np.full(N, l), [P["m"]] * N, P["g"])
    B, _ = rows(q, u_plus, np.full(N, l), ["tip_x", "tip_y"])
    assert B @ u_plus == pytest.approx(np.zeros(2), abs=1e-10)
    lam = np.array([imp["tip_x"], imp["tip_y"]])
    u_minus = u_plus - np.linalg.solve(M, B.T @ lam)
    # the pre-impact velocity kept the tip on the line and moved it along x
    assert (B[1] @ u_minus) == pytest.approx(0.0, abs=1e-9)
    assert abs(B[0] @ u_minus) > 1e-3
    ke = lambda v: 0.5 * v @ M @ v  # noqa: E731
    assert ke(u_plus) < ke(u_minus)      # a plastic catch never adds energy


def test_never_seen_constraint_combination_on_the_numeric_path():
    """The middle joint caught on a horizontal line through where it is, the tip on its own
    line: a combination no mode names, activated at run time and stepped at once."""
    sc = pendulum_chain.build(6)
    sim = sc.simulator(embedding="numeric", params={"u_start": 1.0})
    sim.advance(0.05)
    q = np.array(sim.q)
    l = sc.defaults()["l"]
    ym = -l * np.sum(np.cos(q[:3]))
    sim.pvec[sim.pnames.index("y_m")] = ym
    sim.set_constraints(["mid_y", "tip_y"])
    assert sim.compiled_mode.path == "numeric" and len(sim.compiled_mode.ind) == 4
    assert sim.last_impulse                  # the middle joint's vertical speed was removed
    e0 = sum(sc.observe(sim)[k] for k in ("kinetic_energy", "potential_energy"))
    sim.advance(0.5)
    assert sim.residual() <= 1e-10
    o = sc.observe(sim)
    assert -l * np.sum(np.cos(np.array(sim.q)[:3])) == pytest.approx(ym, abs=1e-10)
    assert o["tip_y"] == pytest.approx(-sc.defaults()["d"], abs=1e-10)
    assert o["kinetic_energy"] + o["potential_energy"] == pytest.approx(e0, rel=1e-8)



def test_the_numeric_path_runs_every_mode_numerically_the_initial_one_too():
    """embedding="numeric" is the compiled-terms path (gillespie2005 Sec 5.5) for every mode it
    enters, the first one and on re-entry too (the first was once compiled symbolically, and
    re-entering it ran on the symbolic path without saying so).  disk_ramp: sliding, rolling,
    sliding again."""
    import scenarios
    sc = scenarios.load("disk_ramp").build()
    sim = sc.simulator(embedding="numeric")
    seen = [(sim.mode, sim.compiled_mode.path)]
    while sim.t < 8.0 - 1e-9:
        sim.advance(min(8.0, sim.t + 0.01))
        if (sim.mode, sim.compiled_mode.path) != seen[-1]:
            seen.append((sim.mode, sim.compiled_mode.path))
    modes = [m for m, _ in seen]
    assert modes.count(modes[0]) >= 2, seen          # the first mode entered again
    assert {p for _, p in seen} == {"numeric"}, seen
    assert sim.library.modes == {}                   # nothing compiled on the symbolic path
