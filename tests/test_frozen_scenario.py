"""The stepping path carries the model's symbols but never works with them (issue 30, docs/
design.md "Start-up"): a scenario whose every sympy and symengine object is replaced by an
inert stub (one that raises on any use but its name) steps 8 s through its events, impacts,
mode entries and re-partitions bit for bit as the live scenario, given the mode library the
live one compiled.  What is left between the FMU and a runtime without sympy is the
library's functions that do not pickle (symengine's "lambda" backend: ``ModeLibrary.
picklable``); a symbolic touch added on the stepping path fails here, naming it."""

import io
import pickle

import cloudpickle
import numpy as np
import pytest
import symengine
import sympy

import scenarios
from embed.interface.image import Placeholder
from embed.modes.library import SYMBOLIC, ModeLibrary


class SymbolTouched(AssertionError):
    pass


class Stub(Placeholder):
    """A sympy/symengine object's stand-in: the image's placeholder (its text, hashable by it),
    raising an AssertionError on any other use, which no engine code catches."""

    __slots__ = ()
    error = SymbolTouched


def symbolic(obj):
    return isinstance(obj, (sympy.Basic, symengine.Basic, sympy.MatrixBase)) or \
        type(obj).__module__.split(".")[0] in ("sympy", "symengine")


def frozen(sc):
    """A copy of scenario ``sc`` with every symbolic object a ``Stub``."""
    class Freezer(cloudpickle.Pickler):
        def persistent_id(self, obj):
            return ("sym", str(obj), type(obj).__name__) if symbolic(obj) else None

    class Thawer(pickle.Unpickler):
        def persistent_load(self, pid):
            return Stub(pid[1], pid[2])

    buf = io.BytesIO()
    Freezer(buf).dump(sc)
    return Thawer(io.BytesIO(buf.getvalue())).load()


def trace(sc, sim, stop=8.0):
    """Every 10 ms: time, mode, events, the state and monitors (their length follows the
    mode), and every output through the scenario's readers."""
    rows = []
    for k in range(int(round(stop / 0.01))):
        sim.advance((k + 1) * 0.01)
        rows.append(np.concatenate(([sim.t, sim.mode_number, sim.event_count], sim.x, sim.mon,
                                    [float(v) for v in sc.observe(sim).values()])))
    return rows


@pytest.mark.parametrize("name", ["disk_ramp", "pendulum_belt", "top", "ball_bowl"])
def test_a_scenario_without_symbols_steps_bit_for_bit(name):
    sc = scenarios.load(name).build()
    library = ModeLibrary.of(sc.automaton, sc.embedding)
    live = trace(sc, sc.simulator(embedding=sc.embedding))
    if name in ("disk_ramp", "pendulum_belt"):
        assert live[-1][2] > 2                         # impacts, entries, releases
    cold = frozen(sc)
    with pytest.raises(SymbolTouched):                 # the stubs are not inert by accident
        cold.automaton.model.q[0].free_symbols
    compiled = ModeLibrary()                 # the compiled objects, no symbolic cache
    for slot in ModeLibrary.__slots__:
        if slot not in SYMBOLIC + ("lock",):
            setattr(compiled, slot, getattr(library, slot))
    ModeLibrary.adopt(cold.automaton, cold.embedding, compiled)
    steps = trace(cold, cold.simulator(embedding=cold.embedding))
    assert len(steps) == len(live)
    for got, want in zip(steps, live):
        np.testing.assert_array_equal(got, want, err_msg=f"t = {want[0]}")
