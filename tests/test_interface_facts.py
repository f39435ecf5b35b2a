"""One source for each interface fact (issue 28): the FMU's reserved names are the checker's,
a value is checked by its variable alone (its range; ``positive``/``nonnegative`` folded into
it), and every output is read through ``Scenario.reader``."""

from __future__ import annotations

import math

import pytest

import scenarios
from embed import Var
from embed.base.reserved import (FMU_VARIABLES, FORMULATION_OPTIONS, RELIABILITY_OPTIONS,
                                 RUN_OPTIONS)
from embed.modes.formulations import Formulation
from fmu_src.runtime import slave as slave_mod
from fmu_src.runtime.status import INPUT_REJECTED


@pytest.fixture(scope="module")
def disk_ramp():
    return scenarios.load("disk_ramp").build()


@pytest.fixture(scope="module")
def instance():
    class DiskRamp(slave_mod.ScenarioSlave):
        scenario_name = "disk_ramp"
    return DiskRamp(instance_name="facts")


def test_the_checker_reserves_exactly_the_slaves_own_variables(disk_ramp, instance):
    mine = {v.name for v in disk_ramp.parameters + disk_ramp.inputs + disk_ramp.outputs}
    own = [v.name for v in instance.vars.values() if v.name not in mine]
    assert own == list(FMU_VARIABLES)          # the same names, in the slave's order
    assert [row[0] for row in slave_mod.COMMON] == list(RUN_OPTIONS)
    # the formulation's options are Formulation's fields (its name is ``formulation``)
    fields = [f for f in Formulation.FIELDS if f != "name"]
    assert list(FORMULATION_OPTIONS) == ["formulation"] + fields
    assert [row[0] for row in slave_mod.FORMULATION] == list(FORMULATION_OPTIONS)
    assert [row[0] for row in slave_mod.RELIABILITY] == list(RELIABILITY_OPTIONS)


def test_positive_and_nonnegative_are_the_variables_ranges(disk_ramp):
    v = {p.name: p for p in disk_ramp.parameters}
    assert (v["m"].min, v["m"].min_excluded) == (0.0, True)      # positive
    assert (v["mu"].min, v["mu"].min_excluded) == (0.0, False)   # nonnegative
    assert v["phi"].min is None and v["L"].min is None
    assert v["m"].problem(0.0) == "m = 0.0 must be positive"
    assert v["m"].problem(5e-324) is None                        # the smallest positive double
    assert v["mu"].problem(0.0) is None
    assert v["mu"].problem(-1e-300) == "mu = -1e-300 must not be negative"
    assert v["J"].problem(math.inf) == "J = inf is not finite"
    assert v["r"].problem("a") == "r = 'a' is not a number"


def test_a_range_of_its_own_is_kept_when_the_sign_says_less():
    e = Var("e", 0.5, min=0.0, max=1.0)
    assert e.with_sign(nonnegative=True) is e
    assert e.with_sign(positive=True) == Var("e", 0.5, min=0.0, max=1.0, min_excluded=True)
    assert Var("k", 1.0, min=2.0).with_sign(positive=True).min == 2.0
    assert Var("k", 1.0, min=-1.0, max=3.0).with_sign(nonnegative=True) == \
        Var("k", 1.0, min=0.0, max=3.0)
    assert e.problem(1.5) == "e = 1.5 lies outside [0.0, 1.0]"
    assert Var("k", 1.0, min=2.0, min_excluded=True).problem(2.0) == "k = 2.0 lies outside (2.0, None]"
    s = Var("solver", "rk4", type="String", choices=("rk4", "adaptive"))
    assert s.problem(" Adaptive ") is None and s.convert(" Adaptive ") == "adaptive"
    assert "is not one of" in s.problem("euler")


def test_the_fmu_refuses_what_the_variable_refuses(instance):
    """The slave's setter asks the variable: the same words, nothing applied."""
    vr = {v.name: v.value_reference for v in instance.vars.values()}
    instance.enter_initialization_mode()
    for name, value in (("m", -2.0), ("mu", -0.1), ("h_max", 1e-12), ("solver", "euler")):
        spec = instance.variables.specs[vr[name]][0]
        before = getattr(instance, name)
        setter = instance.set_string if spec.type == "String" else instance.set_real
        setter([vr[name]], [value])
        assert getattr(instance, name) == before
        assert instance.status == INPUT_REJECTED
    instance.set_real([vr["m"]], [2.0])
    assert instance.m == 2.0


def test_every_output_is_read_through_the_scenarios_reader(disk_ramp, instance):
    """The FMU's getters give what ``Scenario.reader`` gives on the instance's simulator,
    for outputs of every kind."""
    sim = instance.sim
    kinds = {disk_ramp.source(v.name)[0] for v in disk_ramp.outputs}
    assert {"mon", "attr"} <= kinds
    for v in disk_ramp.outputs:
        getter = next(x.getter for x in instance.vars.values() if x.name == v.name)
        assert getter() == disk_ramp.reader(v.name)(sim), v.name
    assert disk_ramp.observe(sim) == {v.name: disk_ramp.reader(v.name)(sim)
                                      for v in disk_ramp.outputs}


def test_a_variable_may_not_hide_the_slaves_own_names(disk_ramp):
    """A parameter is an attribute of the slave: one named ``log`` would hide the FMI logger
    (and ``sim`` the simulator); the slave refuses it by name instead (the build stops)."""
    import copy
    from embed import ModelDefinitionError
    from fmu_src.runtime import instances
    for name in ("log", "sim", "variables"):
        sc = copy.copy(disk_ramp)
        sc.parameters = [*disk_ramp.parameters, Var(name, 1.0, "a badly named parameter")]
        instances._SCENARIOS[(f"hides_{name}", ())] = sc

        class Hides(slave_mod.ScenarioSlave):
            scenario_name = f"hides_{name}"
        with pytest.raises(ModelDefinitionError, match=f"parameter '{name}' would hide"):
            Hides(instance_name="hides")
        del instances._SCENARIOS[(f"hides_{name}", ())]
