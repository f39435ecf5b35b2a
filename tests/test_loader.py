"""The FMU's C loader (fmu_src/runtime/loader/fmi2_loader.c) as a master sees it: the GUID check, the
status override the Python slave uses, the status inquiries and fmi2CancelStep."""

import ctypes
import sys
from pathlib import Path

import pytest
from fmpy import read_model_description

from fmu_src.host.master import FmuRunner

OK, WARNING, DISCARD, ERROR = 0, 1, 2, 3
LAST_SUCCESSFUL_TIME, TERMINATED = 2, 3      # fmi2StatusKind


def loader_of(runner):
    """The FMU's binary, as the Python slave finds it (dlopen returns the loaded copy)."""
    md = runner.md
    return ctypes.CDLL(str(Path(runner.dir) / "binaries" / "linux64"
                           / f"{md.coSimulation.modelIdentifier}.so"))


def test_wrong_guid_fails_with_a_message(disk_fmu, monkeypatch):
    import fmu_src.host.master as master
    md = read_model_description(disk_fmu)
    md.guid = "{not-this-fmu}"
    monkeypatch.setattr(master, "read_model_description", lambda path: md)
    messages = []
    with pytest.raises(Exception, match="instantiate"):
        FmuRunner(disk_fmu, log=lambda status, text: messages.append((status, text)))
    assert any(s == ERROR and "GUID '{not-this-fmu}' does not match" in t for s, t in messages)


def test_status_override_and_inquiries(disk_fmu, monkeypatch):
    # every doStep must reach the patched Python do_step: the loader's fast path (which runs
    # steps with no event in C, tests/test_fast_step.py) off for this instance
    monkeypatch.setenv("EMBED_FAST_STEP", "0")
    r = FmuRunner(disk_fmu)
    try:
        lib = loader_of(r)
        lib.embed_fmi2_set_status.argtypes = [ctypes.c_int]
        lib.embed_fmi2_set_last_successful_time.argtypes = [ctypes.c_double]
        entry = (Path(r.dir) / "resources" / "slavemodule.txt").read_text().strip()
        cls = sys.modules[entry].disk_ramp        # this FMU's slave class, in its entry module
        plain = cls.do_step
        wanted = {}

        def do_step(self, t, h):
            ok = plain(self, t, h)
            if "status" in wanted:
                lib.embed_fmi2_set_status(wanted["status"])
                lib.embed_fmi2_set_last_successful_time(t + h / 2)
            return ok

        cls.do_step = do_step
        step = lib.fmi2DoStep
        step.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int]
        real_status = lib.fmi2GetRealStatus
        real_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
        c = r.fmu.component
        t = ctypes.c_double()
        try:
            assert step(c, 0.0, 0.01, 1) == OK
            assert real_status(c, LAST_SUCCESSFUL_TIME, ctypes.byref(t)) == OK and t.value == 0.01
            wanted["status"] = DISCARD
            assert step(c, 0.01, 0.01, 1) == DISCARD
            assert real_status(c, LAST_SUCCESSFUL_TIME, ctypes.byref(t)) == OK
            assert t.value == pytest.approx(0.015)
            wanted["status"] = WARNING
            assert step(c, 0.02, 0.01, 1) == WARNING
            del wanted["status"]
            assert step(c, 0.03, 0.01, 1) == OK             # the override lasts one call
        finally:
            cls.do_step = plain
        flag = ctypes.c_int(1)
        lib.fmi2GetBooleanStatus.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int)]
        assert lib.fmi2GetBooleanStatus(c, TERMINATED, ctypes.byref(flag)) == OK and flag.value == 0
        lib.fmi2CancelStep.argtypes = [ctypes.c_void_p]
        assert lib.fmi2CancelStep(c) == ERROR
        assert any("fmi2CancelStep" in text for _, text in r.messages)
    finally:
        r.close()
