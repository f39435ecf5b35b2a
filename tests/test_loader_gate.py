"""The loader thread gives way to a running doStep (issue 30, tails; embed.codegen.loader_thread):
its Python (placing a fence's object code with ``elf_load``) and a step's took turns at the GIL,
and the step's wall time took the loader's CPU time too.  A doStep counted (``step_begins``),
the loader waits at its next ``pause`` (between units of work and every few relocations of a
placement) until the step ends; a thread waiting for its work, or for a lock it holds paused,
lets it go on.  The placement with pauses computes the same bits."""

import threading
import time

import numpy as np
import pytest

from embed.codegen import elf_load, loader_thread, native
from embed.codegen.loader_thread import run_later, step_begins, step_ends


@pytest.fixture
def gate(monkeypatch):
    """The loader thread up, and its wait at a pause long enough that only the step's end or
    a waiter ends it within a test."""
    monkeypatch.setattr(loader_thread, "GATE_MAX", 60.0)
    run_later(lambda: None).result(timeout=30)
    counted = step_begins()
    assert counted
    yield
    step_ends(counted)


def test_placement_with_pauses_computes_the_same_bits():
    """A program with a hundred constants and sine calls (relocations to .rodata and to
    sin): placed by ``elf_load`` with a pause counted, the pause is called every
    PAUSE_EVERY symbols and relocations and the function's outputs are MCJIT's, bit for bit."""
    from embed.codegen.program import Program
    prog = Program(2)
    acc = prog.const(0.0)
    for k in range(100):
        term = prog.mul(prog.unary("sin", k % 2), prog.const(1.0 + k / 7.0))
        acc = prog.add(acc, term)
    fn = native.compile_program(prog, [acc], "a test program with pauses")
    calls = []
    placed = elf_load.load(bytes(fn.obj), native._resolve, lambda: calls.append(1))
    assert placed is not None
    assert len(calls) >= 2
    call = native._CFUNC(placed[fn.name])
    rng = np.random.default_rng(5)
    for x in rng.normal(size=(50, 2)) * 10.0:
        x = np.ascontiguousarray(x)
        want, got = np.empty(1), np.empty(1)
        fn.unsafe_real(x, want)
        call(x.ctypes.data, got.ctypes.data)
        assert want.tobytes() == got.tobytes()


def test_loader_waits_for_the_step_to_end(gate):
    """Work handed to the loader while a doStep runs starts only after it ends."""
    done = run_later(lambda: "ran")
    time.sleep(0.3)
    assert not done.done()
    step_ends(True)
    try:
        assert done.result(timeout=30) == "ran"
    finally:
        step_begins()       # (the fixture ends the step it began)


def test_a_waiter_lets_the_loader_go_on(gate):
    """A step that waits for the loader's work (an offline step waiting for an answer) gets
    it while it runs: ``Done.wait`` opens the gate."""
    done = run_later(lambda: "ran")
    assert done.result(timeout=30) == "ran"


def test_a_lock_the_paused_loader_holds_is_let_go(monkeypatch):
    """The loader paused inside a placement holds native's lock; a thread taking that lock
    (a step placing a function at its first call) gets it: told that it waits, the loader
    goes on and lets it go."""
    monkeypatch.setattr(loader_thread, "GATE_MAX", 60.0)
    inside, go = threading.Event(), threading.Event()

    def placement():
        with native._LOCK:
            inside.set()
            go.wait(30)
            loader_thread.pause()       # as elf_load's, the step below running
        return "placed"

    done = run_later(placement)
    assert inside.wait(30)
    counted = step_begins()
    try:
        go.set()
        time.sleep(0.3)                 # (the loader at its pause)
        assert not done.done()
        got = []
        taker = threading.Thread(target=lambda: got.append(native._LOCK.__enter__()
                                                           or native._LOCK.__exit__()))
        taker.start()
        taker.join(30)
        assert not taker.is_alive() and got == [None]
        assert done.result(timeout=30) == "placed"
    finally:
        step_ends(counted)
