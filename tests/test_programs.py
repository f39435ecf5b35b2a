"""Straight-line programs (embed.codegen.program), their LLVM compile (embed.codegen.native) and the modes built
on them: the symbolic path's one-call RK4 step (programs.linear_program) and the compiled-terms
path with the partition as data (embed.modes.terms_program), checked against numpy's solvers and
against the augmented Lagrange multiplier system written out in tests/test_pendulums.py."""

import itertools
import math
import pickle

import numpy as np
import pytest
import symengine as se

from embed.base.errors import CompilationError
from embed.codegen.native import OPT_FAST, OPT_RUN, compile_program
from embed.codegen.program import Program
from scenarios import pendulum_chain
from test_pendulums import augmented, rows


@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ldlt_solves_definite_systems(n, sign):
    """LDL^T without pivoting (eq 15-16: the reduced mass matrix is definite, either sign),
    unrolled up to ``ldlt.UNROLL_MAX``, looped beyond (n = 12 in the unrolled order, n = 30
    vectorized), at both codegen levels, with two right-hand sides."""
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


def test_an_operation_of_the_same_registers_is_computed_once():
    """Value numbering (``Program._op``): two constraint templates spliced on the same q give
    one sin q and one q * q, not two; a constant's sign is kept (-0 is not +0), and each call
    is its own event, its results apart."""
    from embed.modes.programs import _splice, _template
    q = se.Symbol("q")
    tmpl = _template([q], [se.sin(q) * q ** 2, se.cos(q)])
    P = Program(1)
    a = _splice(P, tmpl, [0])
    b = _splice(P, tmpl, [0])
    assert a == b
    assert [op[0] for op in P.ops].count("sin") == 1
    assert P.const(0.0) != P.const(-0.0)
    sub = (Program(1), [0])
    assert P.call(sub, [0]) != P.call(sub, [0])
    f = compile_program(P, a, "numbered")
    assert f(np.array([0.7])) == pytest.approx([np.sin(0.7) * 0.49, np.cos(0.7)], rel=1e-15)


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


def test_a_compile_leaves_the_cyclic_collector_nothing_to_free():
    """Compiling a program that calls another leaves no reference cycle of its own: its IR
    text (megabytes for the 20-link chain) is freed where it was made, not by a collection
    in a later step (0.4-0.6 ms of a step on the symbolic path, where the compiles run
    beside the stepping).  What the collector finds is kept (``DEBUG_SAVEALL``) and none of
    it is the compiler's (other threads' garbage is not this test's)."""
    import gc
    import types
    P = Program(3)
    sub = (P, [P.mul(P.add(0, 1), 2)])
    Q = Program(3)
    r = Q.call(sub, [0, 1, 2])
    compile_program(P, sub[1], "the process's first")   # (llvmlite's set-up has cycles)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        f = compile_program(Q, r, "a call")
        gc.collect()
        ours = [o for o in gc.garbage if isinstance(o, types.FunctionType)
                and o.__module__ == "embed.codegen.native"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
    assert f(np.array([1.0, 2.0, 4.0])).tolist() == [12.0]


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


def test_compares_selects_and_the_pivot_search():
    """gt, eq and select against Python; ``argmax`` takes the first of the near-maxima (the
    tie rule of ``embedding._pivoted_gram_schmidt``)."""
    from embed.embedding.embedding import TIE

    rng = np.random.default_rng(5)
    P = Program(6)
    outs = [P.compare("gt", 0, 1), P.compare("eq", 0, 1), P.select(2, 3, 4),
            *P.argmax(list(range(6)), TIE)]
    f = compile_program(P, outs, "compares")
    cases = [rng.normal(size=6) for _ in range(50)]
    cases += [np.array([1.0, 1.0, 0.0, 2.0, 2.0 * (1 + 1e-12), 2.0]),     # near-ties
              np.array([1.0, 2.0, 3.0, 3.0 * (1 - 1e-8), 2.0, 3.0])]
    for a in cases:
        top = a.max() * (1.0 - TIE)
        k = next(i for i, v in enumerate(a) if v >= top)
        assert f(a).tolist() == [float(a[0] > a[1]), float(a[0] == a[1]),
                                 a[3] if a[2] else a[4], a[k], float(k)]


@pytest.mark.parametrize("k", [4, 12, 24, 25, 40])
def test_ldlt_solves_quasi_definite_systems_unrolled_and_looped(k):
    """``Program.ldl_solve`` on the activation jump's system [A_u B^T; B 0] (A_u negative
    definite, mueller eq 7: quasi-definite, no pivoting), unrolled up to ``ldlt.UNROLL_MAX``
    unknowns, looped in the unrolled order up to ``EXACT_MAX`` and by the vectorized
    ``embed_ldlt`` beyond, against numpy; a zero leading pivot gives a non-finite solution
    (the caller's sign to decline)."""
    from embed.codegen.ldlt import EXACT_MAX, UNROLL_MAX
    rng = np.random.default_rng(k)
    m = 2
    P = Program(k * k + 2 * k)
    A = [[i * k + j for j in range(k)] for i in range(k)]
    x1, x2 = P.ldl_solve(A, [list(range(k * k, k * k + k)), list(range(k * k + k, k * k + 2 * k))])
    f = compile_program(P, x1 + x2, "ldl")
    assert [op[1][2] for op in P.ops if op[0] == "ldlt"] == \
        ([k <= EXACT_MAX] if k > UNROLL_MAX else [])
    for _ in range(3):
        R = rng.normal(size=(k - m, k - m))
        K = np.zeros((k, k))
        K[:k - m, :k - m] = -(R @ R.T + k * np.eye(k - m))
        K[k - m:, :k - m] = rng.normal(size=(m, k - m))
        K[:k - m, k - m:] = K[k - m:, :k - m].T
        rhs = rng.normal(size=(2, k))
        out = f(np.concatenate((K.ravel(), rhs.ravel())))
        assert out == pytest.approx(np.linalg.solve(K, rhs.T).T.ravel(), rel=1e-9, abs=1e-12)
    K[0, :] = K[:, 0] = 0.0
    assert not np.isfinite(f(np.concatenate((K.ravel(), rhs.ravel())))).all()


@pytest.mark.parametrize("k", [1, 4, 13, 24])
def test_looped_ldlt_gives_the_unrolled_solve_bit_for_bit(k, monkeypatch):
    """Up to ``ldlt.EXACT_MAX`` unknowns the looped solve (``embed_ldlt_exact``: a few
    kilobytes of code, where the unrolled one grows like n^3 and a switch reads it cold)
    returns the unrolled solve's results bit for bit (the same operations in the same order,
    nothing reassociated or fused), on quasi-definite systems with structural zeros and
    ones (the constraint rows of the activation jump), and a non-finite result where a
    leading pivot is zero."""
    import embed.codegen.ldlt as ldlt
    rng = np.random.default_rng(k)
    m = min(2, k - 1)
    n = k - m
    outs = {}
    for looped in (False, True):        # unrolled, then looped whatever k
        monkeypatch.setattr(ldlt, "UNROLL_MAX", 0 if looped else 10 ** 6)
        P = Program(n * n + m * n + k)
        A = [[None] * k for _ in range(k)]
        for i in range(n):
            for j in range(n):
                A[i][j] = i * n + j
        for r in range(m):
            for j in range(n):
                A[n + r][j] = A[j][n + r] = (P.const(1.0) if j == r else P.const(0.0)
                                             if j == r + 1 else n * n + r * n + j)
            for c in range(m):
                A[n + r][n + c] = P.const(0.0)
        x, = P.ldl_solve(A, [list(range(n * n + m * n, n * n + m * n + k))])
        assert [op[1][2] for op in P.ops if op[0] == "ldlt"] == ([True] if looped else [])
        outs[looped] = compile_program(P, x, "ldl")
    for _ in range(3):
        R = rng.normal(size=(n, n))
        Au = -(R @ R.T + k * np.eye(n))
        Bm = rng.normal(size=(m, n))
        args = np.concatenate((Au.ravel(), Bm.ravel(), rng.normal(size=k)))
        a, b = outs[False](args), outs[True](args)
        assert a.tobytes() == b.tobytes()
        K = np.zeros((k, k))
        K[:n, :n] = Au
        for r in range(m):                          # the structural ones and zeros
            for j in range(n):
                Bm[r, j] = 1.0 if j == r else 0.0 if j == r + 1 else Bm[r, j]
        K[n:, :n], K[:n, n:] = Bm, Bm.T
        assert b == pytest.approx(np.linalg.solve(K, args[-k:]), rel=1e-9, abs=1e-12)
    args[0] = 0.0                                   # a zero first pivot
    assert not np.isfinite(outs[True](args)).all()
    assert not np.isfinite(outs[False](args)).all()


@pytest.mark.parametrize("n, m", [(5, 2), (12, 2), (20, 3), (30, 1)])
def test_the_looped_reduced_system_gives_the_straight_line_bit_for_bit(n, m, monkeypatch):
    """The reduced system (T^T A_u T) udot_ind = -T^T (b + A_u g) of eq 13-16 formed by the
    looped ``embed_reduce`` (b and A_u read in place, where a call returned them) gives the
    straight-line code's udot_ind, dependent rows of A_p T and of r0 bit for bit (the same
    operations in the same order), for any partition; and they are those of numpy."""
    import embed.codegen.reduction as reduction
    from embed.modes.terms_program import reduced
    n_i, nv = n - m, n + n * n
    rng = np.random.default_rng(n)
    outs = {}
    for looped in (False, True):
        monkeypatch.setattr(reduction, "LOOP_MIN", 0 if looped else 10 ** 6)
        P = Program(nv + n + m * n_i + m)
        ident = Program(nv)
        v = P.call((ident, list(range(nv))), list(range(nv)))    # outputs of a call
        perm = list(range(nv, nv + n))
        D = [list(range(nv + n + k * n_i, nv + n + (k + 1) * n_i)) for k in range(m)]
        udi, MTd, r0d = reduced(P, v, perm, D, list(range(nv + n + m * n_i, P.n_in)))
        assert any(op[0] == "reduce" for op in P.ops) == looped
        outs[looped] = compile_program(P, udi + [r for row in MTd for r in row] + r0d, "reduce")
    for _ in range(3):
        R = rng.normal(size=(n, n))
        Au = -(R @ R.T + n * np.eye(n))                        # A_u = -M
        b, p = rng.normal(size=n), rng.permutation(n)
        Dm, g = rng.normal(size=(m, n_i)), rng.normal(size=m)
        args = np.concatenate((b, Au.ravel(), p.astype(float), Dm.ravel(), g))
        x, y = outs[False](args), outs[True](args)
        assert x.tobytes() == y.tobytes()
        Ap, T = Au[np.ix_(p, p)], np.vstack((np.eye(n_i), Dm))
        r0 = b[p] + Ap[:, n_i:] @ g
        want = np.linalg.solve(T.T @ Ap @ T, -T.T @ r0)
        assert y[:n_i] == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert y[n_i:n_i + m * n_i] == pytest.approx((Ap @ T)[n_i:].ravel(), rel=1e-12)
        assert y[n_i + m * n_i:] == pytest.approx(r0[n_i:], rel=1e-12)


@pytest.mark.parametrize("m, n", [(1, 9), (2, 12), (3, 20), (2, 40), (0, 10)])
def test_the_looped_partition_gives_the_straight_line_bit_for_bit(m, n, monkeypatch):
    """The partition of the speeds (eq 11) by the looped ``embed_partition`` gives the
    straight-line pivoted Gram-Schmidt's |diag R|, dep, perm and iperm bit for bit, on
    general B, on columns that tie (equal, or within ``TIE``: the first, a later speed,
    wins) and on a zero B; the choice is ``embedding.partition``'s."""
    import embed.codegen.reduction as reduction
    from embed.base.tolerances import PIVOT_RANK_TOL as RANK_TOL
    from embed.embedding.embedding import TIE, partition
    from embed.modes.terms_program import partitioned
    rng = np.random.default_rng(n)
    outs = {}
    for looped in (False, True):
        monkeypatch.setattr(reduction, "LOOP_MIN", 0 if looped else 10 ** 6)
        P = Program(m * n)
        diag, dep, perm, iperm = partitioned(P, [list(range(k * n, (k + 1) * n))
                                                 for k in range(m)], n)
        assert any(op[0] == "partition" for op in P.ops) == looped
        outs[looped] = compile_program(P, diag + dep + perm + iperm, "partition")
    Bs = [rng.normal(size=(m, n)) for _ in range(3)]
    tied = rng.normal(size=(m, n))
    tied[:, 1:5] = tied[:, [0]]                      # equal norms
    tied[:, 6] = tied[:, 7] * (1.0 - TIE / 4)        # within TIE of column 7
    for B in Bs + [tied, np.zeros((m, n))]:
        x, y = outs[False](B.ravel()), outs[True](B.ravel())
        assert x.tobytes() == y.tobytes()
        if m and not B.any():         # rank deficient: declined (``TermsProgramMode.enter``)
            assert not y[m - 1] > RANK_TOL * max(y[0], 1.0)
            continue
        if m:
            assert tuple(y[m:2 * m].astype(int)) == partition(B)
        p = y[2 * m:2 * m + n].astype(int)
        assert sorted(p) == list(range(n)) and list(p[n - m:]) == sorted(p[n - m:])
        assert list(y[2 * m + n:].astype(int)[p]) == list(range(n))     # iperm[perm] = id


@pytest.mark.parametrize("N", [6, 12, 24])  # the jump's system unrolled, then looped
def test_entering_the_pin_in_one_call(N):
    """``TermsProgramMode.enter`` (the jump of mueller eq 7, the partition of eq 11 and the
    monitors in one compiled call) at random states of a 6-link chain: the jump satisfies
    B u+ = 0 and M (u+ - u) = B^T impulse with M and B written in tests/test_pendulums.py,
    the partition is ``embedding.partition``'s (every column of this B has the same norm: a
    tie at every state), the monitors are the mode's own; it declines (None) off the
    manifold and where B loses rank, and the general path then says which constraints."""
    from embed.embedding.embedding import partition
    from embed.base.errors import ConstraintRankError
    from test_pendulums import lagrange

    sc, P, q, _, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding="numeric")
    p = sim.pvec
    p[sim.pnames.index("x_p")], p[sim.pnames.index("d")] = xt, -yt
    active = ("tip_x", "tip_y")
    base = sim.mode_compiler.terms_mode(2, active, (N - 2, N - 1), build=True)
    l = np.full(N, P["l"])
    M, _ = lagrange(q, np.zeros(N), l, [P["m"]] * N, P["g"])
    B, _ = rows(q, np.zeros(N), l, list(active))
    Bm = sim.forms.constraint_rows([sim.forms.constraint_terms(c) for c in active], 0.0, q,
                                   p)[0]
    assert np.abs(Bm) == pytest.approx(np.abs(B), rel=1e-12)    # up to each row's sign
    rng = np.random.default_rng(7)
    for _ in range(5):
        u = rng.normal(size=N)
        dep, x, mon, impulses = base.enter(0.0, q, u, p, True)
        assert dep == partition(B)
        mode = base.with_dep(dep)
        up = mon[mode.sl_u]
        assert np.abs(B @ up).max() < 1e-12
        assert M @ (up - u) == pytest.approx(Bm.T @ np.array(impulses), abs=1e-10)
        assert x.tolist() == q.tolist() + up[list(mode.ind)].tolist()
        assert mon == pytest.approx(mode.monitors(0.0, x, p), rel=1e-12, abs=1e-12)
        dep2, x2, _, none = base.enter(0.0, q, u, p, False)    # no jump asked
        assert none is None and dep2 == dep
        assert x2[N:].tolist() == u[list(mode.ind)].tolist()
    assert base.enter(0.0, q + 1e-3, u, p, True) is None      # off the manifold
    for bad in (np.where(np.arange(N) == 1, np.nan, u), np.where(np.arange(N) == 0, np.inf, u)):
        assert base.enter(0.0, q, bad, p, True) is None        # not finite: none passes
    straight = np.full(N, 0.3)                                 # B of rank 1
    p[sim.pnames.index("x_p")] = P["l"] * N * math.sin(0.3)
    p[sim.pnames.index("d")] = P["l"] * N * math.cos(0.3)
    assert base.enter(0.0, straight, u, p, True) is None
    sim.start(0.0, straight, np.zeros(N))
    with pytest.raises(ConstraintRankError, match="tip_x"):
        sim.set_constraints(active)


def test_the_one_call_entry_changes_nothing_but_roundoff():
    """The chain scenario's reference schedule (a latch event, re-selections) with and without
    the one-call entry: the same events and partitions, outputs within 1e-9; and the latch's
    impulses (the activation jump, mueller eq 7) within 1e-9."""
    import reference_runs
    from embed.modes.mode_compiler import ModeCompiler

    def latch():
        sim = pendulum_chain.build().simulator(embedding="numeric")
        sim.advance(0.3)
        sim.set_inputs({"pin": 2})
        while not sim.events:
            sim.advance(sim.t + 0.01)
        return sim.events, sim.last_impulse, sim.state.dep

    fast, fast_latch = reference_runs.run("pendulum_chain"), latch()
    enter = ModeCompiler.enter
    try:
        ModeCompiler.enter = lambda *args, **kw: None
        general, general_latch = reference_runs.run("pendulum_chain"), latch()
    finally:
        ModeCompiler.enter = enter
    worst = max(abs(a - b) for ra, rb in zip(fast["rows"], general["rows"])
                for a, b in zip(ra, rb))
    assert worst < 1e-9
    (ev, imp, dep), (ev_ref, imp_ref, dep_ref) = fast_latch, general_latch
    assert [e[1:] for e in ev] == [e[1:] for e in ev_ref] and dep == dep_ref
    assert ev[0][0] == pytest.approx(ev_ref[0][0], abs=1e-12)
    assert sorted(imp) == sorted(imp_ref) and len(imp) == 2
    assert [imp[k] for k in imp_ref] == pytest.approx(list(imp_ref.values()), rel=1e-9, abs=1e-12)


def test_copies_of_a_program_mode_keep_buffers_of_their_own():
    """A program mode's buffers are ctypes allocations whose addresses are read once: two
    partitions of one compiled-terms program (copies sharing the function, each with its
    partition in its argument buffer) stepped in turn give what each gives alone; a pickled
    buffer is a new allocation with the same values."""
    from embed.codegen.native import Buffer

    N = 6
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding="numeric")
    p = sim.pvec
    p[sim.pnames.index("x_p")], p[sim.pnames.index("d")] = xt, -yt
    modes = [sim.mode_compiler.compiled(2, dep, ("tip_x", "tip_y")) for dep in ((0, 3), (4, 5))]
    xs = [np.concatenate((q, u[list(m.ind)])) for m in modes]
    alone = [m.rk4(0.0, 1e-3, x, p).tolist() for m, x in zip(modes, xs)]
    for _ in range(2):
        for m, x, ref in zip(modes, xs, alone):
            assert m.rk4(0.0, 1e-3, x, p).tolist() == ref
    assert modes[0]._step is modes[1]._step and modes[0]._inb.at != modes[1]._inb.at
    b = Buffer(3, [1.0, 2.0, 3.0])
    c = pickle.loads(pickle.dumps(b))
    assert c.array.tolist() == [1.0, 2.0, 3.0] and c.at != b.at


def test_every_partition_is_made_ahead_and_entering_makes_no_mode():
    """A prepared constraint set's compiled-terms program has a copy for each of the n choose m
    partitions, each with an argument buffer of its own holding [perm, iperm, flag] (perm =
    [ind, dep]); entering the set (``set_constraints``) runs one of those copies and makes
    none, and re-entering gives the same; an uncorrected copy's partitions are uncorrected."""
    N = 5
    active = ("tip_x", "tip_y")
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding="numeric")
    sim.start(0.0, q, u)
    sim.pvec[sim.pnames.index("x_p")], sim.pvec[sim.pnames.index("d")] = xt, -yt
    sim.set_constraints([])
    sim.prepare(active)
    base = sim.library.terms_programs[(sim.state.mode, active)]
    copies = dict(base._copies)
    assert sorted(copies) == list(itertools.combinations(range(N), 2))
    for dep, mode in copies.items():
        perm = [i for i in range(N) if i not in dep] + list(dep)
        tail = mode._inb.array[-(2 * N + 1):].tolist()
        assert mode.dep == dep and tail[:N] == perm and tail[-1] == 1.0
        assert [perm[int(k)] for k in tail[N:2 * N]] == list(range(N))   # iperm inverts perm
    assert len({mode._inb.at for mode in copies.values()}) == len(copies)
    sim.set_constraints(active)
    assert any(sim.compiled_mode is mode for mode in copies.values())
    assert base._copies == copies
    entered = sim.compiled_mode
    sim.advance(0.01)
    sim.set_constraints([])
    sim.set_constraints(active)
    assert sim.compiled_mode.dep != entered.dep or sim.compiled_mode is entered
    assert any(sim.compiled_mode is mode for mode in copies.values())
    plain = base.uncorrected()           # without the step's correction: its partitions too
    assert plain.with_dep((0, 1)).correct == 0.0 and base.with_dep((0, 1)).correct == 1.0
    assert base._copies == copies


def test_the_free_set_runs_on_its_own_program_and_keeps_the_energy():
    """``prepare([])`` (no constraint: nothing to enter, it once raised IndexError) gives the free
    chain a compiled-terms program of its own; its steps keep the total energy (no dissipation:
    RK4's error only) and agree with the free mode's numpy path (``NumericMode``)."""
    N = 5
    sc, P, q, u, _ = _pinned(N)
    runs = {}
    for prepared in (False, True):      # the same library: preparing replaces the numpy path
        sim = sc.simulator(embedding="numeric")
        sim.start(0.0, q, u)
        if prepared:
            sim.prepare([])
        sim.set_constraints([])
        assert type(sim.compiled_mode).__name__ == ("TermsProgramMode" if prepared
                                                     else "NumericMode")
        energy = []
        for k in range(1, 201):
            sim.advance(k * 1e-3)
            o = sc.observe(sim)
            energy.append(o["kinetic_energy"] + o["potential_energy"])
        assert max(energy) - min(energy) < 1e-7 * max(1.0, abs(energy[0]))
        runs[prepared] = np.array(sim.x)
    assert runs[True] == pytest.approx(runs[False], rel=1e-10, abs=1e-12)


def test_prepare_rehearses_the_switch_and_changes_nothing():
    """``prepare`` enters the set once on a configuration it finds on the manifold
    (``projection.on_manifold``, from any distance) and undoes it: the state, the event log,
    the impulses and the pending-input flags are as before, and the pinned set's mode was
    entered (its partition's copy is in the library).  Unreachable: no rehearsal, no error."""
    from embed.hybrid.projection import on_manifold
    from embed.hybrid.switching import entered
    N = 5
    active = ("tip_x", "tip_y")
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding="numeric")
    sim.start(0.0, q, u)
    sim.pvec[sim.pnames.index("x_p")], sim.pvec[sim.pnames.index("d")] = xt + 0.3, -yt - 0.2
    sim.set_constraints([])
    sim.advance(0.01)
    projection = entered(sim, active)[1]
    qm = on_manifold(projection, sim.t, sim.q, sim.pvec)       # 0.36 m away
    tq = np.concatenate(([sim.t], qm, sim.pvec))
    assert np.abs(projection.phi(tq)[0]).max() <= 1e-12
    before = sim.get_state()
    flags = (dict(sim.last_impulse), sim.step_flags(), sim.event_count)
    sim.prepare(active)
    assert any(k[:2] == (sim.state.mode, active) for k in sim.library.numeric_modes)
    after = sim.get_state()
    assert set(after) == set(before)
    for k in before:
        assert np.array_equal(np.asarray(after[k], dtype=object), np.asarray(before[k], dtype=object)), k
    assert (dict(sim.last_impulse), sim.step_flags(), sim.event_count) == flags
    sim.pvec[sim.pnames.index("d")] = 10.0                     # beyond the chain's reach
    assert on_manifold(projection, sim.t, sim.q, sim.pvec) is None
    sim.prepare(active)
    assert sim.get_state()["t"] == before["t"]


@pytest.mark.parametrize("embedding", ["symbolic", "numeric"])
def test_a_step_takes_its_first_stage_from_where_the_last_ended(embedding):
    """First same as last (``registers.Memo``, ``programs.rk4_program``): a step that starts where
    the last ended, with the same parameters and partition, takes xdot there from the module's
    memo instead of evaluating the stage again; the step is the same to the bit as one that
    evaluates it (the memo cleared), and the memo is what it reads (poisoned, the step
    changes).  Another parameter or another partition misses it.  On the numeric path, the
    one-call entry remembers its state: the first step after it starts there."""
    N = 6
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding=embedding)
    p = sim.pvec.copy()
    p[sim.pnames.index("x_p")], p[sim.pnames.index("d")] = xt, -yt
    dep, active = (N - 2, N - 1), ("tip_x", "tip_y")
    mode = sim.mode_compiler.compiled(2, dep, active)
    memo, h, nx = mode._step.memo, 1e-3, mode.nx
    vals = memo.reshape(2, -1)[:, -nx:]
    x0 = np.concatenate((q, u[:N - 2]))

    def two_steps(p2=p, mode2=mode, poison=False):
        x1 = mode.rk4(0.0, h, x0, p)[:nx]
        if poison:
            vals[:] = np.float64(1e3).view(np.int64)
        return mode2.rk4(h, h, x1 if mode2 is mode else x0, p2)

    def fresh(p2=p, mode2=mode):
        x1 = mode.rk4(0.0, h, x0, p)[:nx]
        memo[:] = 0
        return mode2.rk4(h, h, x1 if mode2 is mode else x0, p2)

    assert np.array_equal(two_steps(), fresh())           # to the bit
    assert not np.allclose(two_steps(poison=True), fresh())
    p2 = p.copy()
    p2[sim.pnames.index("g")] *= 1.01
    assert np.array_equal(two_steps(p2, poison=True), fresh(p2))
    if embedding == "numeric":                           # another partition, same function
        other = mode.with_dep((0, 3))
        assert other._step is mode._step
        assert np.array_equal(two_steps(mode2=other, poison=True), fresh(mode2=other))
        got = mode.enter(0.0, q, u, p, True)
        assert got is not None and got[0] == dep
        ref = mode.rk4(0.0, h, got[1], p)
        mode.enter(0.0, q, u, p, True)
        vals[:] = np.float64(1e3).view(np.int64)
        assert not np.allclose(mode.rk4(0.0, h, got[1], p), ref)


def test_every_mode_calls_one_compiled_copy_of_the_unconstrained_terms():
    """The model's unconstrained terms (b, A_u, qdot: eq 1-4) are compiled once and called by
    name from every mode's program (its stage and its entry), not compiled into each: the
    free chain's steps keep that code warm for the switch into the pin."""
    N = 5
    sc, P, q, u, (xt, yt) = _pinned(N)
    sim = sc.simulator(embedding="numeric")
    sim.start(0.0, q, u)
    sim.prepare([])
    sim.prepare(["tip_x", "tip_y"])
    lib = sim.mode_compiler.library
    programs = [v for v in lib.terms_programs.values() if v is not None]
    terms = lib.shared("terms_program.model", None)
    assert len(programs) >= 2
    for mode in programs:
        assert terms.name.encode() in mode._step.obj           # called by name
