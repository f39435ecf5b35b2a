"""Every scenario replays its reference run (tests/data/reference_runs.json, written by
tests/reference_runs.py before a refactoring): bit for bit on the CPU model that wrote it
(LLVM compiles for the host), to 1e-9 relative on another."""

import json
import math

import pytest

import scenarios
from reference_runs import DATA, cpu, run

REFERENCE = json.loads(DATA.read_text())


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_scenario_replays_its_reference_run(name):
    ref = REFERENCE["runs"][name]
    now = run(name)
    assert now["outputs"] == ref["outputs"]
    if cpu() == ref.get("cpu", REFERENCE["cpu"]):     # a run added later names its CPU
        assert now["rows"] == ref["rows"]
        return
    for t, (a, b) in enumerate(zip(now["rows"], ref["rows"])):
        for name_, x, y in zip(ref["outputs"], a, b):
            assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9), (name_, t)
