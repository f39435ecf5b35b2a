"""A large fence's jet compiled in the fast worker and loaded off the stepping path (issue 30,
tails): the same bits as its tape, the object code loaded in the loader thread and only then
handed on, and an offline run that announces two large fences 20 ms apart meets the second
one where it lies.  Timing is the benchmark's (benchmarks/hil_fences.py), never asserted here."""

import math
import pickle

import numpy as np
import pytest

from embed.codegen import native
from embed.modes.functions import Tape
from fence_storm import curve
from scenarios.disk_fence.family import TAPE_MAX_OPS, jet_function, worker_jet
from scenarios.disk_fence.profile import FenceProfile
from test_fence_storm import on_its_own_fence
from test_reliability import K_END, STATE, announce, runner

L_F = 6.7


def bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def test_a_large_jet_is_compiled_to_the_same_bits_as_its_tape():
    """Ten sine factors (1,300 operations): compiled; h, h', h'', h''' equal to the tape's to
    the bit over the fence and a little beyond; a small profile keeps its tape."""
    large = FenceProfile.from_text(curve(0.002, 10, 1))
    jet, tape = worker_jet(large), jet_function(large)
    assert isinstance(jet, native.NativeFunction) and len(tape.prog) > TAPE_MAX_OPS
    a, b = np.zeros(4), np.zeros(4)
    for s in np.linspace(-0.5, L_F + 0.5, 1501):
        x = np.array([s])
        jet.unsafe_real(x, a)
        tape.unsafe_real(x, b)
        assert np.array_equal(bits(a), bits(b)), (s, a, b)
    # an independent check of the values: h(s) from the text's own formula
    s = 1.3
    h = 0.002 * s ** 2 * math.prod(1 + 0.01 * math.sin((1 + m % 12) * s + 1) for m in range(10))
    assert jet(np.array([s]))[0] == pytest.approx(h, rel=1e-14)
    small = FenceProfile.from_text("0.05*s**2*(1+0.01*sin(3*s))")
    assert isinstance(worker_jet(small), Tape)


def test_functions_decoded_in_deferred_loads_load_in_the_loader_thread():
    """Unpickled inside ``deferred_loads``: listed and not loaded (not callable); after
    ``load_later`` the same values as the original; outside it, loaded at once."""
    jet = worker_jet(FenceProfile.from_text(curve(0.002, 10, 2)))
    data = pickle.dumps(("terms", 1, jet))
    with native.deferred_loads() as pending:
        msg = pickle.loads(data)
    assert pending == [msg[2]]
    with pytest.raises(AttributeError):
        msg[2].unsafe_real(np.array([1.0]), np.zeros(4))
    done = native.load_later(pending)
    assert done.result(timeout=60) is None
    x = np.array([2.25])
    assert np.array_equal(bits(msg[2](x)), bits(jet(x)))
    again = pickle.loads(data)[2]                 # no context: loaded now
    assert np.array_equal(bits(again(x)), bits(jet(x)))


def run_two_fences(fmu_dir, name, n=1800, **params):
    """Offline (the default): two large fences, ten and eleven sine factors, announced 40
    and 20 ms before the disk reaches the ramp's end; returns the outputs and the text of
    the second fence."""
    texts = [curve(0.002, 10, 1), curve(0.002, 11, 2)]
    r = runner(fmu_dir, name, **params)
    try:
        for k in range(n):
            if k in (K_END - 40, K_END - 20):
                announce(r, 1 + (k == K_END - 20), texts[k == K_END - 20])
            r.step(1e-3)
        return r.get(*STATE, "answers_late"), texts[1]
    finally:
        r.close()


def test_two_large_fences_20_ms_apart_offline_the_disk_meets_the_second(fmu_dir):
    """The issue's case with its two large fences: the answers (their compiled jets loaded in
    the loader thread) are waited for, so the disk rolls onto the second fence at the ramp's
    end, its centre where that fence's offset curve puts it (1e-7), in mode 3."""
    o, text = run_two_fences(fmu_dir, "tails_two")
    assert o["status"] == 0 and o["geometry_status"] == 0, o
    assert o["mode"] == 3 and o["geometry_version_active"] == 2 and o["embed_pending"] == 0, o
    assert o["answers_late"] == 0
    s, miss = on_its_own_fence({"outputs": o, "params": {}, "text": text})
    assert s > 0.01 and miss <= 1e-7, (s, miss)


def test_the_jet_mode_calls_its_functions_at_its_buffers_and_survives_a_copy():
    """JetMode calls its compiled functions with its buffers' addresses bound once
    (``jet_mode.raw_call``): its RK4 step equals the classical RK4 written here over its own
    right-hand side (each stage at the state the formula says), and a pickled or deep-copied
    mode (the user cache stores the library) steps to the same bits as the original: before,
    a copy lost its views of its argument buffer and stepped 4e-7 off."""
    import copy
    from scenarios import disk_fence
    from scenarios.disk_fence.family import profile_family_modes
    from scenarios.disk_fence.jet_mode import JetMode
    sim = disk_fence.build().simulator(params={"q4_start": 20.0})
    jet = worker_jet(FenceProfile.from_text(curve(0.002, 10, 1)))
    meta, f, mon = profile_family_modes(sim)[(0, 1)]
    mode = JetMode((107, ("a", "b"), (0, 1)), meta, f, mon, jet, L_F, sim.pnames.index("L"))
    p, t, h = sim.pvec, 3.5, 1e-3
    x = np.array([25.25, -1.70, 0.3, 25.31, 1.0, -0.5])[:mode.nx]
    x[3] = sim.param("L") + 0.4                    # on the fence: s = 0.4
    y = mode.rk4(t, h, x, p)
    k1 = mode.rhs(t, x, p)
    k2 = mode.rhs(t + h / 2, x + h / 2 * k1, p)
    k3 = mode.rhs(t + h / 2, x + h / 2 * k2, p)
    k4 = mode.rhs(t + h, x + h * k3, p)
    xn = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    assert np.allclose(y[:mode.nx], xn, rtol=1e-14, atol=1e-14)
    assert np.array_equal(y[mode.nx:-1], mode.monitors(t + h, y[:mode.nx], p))
    assert not np.array_equal(mode.rhs(t, x, p), mode.rhs(t, x + 0.1, p))
    copies = [pickle.loads(pickle.dumps(mode)), copy.deepcopy(mode)]
    for dx in (0.0, 0.01, -0.02):
        for other in copies:
            assert np.array_equal(bits(other.rk4(t, h, x + dx, p)), bits(mode.rk4(t, h, x + dx, p)))
            assert np.array_equal(bits(other.monitors(t, x + dx, p)),
                                  bits(mode.monitors(t, x + dx, p)))


def test_the_loader_thread_hands_back_a_done_without_importing_concurrent_futures():
    """``load_later``/``run_later`` answer with ``done.Done`` (importing concurrent.futures
    with logging inside a step was a measured bottleneck): its result, the exception a job
    raised, a wait that times out, and, in a fresh process, concurrent.futures and logging
    not imported by the loader's use."""
    import subprocess
    import sys
    from embed.codegen.done import Done
    assert native.run_later(lambda: 6 * 7).result(timeout=60) == 42

    def fails():
        raise ValueError("this job fails")
    bad = native.run_later(fails)
    assert bad.wait(60) and bad.done()
    assert isinstance(bad.exception(), ValueError)
    with pytest.raises(ValueError, match="this job fails"):
        bad.result()
    never = Done()
    assert not never.wait(0.01) and not never.done()
    with pytest.raises(TimeoutError):
        never.result(timeout=0.01)
    code = ("import sys\nfrom embed.codegen import native\n"
            "assert native.run_later(lambda: 1).result(timeout=60) == 1\n"
            "native.load_later([]).result(timeout=60)\n"
            "print(sorted(m for m in ('concurrent.futures', 'logging') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_jet_mode_bound_ahead_steps_to_the_same_bits_as_one_bound_at_its_first_step():
    """``prepare_profile`` binds the JetModes' and terms' C calls in the loader thread
    (``bind``): a mode bound ahead steps and monitors to the same bits as one bound lazily;
    a jet still loading is not bound (it would be bound to the slow path)."""
    from scenarios import disk_fence
    from scenarios.disk_fence.family import profile_family_modes
    from scenarios.disk_fence.jet_mode import JetMode
    sim = disk_fence.build().simulator(params={"q4_start": 20.0})
    jet = worker_jet(FenceProfile.from_text(curve(0.002, 10, 1)))
    meta, f, mon = profile_family_modes(sim)[(0, 1)]
    made = [JetMode((107, ("a", "b"), (0, 1)), meta, f, mon, jet, L_F, sim.pnames.index("L"))
            for _ in range(2)]
    made[0].bind()
    assert made[0]._calls is not None and made[1]._calls is None
    p, t, h = sim.pvec, 3.5, 1e-3
    x = np.array([25.25, -1.70, 0.3, 25.31, 1.0, -0.5])[:made[0].nx]
    x[3] = sim.param("L") + 0.4
    for dx in (0.0, 0.01):
        ahead, lazy = (m.rk4(t, h, x + dx, p) for m in made)
        assert np.array_equal(bits(ahead), bits(lazy))
    with native.deferred_loads() as pending:
        unloaded = pickle.loads(pickle.dumps(jet))
    assert pending == [unloaded]
    waiting = JetMode((108, ("a", "b"), (0, 1)), meta, f, mon, unloaded, L_F,
                      sim.pnames.index("L"))
    waiting.bind()
    assert waiting._calls is None
    native.load_later(pending).result(timeout=60)
    assert np.array_equal(bits(waiting.rk4(t, h, x, p)), bits(made[0].rk4(t, h, x, p)))


def test_profile_terms_bound_to_their_buffers_give_the_ordinary_calls_bits():
    """``ProfileTerms`` calls the family's function bound to buffers of its own (``bind``:
    its C function or ``unsafe_real``, without the ordinary call's checks): at 50 random
    arguments on and beyond the fence, the family's terms and its entry terms give the bits
    of the ordinary call at the same full argument vector, the function as built (symengine)
    and as shipped (object code, unpickled)."""
    from scenarios import disk_fence
    from scenarios.disk_fence.family import ProfileTerms, profile_family
    sim = disk_fence.build().simulator(params={"q4_start": 20.0})
    fn, _, _, entry = profile_family(sim)
    jet = worker_jet(FenceProfile.from_text(curve(0.002, 10, 1)))
    n, i_L = sim.model.n, sim.pnames.index("L")
    rng = np.random.default_rng(7)
    for f, at in [(fn, fn.n_in - 5 - len(sim.psyms) + i_L), (entry.fn, 1 + 2 * n + i_L),
                  (pickle.loads(pickle.dumps(fn)), fn.n_in - 5 - len(sim.psyms) + i_L)]:
        terms = ProfileTerms(f, jet, L_F, at)
        for _ in range(50):
            x = rng.normal(size=terms.n_in)
            x[I_Q4] = x[at] + rng.uniform(-0.5, L_F + 0.5)
            got = terms(x)
            assert terms._fn is not None
            assert np.array_equal(bits(got), bits(f(terms.buf.copy())))


I_Q4 = 4       # q4 among (t, q1, ..., q4, ...)
