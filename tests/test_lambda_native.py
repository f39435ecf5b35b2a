"""symengine's "lambda" backend translated to object code bit for bit (issue 30,
embed.codegen.lambda_order): every lambda-compiled function a bundled scenario's run fills its
library with (small modes' RK4 steps and monitors, constraints' terms) gives, as the
translated object code (``LambdaNative``), the same bits as symengine's closures on random argument
vectors (magnitudes over many decades, both signs, zeros) and on the run's own arguments; so
``ModeLibrary.picklable`` ships them (objects.pkl holds disk_ramp's sliding and rolling modes)
and the FMU with them steps as without (tests/test_startup.py).

"The same bits" here: equal 64-bit patterns wherever symengine's output is a number, and a NaN
wherever it is NaN.  The sign of a NaN made by an invalid operation (inf - inf) is not
IEEE 754's to define: x86 gives the first operand's NaN when both are, and which register a
compiler puts first differs (measured: ball_bowl's monitors, +nan against -nan); no
operation the functions do reads a NaN's sign (fabs, sign, max and the comparisons do not)."""

import io
import pickle
import subprocess
import sys
import zipfile

import cloudpickle
import numpy as np
import pytest
import symengine as se

import scenarios
from embed.codegen.lambda_order import LambdaNative, native_of, visitor_value
from embed.modes import functions
from embed.modes.library import ModeLibrary

KEPT = 300          # run arguments kept per function


def same_bits(want, got):
    """Equal bit patterns where ``want`` is a number, NaN where it is NaN."""
    nan = np.isnan(want)
    return np.array_equal(nan, np.isnan(got)) and \
        np.array_equal(np.where(nan, 0.0, want).view(np.int64), np.where(nan, 0.0, got).view(np.int64))


def spread(rng, n_in, n=1000):
    """``n`` argument vectors: |x| over 10^-12 .. 10^12 with random signs, normal ones, and
    zeros of both signs sprinkled in."""
    v = 10.0 ** rng.uniform(-12, 12, (n, n_in)) * rng.choice([-1.0, 1.0], (n, n_in))
    v[::3] = rng.normal(size=v[::3].shape)
    v[rng.random(v.shape) < 0.04] = 0.0
    v[rng.random(v.shape) < 0.02] = -0.0
    return v


def check(fn, native, vectors):
    a, b = np.empty(native.n_out), np.empty(native.n_out)
    for v in vectors:
        v = np.ascontiguousarray(v, dtype=np.float64)
        fn.unsafe_real(v, a)
        native.unsafe_real(v, b)
        assert same_bits(a, b), (v.tolist(), a.tolist(), b.tolist())


def test_constructs_bit_for_bit():
    """Each construct the visitor evaluates (Add's coefficient first, Mul's std::pow per
    factor and base E, Pow (pow(z, 0.5), not sqrt: they differ at -0 and -inf), Rational constants such as 1/10 that mp_get_d converts, Max/Min
    with std::max's nan and signed-zero rule, sign at -0 and nan, Abs, atan2) against the
    lambda backend itself, on 4000 vectors including infinities, nan and -0."""
    x, y, z = se.symbols("x y z")
    exprs = [3 * x * y**2 + 2 * z - 5 + x / 7 + y * z,
             se.sin(x) * se.exp(y) / z + se.sqrt(x**2 + y**2) + se.Rational(1, 10) * z,
             se.Max(x, y, z) - se.Min(x, 2 * y), se.Max(z, x) + se.Min(y, z),
             se.sign(x) * se.Abs(y) + se.atan2(y, x) + se.sign(z),
             (x + y)**se.Rational(3, 2) + se.exp(x * y) + 2**x + se.pi * x / 10 + se.E**(y - 1),
             se.cos(x + y * z)**2 - 1 / (1 + x**2) + se.tan(z) * se.log(y) + se.atan(x * z),
             se.sqrt(2) * x + se.Integer(2)**60 * y + se.Rational(2**70 + 1, 3) * z,
             se.sqrt(z), 1 / se.sqrt(y), x**y, z**-3 + y**2 * x**se.Rational(-1, 3)]
    args = [x, y, z]
    fn = se.Lambdify(args, exprs, real=True, backend="lambda", cse=True)
    native = native_of(args, exprs, "constructs")
    rng = np.random.default_rng(7)
    v = np.vstack([spread(rng, 3, 3000), rng.choice(
        [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-310, -2.5], (1000, 3))])
    check(fn, native, v)
    assert visitor_value(se.Rational(1, 10)) == 0.1


class Recorder:
    """Keeps some of the argument vectors each lambda ``Compiled`` is called with in a run."""

    def __init__(self):
        self.seen = {}

    def wrap(self, c):
        kept, calls, call = [], [0], c.fn.unsafe_real
        self.seen[id(c)] = kept

        def unsafe_real(args, out):
            calls[0] += 1
            if len(kept) < KEPT and calls[0] % 3 == 1:
                kept.append(np.array(args, dtype=np.float64))
            return call(args, out)
        c.unsafe_real = unsafe_real


def lambda_functions(library):
    """The lambda-backend ``Compiled`` objects the shippable part of ``library`` holds."""
    found = {}

    class Finder(cloudpickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, functions.Compiled):
                if obj.source is not None:
                    found[id(obj)] = obj
                return (int, (0,))
            return super().reducer_override(obj)

    for slot in ModeLibrary.__slots__:
        value = getattr(library, slot)
        if slot in ("lock", "embeddings", "expressions", "sets"):
            continue
        for item in (value.items() if isinstance(value, dict) else [value]):
            try:
                Finder(io.BytesIO()).dump(item)
            except Exception:  # noqa: BLE001 - what picklable leaves out anyway
                pass
    return list(found.values())


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_scenario_lambda_functions_bit_for_bit(name, monkeypatch):
    """A bundled scenario's default run (2 s; the compiled-terms path for the background
    one, as at ``embed-fmu build``): every lambda function in its library, translated, gives
    symengine's bits on 1000 spread vectors and on the run's own arguments, and pickles as
    that translation."""
    rec = Recorder()
    made = functions.Compiled.__init__

    def init(self, fn, n_in, n_out, source=None):
        made(self, fn, n_in, n_out, source)
        if source is not None:
            rec.wrap(self)
    monkeypatch.setattr(functions.Compiled, "__init__", init)
    sc = scenarios.load(name).build()
    embedding = "numeric" if sc.embedding == "background" else sc.embedding
    library = ModeLibrary.of(sc.automaton, embedding)
    sc.simulator(embedding=embedding, library=library).advance(2.0)
    fns = lambda_functions(library)
    if name in ("disk_ramp", "slider_crank3", "ball_bowl", "pendulum_line", "kneed_walker"):
        assert any("RK4 step" in c.source[2] for c in fns)        # small modes
    if name not in ("disk_ramp",):
        assert any(c.source[2].startswith("constraint") for c in fns)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for c in fns:
        native = c.native()
        own = rec.seen.get(id(c), [])
        check(c.fn, native, list(spread(rng, c.n_in)) + own)
    if fns:
        loaded = pickle.loads(pickle.dumps(fns[0]))
        assert isinstance(loaded, LambdaNative)
        check(fns[0].fn, loaded, spread(rng, fns[0].n_in, 50))


SHIPPED = r"""
import io, pickle, sys
sys.path.insert(0, sys.argv[1])
data = open(sys.argv[1] + "/formed/objects.pkl", "rb").read()


class Loader(pickle.Unpickler):
    def persistent_load(self, pid):     # the model: the loading scenario's (shipped.read)
        return None


libs = Loader(io.BytesIO(data[data.index(b"\n", 16) + 1:])).load()
for emb, lib in libs.items():
    if not hasattr(lib, "modes"):       # the shipped dgeqp3 answers (embedding.partition)
        continue
    for key, mode in lib.modes.items():
        assert mode._f is None and mode._args is None, key     # no expression shipped
        print("mode", key[0], ",".join(key[1]), type(mode._step).__name__,
              type(mode._rhs).__name__)
    for cname, t in lib.constraint_terms.items():
        print("terms", cname, type(t.BC).__name__, type(t.gamma).__name__)
"""


@pytest.mark.parametrize("name", ["disk_ramp", "slider_crank3"])
def test_fmu_ships_its_small_modes(fmu_dir, tmp_path, name):
    """objects.pkl holds the modes the default run reached (disk_ramp: sliding, mode 1,
    and rolling, mode 2), their right-hand sides (the adaptive solver's) and every
    constraint's terms, as object code, and none of their expressions."""
    with zipfile.ZipFile(fmu_dir / f"{name}.fmu") as z:
        z.extractall(tmp_path)
    res = subprocess.run([sys.executable, "-c", SHIPPED, str(tmp_path / "resources")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [line.split() for line in res.stdout.splitlines()]
    modes = {(int(w[1]), w[2] if len(w) == 5 else ""): w[-2] for w in lines if w[0] == "mode"}
    assert {w[-1] for w in lines if w[0] == "mode"} == {"LambdaNative"}   # the adaptive rhs
    terms = {w[1]: w[2:] for w in lines if w[0] == "terms"}
    if name == "disk_ramp":
        assert modes == {(1, ""): "LambdaNative", (2, "rolling"): "LambdaNative"}
        assert terms == {"rolling": ["LambdaNative", "LambdaNative"]}
    else:
        assert modes and set(modes.values()) == {"LambdaNative"}
        assert set(terms) == {"slider3_link", "slider4_link"}
        assert {t for v in terms.values() for t in v} == {"LambdaNative"}


def test_untranslatable_function_is_left_out():
    """A construct with no bit-exact translation here (floor) keeps today's behaviour: the
    function does not pickle, and ``picklable`` leaves out what holds it, keeping the rest."""
    x = se.Symbol("x")
    floor = functions.lambdify([x], [se.floor(x) + x], "floor of x")
    plain = functions.lambdify([x], [se.sin(x) * x + 1], "sin of x")
    assert floor(np.array([2.5]))[0] == 4.5
    with pytest.raises(TypeError, match="floor of x does not pickle"):
        pickle.dumps(floor)
    library = ModeLibrary()
    library.constraint_terms.update(kept=plain, dropped=floor)
    shipped = pickle.loads(cloudpickle.dumps(library.picklable()))
    assert set(shipped.constraint_terms) == {"kept"}
    check(plain.fn, shipped.constraint_terms["kept"], spread(np.random.default_rng(3), 1, 200))


# not top and swing_bar: their symbolic modes are ``ProgramMode``s, which keep ctypes entry
# points and do not pickle (docs/design.md, Start-up): compiled again at run time
@pytest.mark.parametrize("name", ["disk_ramp", "slider_crank3", "pendulum_line", "ball_bowl",
                                  "pendulum_belt", "kneed_walker"])
def test_shipped_library_steps_without_compiling(name, monkeypatch):
    """The library a default 8 s run filled, shipped (``picklable``, pickled and loaded) and
    adopted by a fresh build of the scenario, runs the same 8 s bit for bit as the live run
    without compiling anything: every lambda function it steps on is the shipped object code
    (with the adaptive solver too: the modes' right-hand sides are shipped)."""
    from embed.codegen import native

    def trace(sc, library, solver="rk4"):
        sim = sc.simulator(embedding=sc.embedding, library=library, solver=solver)
        rows = []
        for k in range(800):
            sim.advance((k + 1) * 0.01)
            rows.append(np.concatenate(([sim.t, sim.mode_number, sim.event_count], sim.x,
                                        sim.mon)))
        return rows

    sc = scenarios.load(name).build()
    live = trace(sc, ModeLibrary.of(sc.automaton, sc.embedding))
    blob = cloudpickle.dumps(ModeLibrary.of(sc.automaton, sc.embedding).picklable())
    fresh = scenarios.load(name).build()
    library = ModeLibrary.adopt(fresh.automaton, fresh.embedding, pickle.loads(blob))

    def refuse(self, *args, **kw):
        raise AssertionError(f"{type(self).__name__} compiled at run time")
    monkeypatch.setattr(functions.Compiled, "__init__", refuse)      # every lambdify
    monkeypatch.setattr(native.NativeFunction, "__init__", refuse)   # every LLVM compile
    shipped = trace(fresh, library)
    for got, want in zip(shipped, live):
        np.testing.assert_array_equal(got, want, err_msg=f"t = {want[0]}")
    if name in ("disk_ramp", "pendulum_line"):
        # the adaptive solver (an FMU parameter) on the shipped modes: their right-hand
        # sides were compiled at shipping from the live expressions, not from loaded ones
        # (a compiled-terms mode's right-hand side, a program of compiled terms, is compiled
        # at its first use as without the library)
        monkeypatch.undo()
        live = trace(sc, ModeLibrary.of(sc.automaton, sc.embedding), "adaptive")
        monkeypatch.setattr(functions.Compiled, "__init__", refuse)
        shipped = trace(fresh, library, "adaptive")
        for got, want in zip(shipped, live):
            np.testing.assert_array_equal(got, want, err_msg=f"adaptive, t = {want[0]}")


def random_expr(rng, syms, depth):
    """A random expression over ``syms`` of the constructs the translation handles."""
    if depth == 0 or rng.random() < 0.2:
        pick = rng.integers(6)
        if pick == 0:
            return se.Rational(int(rng.integers(-9, 10)) or 1, int(rng.integers(1, 12)))
        if pick == 1:
            return [se.pi, se.E, se.Integer(2)**int(rng.integers(50, 70))][rng.integers(3)]
        return syms[rng.integers(len(syms))]
    a = random_expr(rng, syms, depth - 1)
    b = random_expr(rng, syms, depth - 1)
    k = int(rng.integers(-3, 4))
    ops = [lambda: a + b, lambda: a - b, lambda: a * b, lambda: a / b, lambda: a**k,
           lambda: a**se.Rational(1, 2), lambda: a**se.Rational(-3, 2),
           lambda: se.sin(a) + se.cos(b), lambda: se.exp(a) * b, lambda: se.log(a) - b,
           lambda: se.Abs(a) * se.sign(b), lambda: se.Max(a, b, -a), lambda: se.Min(a, b),
           lambda: se.atan2(a, b)]
    e = ops[rng.integers(len(ops))]()
    return e if e.free_symbols else syms[0]     # no constant subtree (1/0, sqrt(-1/3): I)


def test_random_expressions_bit_for_bit():
    """200 random expressions of depth 4 as one function (cse shares their subexpressions
    across outputs), on 600 vectors: the translation's bits are the lambda backend's."""
    rng = np.random.default_rng(11)
    syms = list(se.symbols("a b c"))
    exprs = [random_expr(rng, syms, 4) for _ in range(200)]
    exprs = [e for e in exprs if not e.is_Number and "I" not in str(e)]   # real (log(-4/9))
    assert len(exprs) > 150
    fn = se.Lambdify(syms, exprs, real=True, backend="lambda", cse=True)
    check(fn, native_of(syms, exprs, "random expressions"), spread(rng, 3, 600))
