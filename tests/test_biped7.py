"""braun_goldfarb2012 Sec 3.2's seven-link biped (scenarios/biped7.py), checked against the
paper's constraints written here again in numpy, the test's own nearest-point projection,
its own mass-metric projection, and the multipliers formulation (issue 15)."""

import math

import numpy as np
import pytest
import sympy as sp

from embed import InputError
from scenarios import biped7

HORIZON = 20.0         # s: ten periods (the paper's 100 s: benchmarks/bench_biped7.py, over 30 s here)
DT = 0.01              # communication step (the paper's step)
PERIOD = 2.0


@pytest.fixture(scope="module")
def sc():
    return biped7.build()


def paper_constraints(q, u, t, P):
    """Phi_q (7) and Phi_v (2) exactly as printed in Sec 3.2, with plain numpy."""
    x, y, th, t1, t2, t3, t4, t5, t6 = q
    dx, dy, dth, d1, d2, d3, d4, d5, d6 = u
    lc, l1, l2, h, a, b, w = (P[k] for k in ("l_c", "l1", "l2", "h", "a", "b", "omega"))
    c = 1 - math.cos(w * t)
    phi_q = np.array([
        y - lc * math.sin(th) - l1 * math.sin(t1) - l2 * math.sin(t2) - h * math.cos(t3)
        - b * math.sin(t3),
        y - lc * math.sin(th) - l1 * math.sin(t4) - l2 * math.sin(t5) - h * math.cos(t6)
        + a * math.sin(t6),
        t2 - t1 + math.pi / 10 * c,
        t5 - t4 + math.pi / 10 * c,
        th - (4 * math.pi / 9 - math.pi / 18 * c),
        t3 - math.pi / 18 * (1 + math.cos(w * t)),
        t6 + math.pi / 18 * c])
    phi_v = np.array([
        dx + lc * math.sin(th) * dth + l1 * math.sin(t1) * d1 + l2 * math.sin(t2) * d2
        + (h * math.cos(t3) + b * math.sin(t3)) * d3,
        dx + lc * math.sin(th) * dth + l1 * math.sin(t4) * d4 + l2 * math.sin(t5) * d5
        + (h * math.cos(t6) - a * math.sin(t6)) * d6])
    return phi_q, phi_v


@pytest.fixture(scope="module")
def run(sc):
    """The default run over HORIZON at DT: times, q, u and the residual outputs."""
    sim = sc.simulator()
    n = int(round(HORIZON / DT))
    Q, U, res = np.empty((n + 1, 9)), np.empty((n + 1, 9)), np.empty((n + 1, 2))
    for k in range(n + 1):
        if k:
            sim.advance(k * DT)
        o = sc.observe(sim)
        Q[k], U[k] = sim.q, sim.u
        res[k] = o["constraint_residual"], o["velocity_residual"]
        assert [o[name] for name in biped7.NAMES] == Q[k].tolist()
    return np.arange(n + 1) * DT, Q, U, res


def test_constraints_hold_over_the_run(sc, run):
    """|Phi_q| and |Phi_v| (the paper's, evaluated here) and dPhi_q/dt at most 1e-10 at every
    communication point (Fig 3(c)); the outputs say the same."""
    t, Q, U, res = run
    P = sc.defaults()
    worst_q = worst_v = 0.0
    for k in range(0, len(t), 7):
        pq, pv = paper_constraints(Q[k], U[k], t[k], P)
        worst_q, worst_v = max(worst_q, np.max(np.abs(pq))), max(worst_v, np.max(np.abs(pv)))
    assert worst_q <= 1e-10 and worst_v <= 1e-10
    assert np.max(res) <= 1e-10
    assert np.max(np.abs(U)) > 0.1            # it does move


def test_motion_repeats_with_period_two_seconds(run):
    """After the start correction the driven motion is 2 s periodic: q(t + 2) = q(t)."""
    t, Q, U, _ = run
    k = int(round(PERIOD / DT))
    assert np.max(np.abs(Q[k:] - Q[:-k])) <= 1e-8
    assert np.max(np.abs(U[k:] - U[:-k])) <= 1e-8
    # and the paper's q(0) was only slightly off: the knees bend by pi/5 half a period on
    assert np.ptp(Q[:, 3] - Q[:, 4]) == pytest.approx(math.pi / 5, abs=1e-9)


def _nearest(P, q0, t=0.0):
    """The test's own nearest point of Phi_q(q, t) = 0 to q0 (least squares): full Newton
    on the optimality conditions q - q0 + G^T mu = 0, Phi_q = 0, with second derivatives
    (the engine iterates Gauss-Newton without them)."""
    qs = sp.symbols("q0:9")
    mus = sp.symbols("mu0:7")
    phi = sp.Matrix(paper_constraints_sym(qs, t, P))
    L = sum((qi - q0i) ** 2 for qi, q0i in zip(qs, q0)) / 2 + sum(
        m * f for m, f in zip(mus, phi))
    F = sp.Matrix([sp.diff(L, v) for v in qs] + list(phi))
    J = F.jacobian(list(qs) + list(mus))
    f, j = sp.lambdify([qs, mus], F, "numpy"), sp.lambdify([qs, mus], J, "numpy")
    z = np.concatenate((q0, np.zeros(7)))
    for _ in range(30):
        r = np.array(f(z[:9], z[9:]), dtype=float).ravel()
        if np.max(np.abs(r)) < 1e-15:
            break
        z = z - np.linalg.solve(np.array(j(z[:9], z[9:]), dtype=float), r)
    return z[:9]


def paper_constraints_sym(q, t, P):
    x, y, th, t1, t2, t3, t4, t5, t6 = q
    lc, l1, l2, h, a, b, w = (P[k] for k in ("l_c", "l1", "l2", "h", "a", "b", "omega"))
    c = 1 - math.cos(w * t)
    return [y - lc * sp.sin(th) - l1 * sp.sin(t1) - l2 * sp.sin(t2) - h * sp.cos(t3)
            - b * sp.sin(t3),
            y - lc * sp.sin(th) - l1 * sp.sin(t4) - l2 * sp.sin(t5) - h * sp.cos(t6)
            + a * sp.sin(t6),
            t2 - t1 + math.pi / 10 * c, t5 - t4 + math.pi / 10 * c,
            th - (4 * math.pi / 9 - math.pi / 18 * c),
            t3 - math.pi / 18 * (1 + math.cos(w * t)), t6 + math.pi / 18 * c]


def test_start_correction_is_the_nearest_consistent_state(sc):
    """The engine's start (docs/design.md, "Consistent start"): q the nearest point of
    Phi_q = 0 to the paper's q(0) (the test's own Newton on the optimality conditions), u the
    mass-metric projection of v(0) = 0 on the nine velocity rows; start_correction their
    norm, reported."""
    P = sc.defaults()
    q0 = np.array(biped7.Q0)
    sim = sc.simulator()
    q_ref = _nearest(P, q0)
    np.testing.assert_allclose(sim.q, q_ref, rtol=0, atol=1e-12)
    # the paper's v(0) = 0 is already consistent at t = 0 (d/dt cos(omega t) = 0 there)
    assert np.max(np.abs(sim.u)) <= 1e-12
    assert sc.observe(sim)["start_correction"] == pytest.approx(np.linalg.norm(q_ref - q0),
                                                                rel=1e-12)
    assert 0.005 < sim.start_correction < 0.02          # "slightly inconsistent"
    assert "start made consistent" in sim.start_log


def test_velocity_correction_is_minimal_in_the_mass_metric(sc):
    """With only the seven position rows active (2 degrees of freedom), a start speed off
    them moves to min (u' - u)^T M (u' - u) subject to B u' + C = 0: the test's own KKT
    solve with the mass matrix from the engine's unconstrained terms."""
    from embed import Mode
    from embed.model.automaton import Automaton
    from embed.interface.scenario import Scenario
    aut = sc.automaton
    position = tuple(biped7.PHI_Q_NAMES)
    aut2 = Automaton(aut.model, aut.constraints, {1: Mode(name="positions",
                                                          constraints=position)},
                     outputs=list(aut.declared_outputs))
    sc2 = Scenario("biped7_positions", aut2, sc.parameters[:16], start=sc.start)
    rng = np.random.default_rng(31)
    u0 = rng.normal(0.0, 1.0, 9)
    params = {f"d{n}_start": v for n, v in zip(biped7.NAMES, u0)}
    sim = sc2.simulator(params, t0=0.3, embedding="numeric")
    q, t, p = sim.q, sim.t, sim.pvec
    M = sim.mode_compiler.numeric_terms().mass(t, q, sim.u, p)
    _, B, rhs, _ = sim.mode_compiler.entry(
        [sim.forms.constraint_terms(c) for c in sorted(position)], t, q, u0, p)
    K = np.block([[M, B.T], [B, np.zeros((7, 7))]])
    du = np.linalg.solve(K, np.concatenate((np.zeros(9), rhs[9:])))[:9]
    np.testing.assert_allclose(sim.u, u0 + du, rtol=0, atol=1e-10)
    assert sim.start_correction == pytest.approx(
        math.sqrt(np.sum(sim.start_change[0] ** 2) + np.sum(du ** 2)), rel=1e-9)


def test_inconsistent_start_kept_only_by_a_full_state_formulation(sc):
    """consistent_start=False: the embedding refuses (its speeds follow from the
    constraints); the multipliers formulation keeps the paper's q(0) as given."""
    with pytest.raises(InputError, match="consistent_start"):
        sc.simulator(consistent_start=False)
    sim = sc.simulator(formulation="multipliers", consistent_start=False)
    assert sim.q.tolist() == list(biped7.Q0) and sim.start_correction == 0.0
    assert sim.residual() > 0.005                       # the paper's inconsistency, kept


def test_constraint_forces_match_the_multipliers_formulation(sc, run):
    """At random times of the run, the multiplier system M udot = Q + B^T lambda,
    B udot = -gamma (issue 15's formulation) gives the driven mode's multipliers."""
    t, Q, U, _ = run
    rng = np.random.default_rng(7)
    emb = sc.simulator()
    full = sc.simulator(formulation="multipliers")
    for k in sorted(rng.integers(1, min(len(t), 400), 4)):
        emb.advance(t[k])
        ce = emb.compiled_mode
        mon = ce.monitors(emb.t, emb.x, emb.pvec)
        full.state.t = emb.t
        full.jump_to(1, q=emb.q, u=emb.u)
        cf = full.compiled_mode
        mf = cf.monitors(emb.t, np.concatenate((emb.q, emb.u)), full.pvec)
        lam = mon[ce.sl_lambda]
        assert np.max(np.abs(lam)) > 10.0
        np.testing.assert_allclose(mf[cf.sl_lambda], lam, rtol=0,
                                   atol=1e-9 * (1 + np.max(np.abs(lam))))


def test_fmu_builds_and_steps_in_fmpy(tmp_path):
    """The FMU built alone and stepped by fmpy at 10 ms: the start logged and reported, the
    constraints held."""
    import build_fmu
    from fmu_src.host.master import FmuRunner
    assert build_fmu.main(["biped7", "--out", str(tmp_path)]) == 0
    r = FmuRunner(str(tmp_path / "biped7.fmu"), instance="biped7")
    try:
        for _ in range(100):
            r.step(DT)
        o = r.outputs()
        assert o["status"] == 0, r.messages
        assert o["constraint_residual"] <= 1e-10 and o["velocity_residual"] <= 1e-10
        assert 0.005 < o["start_correction"] < 0.02
        assert any("start made consistent" in m for _, m in r.messages)
        assert o["theta"] == pytest.approx(math.pi / 3, abs=1e-9)  # 4 pi/9 - pi/9 at t = 1 s
    finally:
        r.close()
