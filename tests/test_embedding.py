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
    from embed.modes.numeric import EntryTerms

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

    from embed.embedding.partition import SMALL_M, _pivoted_gram_schmidt

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
    from embed.model.model import to_symengine

    assert to_symengine(2) == 2 and to_symengine(sp.Symbol("x")) == se.Symbol("x")
    assert to_symengine(np.float64(0.5)) == 0.5 and to_symengine(np.int64(3)) == 3
    for bad in ("__import__('os').system('true')", b"x + 1", ["x"], object(), np.str_("x"),
                np.array(["x + 1"]), np.array([1.0, 2.0])):
        with pytest.raises(ModelDefinitionError):
            to_symengine(bad)


def test_a_tape_computes_what_the_compiled_function_computes():
    """functions.Tape (plain-float operations, for small functions shipped at run time) against
    symengine's LLVM Lambdify of the same expressions, through a pickle; a failing
    operation (log of a negative number, pow of one) gives nan, as LLVM does."""
    import pickle

    from embed.modes.functions import Tape
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


def test_a_tape_leaves_the_cyclic_collector_nothing_to_visit():
    """A run keeps every fence's tape; their instructions must not be objects the cyclic
    collector visits in each full pass (86,000 of them, 94 fences' jets, made one pass take
    50-60 ms of a step in the fence soak): after a collection, none is tracked, in a tape
    unpickled as the worker's answers are."""
    import gc
    import pickle

    from embed.modes.functions import Tape
    s = se.Symbol("s")
    h = 0.002 * s ** 2
    for i in range(1, 6):
        h = h * (1 + se.Rational(1, 100) * se.sin(i * s + 21))
    tape = pickle.loads(pickle.dumps(Tape([s], [h, se.diff(h, s), se.diff(h, s, 2)])))
    gc.collect()
    assert len(tape.prog) > 100
    assert not any(gc.is_tracked(ins) for ins in tape.prog)
    assert tape([0.3])[0] == pytest.approx(float(h.subs(s, 0.3)), rel=1e-14)


# ------------------------------------------- the coefficient form against differentiation
def _mode_systems(name, N=None):
    """(label, fast ModeEquations, direct ModeEquations) for every mode of scenario ``name``,
    each with a partition chosen at a random configuration."""
    import scenarios
    from embed.modes.forming import AutomatonForms
    from embed.modes.library import ModeLibrary

    sc = scenarios.load(name).build(*(() if N is None else (N,)))
    aut = sc.automaton
    forms = AutomatonForms(aut, ModeLibrary())
    model = aut.model
    rng = np.random.default_rng(3)
    for mode_id, mode in aut.modes.items():
        cset = forms.constraint_set(mode.constraints)
        q, p = rng.uniform(-1, 1, model.n), rng.uniform(0.5, 2, len(forms.psyms))
        dep = forms.partition(cset.key, 0.3, q, p) if len(cset) else ()
        emb = embed(model, cset, dep)
        yield ((name, mode_id, dep), ModeEquations(model, emb, dict(mode.laws), 0),
               ModeEquations(model, emb, dict(mode.laws), 0, direct=True))


@pytest.mark.parametrize("name,N", [("disk_ramp", None), ("pendulum_belt", None),
                                    ("slider_crank3", None), ("top", None), ("ball_bowl", None),
                                    ("pendulum_chain", 5)])
def test_coefficient_form_equals_differentiation(name, N):
    """S and s read from the model's coefficients, T^T (b + A_u (T udot_ind + g) + A_f f)
    (eq 13-15), equal the derivatives of the recombined equations with respect to
    z = [udot_ind, free forces] at random states, to 1e-12 relative, and so do the
    multipliers -B1^-T (F + F*)_dep; laws (disk_ramp's sliding friction, pendulum_belt's)
    included."""
    for label, fast, direct in _mode_systems(name, N):
        assert fast.z == direct.z and fast.S.shape == direct.S.shape, label
        exprs = [list(x) for x in (fast.S, direct.S, fast.s, direct.s)]
        exprs += [fast.multipliers, direct.multipliers]
        flat = [e for group in exprs for e in group]
        syms = sorted(set().union(*(e.free_symbols for e in flat)), key=str)
        fn = se.Lambdify(syms, flat, backend="lambda", real=True)
        rng = np.random.default_rng(5)
        for _ in range(5):
            v = np.asarray(fn(rng.uniform(0.3, 1.5, len(syms)))).ravel()
            parts = np.split(v, np.cumsum([len(g) for g in exprs])[:-1])
            for got, ref in zip(parts[0::2], parts[1::2]):
                assert np.all(np.isfinite(ref)), label
                scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
                assert np.abs(got - ref).max(initial=0.0) <= 1e-12 * scale, label


def _particle(load):
    """A particle in the plane (q1, q2) pushed along n2 by ``load`` of the force symbol F,
    with the motion constraint u2 = 0 (so that F is its constraint force)."""
    from sympy.physics.mechanics import Particle, Point, ReferenceFrame, dynamicsymbols

    from embed import Model
    q1, q2 = dynamicsymbols("q1 q2")
    u1, u2 = dynamicsymbols("u1 u2")
    m, F = sp.symbols("m F")
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    P = O.locatenew("P", q1 * frame.x + q2 * frame.y)
    P.set_vel(frame, u1 * frame.x + u2 * frame.y)
    model = Model(frame, [q1, q2], [u1, u2], [q1.diff() - u1, q2.diff() - u2],
                  [Particle("p", P, m)], [(P, load(F) * frame.y)], forces=[F], params=[m],
                  name="particle")
    return model, motion(model, "still", u2), F


def test_equations_not_linear_in_a_force_are_refused():
    """A load F**2 of an unknown force F: the model's coefficients flag it, and a mode where F
    is an unknown is refused naming the unknowns; where F has a law it is accepted, and the
    particle's acceleration is the law's F**2 / m."""
    from embed import ModelDefinitionError

    model, still, F = _particle(lambda F: F ** 2)
    assert model.linear_terms().nonlinear is not None
    emb = embed(model, ConstraintSet([still]), (1,))
    with pytest.raises(ModelDefinitionError, match="not linear in .*F"):
        ModeEquations(model, emb, {})
    free = embed(model, ConstraintSet([]), ())
    eqs = ModeEquations(model, free, {F: se.Symbol("m") * 3})
    assert _numeric(eqs.udot_ind[1], {"m": 2.0}) == pytest.approx(2.0 * 9)


def test_a_law_not_linear_in_the_free_forces_is_refused(disk):
    """Sliding friction given as mu N**2 (N the free normal force): refused as not linear."""
    from embed import ModelDefinitionError

    model, _ = disk
    N, mu = se.Symbol("N"), se.Symbol("mu")
    with pytest.raises(ModelDefinitionError, match="not linear"):
        ModeEquations(model, embed(model, ConstraintSet([]), ()), {se.Symbol("F_f"): mu * N ** 2})
    eqs = ModeEquations(model, embed(model, ConstraintSet([]), ()), {se.Symbol("F_f"): mu * N})
    assert model.linear_terms().nonlinear is None and eqs.solution is not None


def test_linear_particle_takes_the_coefficient_form():
    """The particle with a load linear in F: its coefficients hold no unknown, and the pinned
    particle's constraint force is F = 0 (no other load), its free acceleration F / m."""
    model, still, F = _particle(lambda F: F)
    assert model.linear_terms().nonlinear is None
    eqs = ModeEquations(model, embed(model, ConstraintSet([still]), (1,)), {})
    assert [str(z) for z in eqs.z] == ["u1d", "F"]
    assert [_numeric(e, {"m": 2.0}) for e in eqs.solution] == [0.0, 0.0]
