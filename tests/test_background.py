"""Background embedding: a never-seen constraint set steps on the numeric path at once and moves
to its symbolic embedding, compiled in a worker process, when that is ready; the motion does not
notice the change of path."""

import time

import numpy as np
import pytest

from embed.background.client import BackgroundCompiler
from scenarios import pendulum_chain


def test_numeric_first_then_the_workers_symbolic_embedding():
    sc = pendulum_chain.build(4)
    bc = BackgroundCompiler("pendulum_chain", {"N": 4})
    bc.real_time = True      # steps on without the answers (offline it would wait: issue 33)
    try:
        sim = sc.simulator(embedding="background", compiler=bc, params={"u_start": 1.0})
        ref = sc.simulator(embedding="numeric", params={"u_start": 1.0})
        deadline = time.time() + 120
        while not bc.ready and time.time() < deadline:   # the worker builds the model first
            bc.poll()
            time.sleep(0.01)
        assert bc.ready, bc.errors
        for s in (sim, ref):
            s.advance(0.05)
            l = sc.defaults()["l"]
            s.pvec[s.pnames.index("y_m")] = -l * np.sum(np.cos(np.array(s.q)[:2]))
            s.set_constraints(["mid_y", "tip_y"])
        assert sim.compiled_mode.path == "numeric"                  # stepping at once, no compile waited for
        t = 0.05
        while sim.compiled_mode.path == "numeric" and time.time() < deadline:
            t += 1e-3
            sim.advance(t)
            ref.advance(t)
            time.sleep(0.001)                            # let the worker have the other core
        assert sim.compiled_mode.path == "symbolic", bc.errors
        assert sim.background_latency is not None and sim.background_latency < 60
        for k in range(200):
            t += 1e-3
            sim.advance(t)
            ref.advance(t)
        assert np.array(sim.q) == pytest.approx(np.array(ref.q), abs=1e-9)
        assert np.array(sim.u) == pytest.approx(np.array(ref.u), abs=1e-9)
        assert sim.residual() <= 1e-10
        # every request answered (its "done" frame read by a later poll): the stepping loop
        # then no longer polls the worker's pipe
        while bc.outstanding and time.time() < deadline:
            bc.poll()
            time.sleep(0.01)
        assert bc.outstanding == 0 and not bc.errors
        # with the mode came, in a frame of its own, its constraint set's entry terms (the
        # event step's one call)
        for _ in range(10):
            sim.poll_background()
        et = sim.library.entry[("mid_y", "tip_y")]
        q, u = np.array(sim.q), np.array(sim.u)
        rows = [sim.forms.constraint_terms(c) for c in ("mid_y", "tip_y")]
        sim.library.entry.pop(("mid_y", "tip_y"))
        for a, b in zip(et(sim.t, q, u, sim.pvec), sim.mode_compiler.entry(rows, sim.t, q, u, sim.pvec)):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-12)
        # RK4 steps through the composed step: no right-hand side was sent; asked for it (as
        # the adaptive solver does), it comes in a frame of its own after the mode's
        assert sim.compiled_mode.path == "symbolic" and sim.compiled_mode._rhs is None
        bc.submit(sim.compiled_mode.key, rhs=True)
        while (bc.outstanding or sim.compiled_mode._rhs is None) and time.time() < deadline:
            sim.poll_background()
            time.sleep(0.01)
        assert sim.compiled_mode.path == "symbolic" and sim.compiled_mode._rhs is not None
        assert sim.compiled_mode.rhs(sim.t, sim.x, sim.pvec) == pytest.approx(
            ref.compiled_mode.rhs(ref.t, ref.x, ref.pvec), rel=1e-9, abs=1e-9)
        # a set with a prepared compiled-terms program (one compiled call a step already) is
        # not asked of the worker, which would only take the stepping process's core
        sim.prepare(["mid_y"])
        sim.set_constraints(["mid_y"])
        assert type(sim.compiled_mode).__name__ == "TermsProgramMode"
        assert sim.compiled_mode.key not in sim.library.submitted and bc.outstanding == 0
        sim.advance(t + 1e-3)
        assert sim.residual() <= 1e-10
        bc.submit((-1, ("no_such_constraint",), (0,)))   # a bad request is answered too
        while bc.outstanding and time.time() < deadline:
            bc.poll()
            time.sleep(0.01)
        assert bc.outstanding == 0 and bc.errors and "no_such_constraint" in str(bc.errors)
    finally:
        bc.close()


def test_background_without_its_worker_is_refused():
    """The background path needs the worker that embeds symbolically: without one, a clear
    error at construction (it used to fail at the first re-selection)."""
    from embed.base.errors import InputError

    with pytest.raises(InputError, match="needs its worker"):
        pendulum_chain.build(3).simulator(embedding="background")


def test_lazy_workers_start_at_the_first_request():
    """Lazy workers (``BackgroundCompiler(lazy=True)``: an FMU whose every mode was shipped
    with its compiled-terms program needs none): no process until a mode is asked of them;
    then they start, and the offline run waits for their symbolic embedding as it does with
    workers started at once, bit for bit the same motion."""
    runs = {}
    for lazy in (True, False):
        sc = pendulum_chain.build(4)       # a library of its own: nothing answered before
        bc = BackgroundCompiler("pendulum_chain", {"N": 4}, lazy=lazy)
        try:
            sim = sc.simulator(embedding="background", compiler=bc, params={"u_start": 1.0})
            sim.advance(0.05)
            assert bc.started is not lazy and bool(bc.worker_pids()) is not lazy
            assert not lazy or bc.outstanding == 0      # not "starting" either
            l = sc.defaults()["l"]
            sim.pvec[sim.pnames.index("y_m")] = -l * np.sum(np.cos(np.array(sim.q)[:2]))
            sim.set_constraints(["mid_y", "tip_y"])      # no program: asked of the workers
            assert bc.started and len(bc.worker_pids()) == 2
            assert sim.compiled_mode.path == "symbolic", bc.errors   # offline: waited for
            sim.advance(0.15)
            assert not bc.errors
            runs[lazy] = np.concatenate((sim.q, sim.u))
        finally:
            bc.close()
    np.testing.assert_array_equal(runs[True], runs[False])
