"""Simulator.set_state checks a state whole before applying anything (issue 10).

A state of ``get_state`` round-trips (the run replays bit for bit).  Each corruption below
(a field missing, of the wrong type or length, non-finite, a mode or constraint the
automaton lacks, a dependent-speed choice that is not one, a state of another model)
raises StateError naming the field, and the simulator is left exactly as it was: its
next steps are those of a twin that never saw the bad state.
"""

import copy
import math

import numpy as np
import pytest

from embed import EmbedError, InputError, StateError


def same(a, b):
    return (a.t == b.t and np.array_equal(a.x, b.x) and np.array_equal(a.mon, b.mon)
            and a.mode == b.mode and a.events == b.events and a.armed == b.armed
            and np.array_equal(a.pvec, b.pvec) and a.dep == b.dep and a.active == b.active)


def corrupt(s, field, value):
    s = copy.deepcopy(s)
    if value is KeyError:
        del s[field]
    else:
        s[field] = value(s[field]) if callable(value) else value
    return s


BELT_CASES = [
    ("t", KeyError), ("t", math.nan), ("t", math.inf), ("t", "0.5"), ("t", None),
    ("x", lambda x: x[:-1]), ("x", lambda x: np.append(x, 0.0)),
    ("x", lambda x: np.where(np.arange(len(x)) == 1, math.nan, x)), ("x", "abc"),
    ("mon", lambda m: m[:-2]), ("mon", lambda m: np.full(len(m), math.inf)),
    ("pvec", lambda p: p[:-1]), ("pvec", lambda p: p[:3]), ("pvec", lambda p: p * math.nan),
    ("pvec", lambda p: np.where(np.arange(len(p)) == len(p) - 1, p + 1.0, p)),
    ("mode", 7), ("mode", -1), ("mode", "1"), ("mode", 1.0), ("mode", True),
    ("discrete", lambda d: {**d, "bogus": 1.0}), ("discrete", lambda d: {**d, "s_dir": math.nan}),
    ("discrete", {}), ("active", ("on_belt",)), ("active", ("nonsense",)),
    ("dep", (0,)), ("armed", (1, 1)), ("armed", ()), ("armed", (5,)), ("armed", (0.5,)),
    ("enabled", (True, False)), ("enabled", ("yes",)),
    ("event_count", -1), ("event_count", 1.5), ("event_count", math.nan),
    ("last_event_time", math.inf), ("same_instant", -3),
    ("events", [(0.1, "strike", 1)]), ("events", [(math.nan, "strike", 1, 1)]), ("events", 5),
    ("integrator", None), ("integrator", {"t0": math.nan}),
    ("chart", ([[1.0]], [[1.0]])), ("kappa0", math.nan), ("kappa0", -1.0),
    ("counters", [0]), ("counters", [-1, 0]),
    ("impacts", [1, 0, [math.nan], 0.1]), ("impacts", [1, 0]), ("impacts", [1, 0, [], math.inf]),
]


@pytest.mark.parametrize("field, value", BELT_CASES,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(BELT_CASES)])
def test_a_bad_state_is_refused_naming_the_field_and_changes_nothing(belt, field, value):
    sim = belt.simulator()
    twin = belt.simulator()
    sim.advance(0.4)
    twin.advance(0.4)
    s = sim.get_state()
    assert sim.impact_count >= 1        # the state has impacts, discrete values, events
    with pytest.raises(StateError, match=f"'{field}") as exc:
        sim.set_state(corrupt(s, field, value))
    assert isinstance(exc.value, InputError) and isinstance(exc.value, EmbedError)
    assert same(sim, twin)
    sim.advance(0.6)
    twin.advance(0.6)
    assert same(sim, twin)


def test_a_good_state_round_trips_and_replays(belt):
    sim = belt.simulator()
    sim.advance(0.3)
    s = sim.get_state()
    sim.advance(0.7)
    end = sim.get_state()
    other = belt.simulator()
    other.set_state(s)
    other.advance(0.7)
    assert np.array_equal(other.x, end["x"]) and other.events == end["events"]


def test_a_state_of_another_model_is_refused(belt, crank):
    a = belt.simulator()
    b = crank.simulator()
    b.advance(0.5)
    twin = belt.simulator()
    with pytest.raises(StateError):
        a.set_state(b.get_state())
    assert same(a, twin)
    with pytest.raises(StateError):
        b.set_state(a.get_state())


@pytest.mark.parametrize("field, value", [
    ("dep", (0, 0)), ("dep", (1, 9)), ("dep", (1,)), ("dep", [True, 3]),
    ("active", ("slider3_link",)), ("chart", lambda c: (c[0][:1], c[1])),
    ("chart", lambda c: (np.full_like(c[0], math.nan), c[1])),
])
def test_slider_crank_dependent_speeds_and_chart_are_checked(crank, field, value):
    sim = crank.simulator()
    twin = crank.simulator()
    sim.advance(1.0)
    twin.advance(1.0)
    s = sim.get_state()
    assert s["chart"] is not None and len(s["dep"]) == 2
    with pytest.raises(StateError, match=f"'{field}'"):
        sim.set_state(corrupt(s, field, value))
    assert same(sim, twin)
    sim.advance(1.5)
    twin.advance(1.5)
    assert same(sim, twin)


def test_a_state_that_is_not_a_dict_is_refused(belt):
    sim = belt.simulator()
    for bad in (None, [], "state", 3):
        with pytest.raises(StateError):
            sim.set_state(bad)
