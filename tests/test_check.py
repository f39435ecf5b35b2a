"""Checked before it ships, and failures that never look like success (issue 13).

A small correct model of a user's (``floor_model``: a particle bouncing on a floor, public API
only) checks clean and moves as the analytic free fall and Newton's restitution say; each
deliberate mistake a model author makes is caught by ``embed.check.check.check_scenario`` with a
message naming the offending item; every bundled scenario checks with no error (the project's
smoke test over its scenarios).  At run time a reset map's mistake is a ModelDefinitionError
naming mode and guard, with the last good state kept; in a built FMU it is fmi2Error, logged
under logStatusError even with logging off, and every later step refuses too.  A refused
parameter value fails initialization instead of running on the default.
"""

import math
import shutil
from ctypes import byref
from pathlib import Path

import numpy as np
import pytest
from fmpy import calloc, extract, free, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2Error,
                       fmi2LastSuccessfulTime)
from fmpy.logging import addLoggerProxy

import floor_model
from embed import ModelDefinitionError
from embed.check.check import Finding, check_scenario
from fmu_src.host.master import FmuRunner

ROOT = Path(__file__).resolve().parents[1]
G, H0, E = 9.81, 1.0, 0.5          # floor_model's defaults: g, y_start, e


def findings(mistake="", params=None):
    return check_scenario(floor_model.build(mistake), params)


def errors(found):
    return [f for f in found if f.level == "error"]


# --------------------------------------------------------------------- the correct model
def test_the_correct_model_checks_clean():
    assert findings() == []


def test_the_correct_model_falls_and_bounces_as_newton_restitution_says():
    """Free fall from H0: the first impact at sqrt(2 H0 / g) with v = -g t; Newton's law
    v+ = -e v-; each flight between impacts lasts 2 v+ / g (independent: kinematics)."""
    sim = floor_model.build().simulator()
    sim.advance(3.0)
    impacts = [e for e in sim.events if e[1] == "touch"]
    t1 = math.sqrt(2 * H0 / G)
    assert impacts[0][0] == pytest.approx(t1, abs=1e-9)
    v = G * t1
    t_expected = t1
    for t_event, *_ in impacts[1:]:
        v *= E
        t_expected += 2 * v / G
        assert t_event == pytest.approx(t_expected, abs=1e-8)
    assert E * v < 0.5 <= v               # the last rebound is slower than v_rest: at rest
    assert sim.mode_number == floor_model.RESTING
    assert sim.outputs_now()["N"] == pytest.approx(G)       # lambda_floor = m g
    sim.set_inputs({"F_lift": 2 * G})                        # lifted: N = m g - F < 0
    sim.advance(3.5)
    assert sim.mode_number == floor_model.FLIGHT
    assert sim.outputs_now()["y"] == pytest.approx(0.5 * G * 0.5 ** 2, abs=1e-9)


# ----------------------------------------------------------------- each mistake caught
# mistake -> (level, words in the item, words in the message)
CAUGHT = {
    "guard_typo": ("error", ("guard 'touch'", "'flight'"), ("yy",)),
    "undefined_mode": ("error", ("guard 'touch'", "'flight'"), ("mode 7", "does not exist")),
    "unknown_constraint": ("error", ("constraint 'flor'",), ("mode 2 'resting'", "'flor'")),
    "undeclared_discrete": ("error", ("guard 'touch'",), ("'bounce'", "declare")),
    "missing_parameter": ("error", ("parameter 'v_rest'",), ("no value",)),
    "redundant_pair": ("error", ("'floor'", "'floor_twice'"), ("redundant", "rank of B 1 < 2")),
    "redundant_triple": ("error", ("'floor'", "'wall'", "'diagonal'"), ("rank of B 2 < 3",)),
    "no_way_out": ("warning", ("mode 2 'resting'",), ("no guard", "never left")),
    "output_typo": ("error", ("output 'energy'",), ("mm",)),
    "fmu_output_typo": ("error", ("FMU output 'enrgy'",), ("neither",)),
    "no_branch": ("error", ("guard 'lift'", "mode 2 'resting'"),
                  ("AssertionError", "no transition for 'lift'")),
    "law_typo": ("error", ("law of F_f", "'flight'"), ("mu_typo",)),
    "unknown_multiplier": ("error", ("output 'N'",), ("lambda_flor",)),
    "initial_undefined_mode": ("error", ("initial",), ("initial reset map", "mode 9")),
    "enabled_typo": ("error", ("guard 'touch'",), ("enabled()", "'bounce'")),
    "extra_output_typo": ("error", ("FMU output 'bounces'",), ("'bounce'", "not declared")),
    "transition_crash": ("error", ("guard 'touch'",), ("KeyError", "'bounce'")),
}


def test_every_mistake_of_the_model_is_tested():
    assert set(CAUGHT) == set(floor_model.MISTAKES)


@pytest.mark.parametrize("mistake", sorted(CAUGHT))
def test_each_mistake_is_caught_naming_the_item(mistake):
    level, item_words, message_words = CAUGHT[mistake]
    found = findings(mistake)
    assert all(isinstance(f, Finding) and f.level in ("error", "warning") for f in found)
    hits = [f for f in found if f.level == level and all(w in f.item for w in item_words)]
    assert hits, found
    assert any(all(w in f.message for w in message_words) for f in hits), hits
    if level == "warning":
        assert errors(found) == [], found


def test_parameter_values_given_to_the_check_are_checked():
    found = findings(params={"e": 1.5, "m": -1.0, "g": -9.81, "k_typo": 1.0})
    assert {f.item for f in errors(found)} == {
        "parameter 'e'", "parameter 'm'", "parameter 'g'", "parameter 'k_typo'"}
    for words in ("e = 1.5 lies outside [0.0, 1.0]", "m = -1.0 must be positive",
                  "g = -9.81 must not be negative", "names 'k_typo'"):
        assert any(words in f.message for f in found), (words, found)


# -------------------------------------------------------- every bundled scenario, clean
def _bundled():
    import scenarios
    return scenarios.NAMES


@pytest.mark.parametrize("name", _bundled())
def test_every_bundled_scenario_checks_clean(name):
    """The smoke test over every scenario (disk_fence included: about 0.5 s to build and check
    on these machines, every mode embedded and compiled on the symbolic path): no error and
    no warning either (issue 29: a warning on the project's own scenarios is a defect of the
    scenario or of the checker; pendulum_chain's latched mode is entered at the nearest
    configuration with the tip on the latch, disk_fence's arc through its check entry)."""
    import scenarios
    sc = scenarios.load(name).build()
    assert check_scenario(sc) == []


def test_a_mode_is_entered_at_the_nearest_configuration_on_its_constraints():
    """The configuration the checker enters pendulum_chain's latched mode at: the tip at the
    latch (x_p, -d), by the links' own kinematics (x = sum l sin q_i, y = -sum l cos q_i),
    from a start with the tip a good part of a metre away from it."""
    import scenarios
    sc = scenarios.load("pendulum_chain").build(4)
    sim = sc.simulator(None, embedding="symbolic")
    l, d, x_p = sim.param("l"), sim.param("d"), sim.param("x_p")
    assert abs(l * np.sum(np.sin(sim.q)) - x_p) > 0.3
    q = sim.nearest_configuration(("tip_x", "tip_y"))
    assert l * np.sum(np.sin(q)) == pytest.approx(x_p, abs=1e-12)
    assert -l * np.sum(np.cos(q)) == pytest.approx(-d, abs=1e-12)


def test_a_finding_names_its_mode_once():
    """The item names the mode; the message does not repeat it (issue 29)."""
    found = findings("no_way_out")
    assert [f.item for f in found] == ["mode 2 'resting'"]
    assert "mode 2" not in found[0].message


# --------------------------------------------------------------- run time, engine level
@pytest.mark.parametrize("mistake, words", [
    ("no_branch", ("mode 2 'resting'", "guard 'lift'", "AssertionError")),
    ("undefined_mode", ("mode 1 'flight'", "guard 'touch'", "mode 7")),
    ("undeclared_discrete", ("mode 1 'flight'", "guard 'touch'", "'bounce'")),
    ("transition_crash", ("mode 1 'flight'", "guard 'touch'", "KeyError")),
])
def test_a_reset_map_mistake_is_a_model_definition_error_naming_mode_and_guard(mistake, words):
    """Run without the check: the event's reset map fails as a ModelDefinitionError (never an
    AssertionError or a bare KeyError) and the simulator keeps its last good state."""
    sim = floor_model.build(mistake).simulator()
    schedule = [(3.0, 0.0), (3.5, 2 * G)]          # rest, then a lift
    with pytest.raises(ModelDefinitionError) as info:
        for t_end, lift in schedule:
            before = (sim.t, sim.mode, np.array(sim.x), sim.event_count)
            sim.set_inputs({"F_lift": lift})
            sim.advance(t_end)
    for w in words:
        assert w in str(info.value), info.value
    assert sim.t == before[0] and sim.mode == before[1] and sim.event_count == before[3]
    assert np.array_equal(sim.x, before[2])


def test_an_initial_jump_to_an_undefined_mode_is_a_model_definition_error():
    with pytest.raises(ModelDefinitionError, match="initial reset map.*mode 9"):
        floor_model.build("initial_undefined_mode").simulator()


# ------------------------------------------------------------------- the built FMUs
def _build_floor(out: Path, mistake: str) -> str:
    """floor_model built into an FMU from its own file, as a user's model (fmu_src.builder.build,
    build option ``mistake``; the builder does not run the checker: ``embed-fmu build`` does)."""
    from fmu_src.builder.build import build
    return str(build(str(ROOT / "tests" / "floor_model.py"), out, {"mistake": mistake}))


@pytest.fixture(scope="module")
def floor_fmus(tmp_path_factory):
    """The correct model's FMU and two broken ones, by mistake."""
    return {m: _build_floor(tmp_path_factory.mktemp(m or "correct"), m)
            for m in ("", "no_branch", "initial_undefined_mode")}


def refused(call, *args, status=fmi2Error):
    with pytest.raises(FMICallException) as info:
        call(*args)
    assert info.value.status == status, f"{call} returned {info.value.status}"


def rest_then_lift(r):
    """Step the floor FMU 3 s at rest on the floor, then lift it (F_lift = 2 m g)."""
    for _ in range(300):
        assert r.step(0.01) == 0
    assert r.get("mode", "status") == {"mode": floor_model.RESTING, "status": 0}
    r.set(F_lift=2 * G)


def test_the_correct_floor_fmu_steps_through_its_events(floor_fmus):
    r = FmuRunner(floor_fmus[""])
    try:
        for _ in range(50):                 # the first impact at 0.4515 s, the next at 0.90 s
            r.step(0.01)
        o = r.get("last_event_time", "event_count", "vy")
        assert o["event_count"] == 1
        assert o["last_event_time"] == pytest.approx(math.sqrt(2 * H0 / G), abs=1e-9)
        rest_then_lift(r)
        assert r.step(0.01) == 0 and r.get("mode", "status") == {"mode": 1, "status": 0}
    finally:
        r.close()


def test_a_model_definition_error_at_an_event_is_an_error_that_stays(floor_fmus):
    r = FmuRunner(floor_fmus["no_branch"])
    try:
        rest_then_lift(r)
        t_good, kept = r.t, r.get("y", "vx", "mode", "event_count")
        refused(r.fmu.doStep, r.t, 0.01)
        (status, text), category = r.messages[-1], r.categories[-1]
        assert status == fmi2Error and category == "logStatusError", (status, category)
        for w in ("ModelDefinitionError", "mode 2 'resting'", "guard 'lift'"):
            assert w in text, text
        assert r.get("status")["status"] == 2
        assert r.get("y", "vx", "mode", "event_count") == kept      # the last good state
        assert r.fmu.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(t_good)
        r.set(F_lift=0.0)                   # whatever the master does, the model stays wrong
        for _ in range(3):
            refused(r.fmu.doStep, r.t, 0.01)
            assert r.get("status")["status"] == 2
            assert "guard 'lift'" in r.messages[-1][1] and r.categories[-1] == "logStatusError"
        r.fmu.reset()                       # starts over, and meets the mistake again
        r.fmu.setupExperiment(startTime=0.0)
        r.fmu.enterInitializationMode()
        r.fmu.exitInitializationMode()
        r.t = 0.0
        assert r.get("status")["status"] == 0 and r.step(0.01) == 0
    finally:
        r.close()


class QuietInstance:
    """An FMU instantiated with loggingOn=False and a logger callback of its own (fmpy)."""

    def __init__(self, path):
        md = read_model_description(path)
        self.dir = extract(path)
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.messages = []

        @fmi2CallbackLoggerTYPE
        def logger(env, name, status, category, message):
            self.messages.append((status, category.decode(), message.decode()))

        self._logger = logger
        cb = fmi2CallbackFunctions()
        cb.logger = logger
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(byref(cb))       # formats the message of the variadic logger call
        self._cb = cb
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=self.dir,
                             modelIdentifier=md.coSimulation.modelIdentifier,
                             instanceName="quiet")
        self.fmu.instantiate(loggingOn=False, callbacks=cb)

    def close(self):
        self.fmu.freeInstance()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_errors_reach_the_logger_with_their_category_when_logging_is_off(floor_fmus):
    q = QuietInstance(floor_fmus["no_branch"])
    try:
        q.fmu.setupExperiment(startTime=0.0)
        q.fmu.enterInitializationMode()
        q.fmu.exitInitializationMode()
        t = 0.0
        for _ in range(300):
            q.fmu.doStep(t, 0.01)
            t += 0.01
        assert q.messages == []             # nothing below a warning with logging off
        q.fmu.setReal([q.vr["F_lift"]], [2 * G])
        refused(q.fmu.doStep, t, 0.01)
        assert any(status == fmi2Error and category == "logStatusError"
                   and "guard 'lift'" in text for status, category, text in q.messages), q.messages
        q.fmu.setDebugLogging(False, [])    # turned off explicitly as well
        n = len(q.messages)
        refused(q.fmu.doStep, t, 0.01)
        assert [c for _, c, _ in q.messages[n:]] == ["logStatusError"]
    finally:
        q.close()


def test_an_initialization_that_fails_is_an_error_with_its_message(floor_fmus):
    r = FmuRunner(floor_fmus["initial_undefined_mode"], initialize=False)
    try:
        r.fmu.setupExperiment(startTime=0.0)
        r.fmu.enterInitializationMode()
        refused(r.fmu.exitInitializationMode)
        (status, text), category = r.messages[-1], r.categories[-1]
        assert status == fmi2Error and category == "logStatusError"
        assert "initial reset map" in text and "mode 9" in text, text
        assert r.get("status")["status"] == 2
        refused(r.fmu.doStep, 0.0, 0.01)    # still in initialization mode
    finally:
        r.close()


def test_a_refused_parameter_value_fails_initialization(floor_fmus):
    r = FmuRunner(floor_fmus[""], initialize=False)
    try:
        r.fmu.setupExperiment(startTime=0.0)
        refused(r.fmu.setReal, [r.vr("e")], [1.5])          # before initialization mode
        r.fmu.enterInitializationMode()
        refused(r.fmu.setReal, [r.vr("m")], [-1.0])
        assert r.get("status")["status"] == 9
        refused(r.fmu.exitInitializationMode)               # not the defaults in their place
        text = r.messages[-1][1]
        assert "e = 1.5" in text and "m = -1.0" in text, text
        assert r.get("status")["status"] == 9
        r.set(e=0.8)
        refused(r.fmu.exitInitializationMode)               # m still refused
        assert "m = -1.0" in r.messages[-1][1] and "e = 1.5" not in r.messages[-1][1]
        r.set(m=2.0)
        r.fmu.exitInitializationMode()
        assert r.get("status", "e")["status"] == 0 and r.get("e")["e"] == 0.8
        for _ in range(50):
            r.step(0.01)
        assert r.get("event_count")["event_count"] == 1
    finally:
        r.close()
