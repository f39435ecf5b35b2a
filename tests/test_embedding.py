"""Symbolic identities and cross-checks of the embedding (gillespie2005 eq 11-23)."""

import numpy as np
import pytest
import sympy as sp
import symengine as se

from embed import ConstraintRankError, ConstraintSet, ModeEquations, embed, motion, partition
from scenarios import disk_ramp


@pytest.fixture(scope="module")
def disk():
    model, (u1, u2) = disk_ramp.build_model()
    return model, motion(model, "rolling", u1 + u2)


def test_rolling_equation_is_eq_23(disk):
    """Recombined rolling equation F~1 + F~1* (eq 22) equals -m g sin(phi) - (m + J/r^2) u1' (eq 23)."""
    model, rolling = disk
    dep = partition(np.array([[1.0, 1.0]]))
    assert dep == (1,)                       # u2 dependent, as in the paper
    emb = embed(model, ConstraintSet([rolling]), dep)
    assert emb.D.tolist() == [[-1]]          # D = [-1]
    m, g, phi, J, r, u1d = sp.symbols("m g phi J r u1d")
    eq = sp.sympify(emb.Ftil[0] + emb.Ftil_star[0]).subs({"F_ext": 0, "T_ext": 0})
    eq23 = -m * g * sp.sin(phi) - (m + J / r ** 2) * u1d
    assert sp.simplify(eq - eq23) == 0
    # the friction force is a constraint force of the rolling mode: it cancels (eq 22)
    assert not sp.sympify(emb.Ftil[0]).has(sp.Symbol("F_f"))


def test_unconstrained_terms_are_eq_21(disk):
    model, _ = disk
    m, g, phi, J, r, F_f, u1d, u2d = sp.symbols("m g phi J r F_f u1d u2d")
    eqs = [sp.sympify(a + b).subs({"F_ext": 0, "T_ext": 0}) for a, b in zip(model.Fr, model.Frstar)]
    assert sp.simplify(eqs[0] - (-m * g * sp.sin(phi) - F_f - m * u1d)) == 0
    assert sp.simplify(eqs[1] - (-F_f - J / r ** 2 * u2d)) == 0
    assert sp.simplify(sp.sympify(model.aux[0]) - (sp.Symbol("N") - m * g * sp.cos(phi))) == 0


def _numeric(expr, values):
    return float(se.sympify(expr).subs({se.Symbol(k): v for k, v in values.items()}))


def test_embedded_accelerations_match_lagrange_multipliers(disk):
    """Independent formulation: [M B^T; B 0] [u'; lam] = [f; 0] solved numerically at random states."""
    model, rolling = disk
    emb = embed(model, ConstraintSet([rolling]), (1,))
    eqs = ModeEquations(model, emb, {})
    rng = np.random.default_rng(1)
    for _ in range(20):
        v = dict(m=rng.uniform(0.5, 3), J=rng.uniform(0.1, 2), r=rng.uniform(0.2, 2),
                 phi=rng.uniform(-1, 1), mu=0.3, L=10.0, g=9.81, F_ext=rng.normal(),
                 T_ext=rng.normal(), q1=rng.normal(), q2=rng.normal(), u1=rng.normal())
        # unconstrained M u' = f (+ generalized constraint force), F_f left out: it is the multiplier
        M = np.zeros((2, 2))
        f = np.zeros(2)
        for i in range(2):
            e = model.Fr[i] + model.Frstar[i]
            vals = {**v, "u2": -v["u1"], "F_f": 0.0, "N": 0.0}
            f[i] = _numeric(e, {**vals, "u1d": 0.0, "u2d": 0.0})
            for j, ud in enumerate(("u1d", "u2d")):
                M[i, j] = -(_numeric(e, {**vals, "u1d": float(j == 0), "u2d": float(j == 1)}) - f[i])
        B = np.array([[1.0, 1.0]])
        K = np.block([[M, B.T], [B, np.zeros((1, 1))]])
        sol = np.linalg.solve(K, np.concatenate((f, [0.0])))
        ud1_lagrange, lam = sol[0], sol[2]
        ud1 = _numeric(eqs.udot_ind[0], v)
        assert ud1 == pytest.approx(ud1_lagrange, rel=1e-12, abs=1e-12)
        # F_f enters both rows as -F_f, so M u' + B^T F_f = f: the multiplier of B = [1, 1] is F_f
        F_f = _numeric(eqs.forces[1], v)
        assert F_f == pytest.approx(lam, rel=1e-12, abs=1e-12)
        assert _numeric(eqs.forces[0], v) == pytest.approx(v["m"] * 9.81 * np.cos(v["phi"]))


def test_redundant_constraints_named(disk):
    model, rolling = disk
    with pytest.raises(ConstraintRankError, match="twice"):
        partition(np.array([[1.0, 1.0], [2.0, 2.0]]), ("rolling", "twice"))


@pytest.mark.parametrize("name", ["disk_fence", "pendulum_belt", "top", "ball_bowl", "slider_crank3"])
def test_entry_terms_agree_with_the_constraints_own_terms(name):
    """An event step's one-call entry terms (K = [M B^T; B 0], B, r = B u + C, Phi; compiled
    with LLVM) equal the same assembled from each constraint's terms and the unconstrained
    mass matrix, at random states, for every mode's constraint set."""
    import scenarios
    from embed.numeric import EntryTerms

    sc = scenarios.load(name).build()
    sim = sc.simulator(embedding="numeric")
    rng = np.random.default_rng(7)
    n = sim.model.n
    sets = {tuple(sorted(m.constraints)) for m in sim.aut.modes.values()} - {()}
    assert sets
    for active in sorted(sets):
        et = EntryTerms(sim.model, sim.forms.constraint_set(active), sim.psyms, "llvm")
        rows = [sim.forms.constraint_terms(c) for c in active]
        for _ in range(5):
            t, q, u = rng.uniform(0, 2), rng.normal(size=n), rng.normal(size=n)
            if name == "disk_fence":                 # on the (default arc) fence's length
                q[3] = sim.param("L") + rng.uniform(0, 5)
            got = et(t, q, u, sim.pvec)
            ref = sim.mode_compiler.entry(rows, t, q, u, sim.pvec)          # no entry terms cached: assembled
            for a, b in zip(got, ref):
                assert np.all(np.isfinite(a))
                assert np.asarray(a) == pytest.approx(np.asarray(b), rel=1e-11, abs=1e-11)
            assert got[0].shape == (n + len(active), n + len(active))


def test_small_partitions_choose_as_lapack_does():
    """For a few constraints the pivoting runs in plain floats; it chooses the dependent speeds
    that LAPACK's pivoted QR (dgeqp3) chooses, ties included, and finds the same rank."""
    from scipy.linalg.lapack import dgeqp3

    from embed.embedding import SMALL_M, _pivoted_gram_schmidt

    rng = np.random.default_rng(11)
    cases = [rng.normal(size=(m, n)) for m in range(1, SMALL_M + 1) for n in range(m, 9)
             for _ in range(40)]
    cases += [np.array([[1.0, -0.5]]), np.array([[1.0, 1.0, 0.0]]),          # ties
              np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), np.eye(3)[:2]]
    for B in cases:
        m, n = B.shape
        qr, jpvt, *_ = dgeqp3(B[:, ::-1])
        ref = tuple(sorted(n - 1 - (int(j) - 1) for j in jpvt[:m]))
        assert partition(B) == ref, B
        diag, _ = _pivoted_gram_schmidt(B[:, ::-1], m)
        assert diag == pytest.approx(np.abs(qr.diagonal()[:m]), rel=1e-9, abs=1e-12)
    with pytest.raises(ConstraintRankError):
        partition(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]), ("a", "b"))


def test_text_never_becomes_an_expression():
    """Every conversion to symengine refuses text (and other non-expressions) before sympify."""
    from embed import ModelDefinitionError
    from embed.model import to_symengine

    assert to_symengine(2) == 2 and to_symengine(sp.Symbol("x")) == se.Symbol("x")
    assert to_symengine(np.float64(0.5)) == 0.5 and to_symengine(np.int64(3)) == 3
    for bad in ("__import__('os').system('true')", b"x + 1", ["x"], object(), np.str_("x"),
                np.array(["x + 1"]), np.array([1.0, 2.0])):
        with pytest.raises(ModelDefinitionError):
            to_symengine(bad)


def test_a_tape_computes_what_the_compiled_function_computes():
    """compile.Tape (plain-float operations, for small functions shipped at run time) against
    symengine's LLVM Lambdify of the same expressions, through a pickle; a failing
    operation (log of a negative number, pow of one) gives nan, as LLVM does."""
    import pickle

    from embed.compile import Tape
    s, t = se.symbols("s t")
    exprs = [se.sin(3 * s) * se.exp(-t / 10) + s ** 4 - 2 * s * t, se.sqrt(1 + s ** 2) / (2 + t),
             se.log(2 + s) - se.atan(t) ** 2 + se.tanh(s * t), se.Abs(s - t) * se.sign(s),
             (1 + s ** 2) ** se.Rational(3, 2) + se.pi * se.cosh(t) - se.asin(s / 3),
             se.acos(t / 4) + se.tan(s) + se.sinh(t) ** -2, se.Integer(7)]
    tape = pickle.loads(pickle.dumps(Tape([s, t], exprs)))
    ref = se.Lambdify([s, t], exprs, real=True, backend="llvm")
    for x in ([0.3, 1.1], [-1.2, 0.7], [2.5, -3.0]):
        assert tape(x) == pytest.approx(ref(x), rel=1e-14, abs=1e-14)
    bad = Tape([s], [se.log(s), se.sqrt(s), s ** se.Rational(1, 3)])
    assert np.isnan(bad([-1.0])).all() and bad([8.0]) == pytest.approx([np.log(8), 8 ** 0.5, 2])
