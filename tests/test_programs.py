"""Straight-line programs (embed.program), their LLVM compile (embed.native) and the modes built
on them: the symbolic path's one-call RK4 step (compile.linear_program) and the compiled-terms
path with the partition as data (embed.terms_program), checked against numpy's solvers and
against the augmented Lagrange multiplier system written out in tests/test_pendulums.py."""

import itertools
import math
import pickle

import numpy as np
import pytest
import symengine as se

from embed.errors import CompilationError
from embed.native import OPT_FAST, OPT_RUN, compile_program
from embed.program import Program
from scenarios import pendulum_chain
from test_pendulums import augmented, rows


@pytest.mark.parametrize("n", [1, 2, 5, 12])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_unrolled_ldlt_solves_definite_systems(n, sign):
    """LDL^T without pivoting (eq 15-16: the reduced mass matrix is definite, either sign)."""
    rng = np.random.default_rng(n)
    P = Program(n * n + 2 * n)
    A = [[i * n + j for j in range(n)] for i in range(n)]
    b1, b2 = list(range(n * n, n * n + n)), list(range(n * n + n, n * n + 2 * n))
    x1, x2 = P.ldl_solve(A, [b1, b2])
    for opt in (OPT_FAST, OPT_RUN):
        f = compile_program(P, x1 + x2, "ldl", opt)
        for _ in range(3):
            R = rng.normal(size=(n, n))
            M = sign * (R @ R.T + n * np.eye(n))
            rhs = rng.normal(size=(2, n))
            out = f(np.concatenate((M.ravel(), rhs.ravel())))
            ref = np.linalg.solve(M, rhs.T).T.ravel()
            assert out == pytest.approx(ref, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_small_general_systems_by_cramer(k):
    rng = np.random.default_rng(k)
    P = Program(k * k + k)
    x = P.solve_small([[i * k + j for j in range(k)] for i in range(k)],
                      list(range(k * k, k * k + k)))
    f = compile_program(P, x, "cramer")
    A, b = rng.normal(size=(k, k)), rng.normal(size=k)
    assert f(np.concatenate((A.ravel(), b))) == pytest.approx(np.linalg.solve(A, b), rel=1e-12)


def test_expressions_gathers_calls_and_nan():
    """Every operation against Python's math; a permutation given as data; a called program;
    max and min propagate nan (a residual monitor must not hide a nan)."""
    x, y = se.symbols("x y")
    exprs = [se.sin(x) * se.cos(y) + x ** 3 - 2 / y, se.sqrt(x) + se.exp(-x) + se.log(y),
             se.atan2(x, y) + se.Abs(x - y) + se.tanh(x), x ** se.Rational(3, 2) + y ** -2,
             se.Max(x, y, 0.5), se.Min(x, y), se.sign(x - y)]
    sub = Program(2)
    sub = (sub, sub.emit(exprs, {x: 0, y: 1}))
    P = Program(3)                        # x, y, an index
    v = P.call(sub, [0, 1])
    w = P.call(sub, [1, 0])               # the same function, other arguments
    g = P.gather(v, 2)
    f = compile_program(P, v + w + [g], "ops")
    X, Y = 0.7, 1.9

    def ref(X, Y):
        return [math.sin(X) * math.cos(Y) + X ** 3 - 2 / Y,
                math.sqrt(X) + math.exp(-X) + math.log(Y),
                math.atan2(X, Y) + abs(X - Y) + math.tanh(X), X ** 1.5 + Y ** -2,
                max(X, Y, 0.5), min(X, Y), math.copysign(1.0, X - Y)]
    out = f(np.array([X, Y, 4.0]))
    assert out == pytest.approx(ref(X, Y) + ref(Y, X) + [ref(X, Y)[4]], rel=1e-14)
    P2 = Program(2)
    m = P2.binary("max", 0, 1)
    m2 = P2.binary("max", 1, 0)
    f2 = compile_program(P2, [m, m2], "max")
    assert np.isnan(f2(np.array([np.nan, 1.0]))).all()


def test_compiled_programs_pickle_as_object_code():
    """The background worker's answers: object code, loaded without compiling again."""
    P = Program(1)
    f = compile_program(P, [P.unary("sin", 0)], "sin")
    g = pickle.loads(pickle.dumps(f))
    assert g(np.array([0.3]))[0] == math.sin(0.3)


def test_an_operation_without_code_is_a_compilation_error():
    x = se.Symbol("x")
    with pytest.raises(CompilationError, match="no straight-line operation"):
        Program(1).emit([se.gamma(x)], {x: 0})


def _pinned(N):
    """A chain of N links with its tip pinned at a random consistent state (both paths)."""
    sc = pendulum_chain.build(N)
    P = sc.defaults()
    l = P["l"]
    rng = np.random.default_rng(N)
    q = rng.uniform(-0.9, 0.9, N)
    u = rng.normal(size=N)
    B, _ = rows(q, u, np.full(N, l), ["tip_x", "tip_y"])
    u = u - B.T @ np.linalg.solve(B @ B.T, B @ u)        # B u = 0
    tip = (l * np.sum(np.sin(q)), -l * np.sum(np.cos(q)))
    return sc, P, q, u, tip


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_every_partition_gives_the_lagrange_accelerations(embedding):
    """The point pin of a 6-link chain, every choice of two dependent speeds: the embedded
    accelerations and multipliers equal the augmented multiplier system's (an independent
    formulation); on the numeric path the partition is data of one compiled function."""
    N = 6
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding=embedding)
    sim.pvec[sim.pnames.index("x_p")] = xt
    sim.pvec[sim.pnames.index("d")] = -yt
    ud_ref, lam_ref = augmented(q, u, np.full(N, P["l"]), [P["m"]] * N, P["g"],
                                ["tip_x", "tip_y"])
    active = ("tip_x", "tip_y")
    deps = list(itertools.combinations(range(N), 2))
    if embedding == "symbolic":
        deps = [(N - 2, N - 1), (0, 3)]
    for dep in deps:
        compiled = sim.mode_compiler.compiled(2, dep, active)
        assert type(compiled).__name__ == ("ProgramMode" if embedding == "symbolic"
                                           else "TermsProgramMode")
        ind = [i for i in range(N) if i not in dep]
        x = np.concatenate((q, u[ind]))
        assert compiled.rhs(0.0, x, sim.pvec)[N:] == pytest.approx(ud_ref[ind], rel=1e-9,
                                                                   abs=1e-9)
        mon = compiled.monitors(0.0, x, sim.pvec)
        assert mon[compiled.sl_u] == pytest.approx(u, abs=1e-12)
        lam = mon[compiled.sl_lambda]
        assert sorted(lam) == pytest.approx(sorted(lam_ref), rel=1e-9)


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_the_step_ends_on_the_constraint_manifold(embedding):
    """One RK4 step leaves |Phi| at its local error; the step's Newton correction (fresh
    chart, haug_pavesic2023 eq 13-14) takes it to roundoff."""
    N = 6
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding=embedding)
    sim.pvec[sim.pnames.index("x_p")] = xt
    sim.pvec[sim.pnames.index("d")] = -yt
    compiled = sim.mode_compiler.compiled(2, (N - 2, N - 1), ("tip_x", "tip_y"))
    x = np.concatenate((q, u[:N - 2]))
    h = 0.01
    res = {}
    for correct in (0.0, 1.0):
        compiled.correct = correct
        out = compiled.rk4(0.0, h, x, sim.pvec)
        qn = out[:N]
        l = P["l"]
        res[correct] = max(abs(l * np.sum(np.sin(qn)) - xt), abs(-l * np.sum(np.cos(qn)) - yt))
        assert out[compiled.nx + compiled.i_res] == pytest.approx(res[correct], abs=1e-15)
    compiled.correct = 1.0
    assert res[0.0] > 1e-10 and res[1.0] <= 1e-14
