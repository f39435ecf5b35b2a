"""The FMU's C loader is memory-safe and per-instance (issue 33): hostile resource paths, bad
fmi2Instantiate arguments, NULL arguments, FMU-state misuse, serialization buffers, status
and log messages of two instances stepped from two threads, and memory per instance and per
state.  The hostile C calls run in a subprocess (tests/loader_calls.py) so that a crash fails
these tests, not the session."""

import ctypes
import gc
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Error, fmi2LastSuccessfulTime

import masters
from fmu_src.host.master import FmuRunner

HERE = Path(__file__).resolve().parent
OK, ERROR, FATAL = 0, 3, 4
HOSTILE = "Müller 漢字 100% #2 a%20b"      # umlaut, CJK, '%', '#', spaces, a literal "%20"


@pytest.fixture(scope="module")
def calls(disk_fmu):
    """{case: result} of tests/loader_calls.py on disk_ramp; a case that crashed the process
    has only its "started" line."""
    proc = subprocess.run([sys.executable, str(HERE / "loader_calls.py"), disk_fmu],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            out.setdefault(row.pop("case"), {}).update(row)
    out["_process"] = {"returncode": proc.returncode, "stderr": proc.stderr[-2000:]}
    return out


def case(calls, name):
    assert name in calls and calls[name].keys() - {"started"}, \
        f"{name}: the process died there ({calls['_process']})"
    return calls[name]


# ------------------------------------------------------------------ fmi2Instantiate
@pytest.mark.parametrize("label, words", [
    ("http", "not a file: URI"), ("no uri", "no fmuResourceLocation"),
    ("empty uri", "no fmuResourceLocation"), ("missing folder", "does not exist"),
    ("not the resources", "no slavemodule.txt"), ("bad escape", "hexadecimal"),
    ("encoded NUL", "hexadecimal"), ("other host", "names a host (example.com)"),
    ("no path", "no absolute path"), ("null name", "instanceName is NULL")])
def test_bad_instantiation_returns_null_with_a_message(calls, label, words):
    r = case(calls, f"instantiate: {label}")
    assert r["null"]
    assert [m[:2] for m in r["messages"]] == [[ERROR, "logStatusError"]]
    assert words in r["messages"][0][2]


def test_null_callbacks_and_localhost_uri(calls):
    assert case(calls, "instantiate: null callbacks") == {"started": True, "null": True,
                                                          "messages": []}
    assert case(calls, "instantiate: file://localhost/")["null"] is False


@pytest.mark.skipif(not masters.MASTERS.is_dir(),
                    reason=f"the C/C++ masters are not at {masters.MASTERS}")
def test_hostile_folder_with_the_compliance_checker(disk_fmu, tmp_path):
    """fmuCheck -t extracts into a folder with every kind of character a URI encodes; before,
    fmi2Instantiate crashed (pythonfmu decoded only %20)."""
    folder = tmp_path / HOSTILE
    folder.mkdir()
    proc, out = masters.simulate("fmucheck", disk_fmu, tmp_path, stop=0.1, step=0.01)
    assert proc.returncode == 0 and masters.last_row(out)["q1"] > 0      # the plain folder
    plain = masters.last_row(out)
    argv, extra = masters.command("fmucheck", disk_fmu, str(tmp_path / "h.csv"), 0.1, 0.01)
    proc = subprocess.run(argv[:2] + ["-t", str(folder)] + argv[2:], cwd=tmp_path,
                          env=masters.env(**extra), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert masters.last_row(tmp_path / "h.csv") == plain


def test_hostile_folders_in_fmpy(disk_fmu, tmp_path):
    """The same FMU extracted under hostile names steps exactly as under a plain one; a literal
    "%20" in a folder name is reached through a temporary link, removed at fmi2FreeInstance."""
    md = read_model_description(disk_fmu)
    tmp = Path(os.environ.get("TMPDIR") or "/tmp")
    links = set(tmp.glob("embed-fmu-*"))
    rows = []
    for name in ("plain", HOSTILE, "a%20b", "x%2541"):
        d = tmp_path / name / "fmu"
        extract(disk_fmu, unzipdir=str(d))
        r = FmuRunner(disk_fmu, unzip_dir=str(d), md=md, instance=name)
        try:
            for _ in range(20):
                r.step(0.005)
            rows.append(r.outputs())
        finally:
            r.close()
    assert rows[1:] == rows[:1] * 3
    assert set(tmp.glob("embed-fmu-*")) == links


# ------------------------------------------------------------------ NULL arguments
NULL_CASES = ["GetReal vr NULL", "GetReal value NULL", "SetReal vr NULL", "SetReal value NULL",
              "GetInteger value NULL", "SetBoolean value NULL", "GetString value NULL",
              "SetString value NULL", "SetString a NULL string", "GetFMUstate NULL",
              "SetFMUstate NULL", "FreeFMUstate NULL", "SerializedFMUstateSize NULL",
              "SerializeFMUstate NULL", "DeSerializeFMUstate NULL bytes",
              "DeSerializeFMUstate NULL state"]


@pytest.mark.parametrize("label", NULL_CASES)
def test_null_argument_is_an_error_with_a_message(calls, label):
    r = case(calls, f"null: {label}")
    assert r["status"] == ERROR
    assert len(r["messages"]) == 1 and r["messages"][0][:2] == [ERROR, "logStatusError"]


def test_instance_steps_on_after_the_null_arguments(calls):
    assert case(calls, "null: GetReal nothing (n = 0, NULL arrays)")["status"] == OK
    assert case(calls, "null: then a step")["status"] == OK
    assert case(calls, "done")["fatal"] == []
    assert calls["_process"]["returncode"] == 0, calls["_process"]


# ------------------------------------------------------------------ FMU states
def test_free_sets_the_handle_to_null_and_a_freed_handle_is_refused(calls):
    r = case(calls, "free: twice")
    assert (r["get"], r["first"], r["handle_after"], r["second"]) == (OK, OK, None, OK)
    assert (r["copy_free"], r["copy_set"], r["copy_serialize"]) == (ERROR, ERROR, ERROR)
    assert r["copy_after"] is not None            # a refused free leaves the variable alone
    assert [m[0] for m in r["messages"]] == [ERROR] * 3
    assert all("not a state of this instance" in m[2] for m in r["messages"])


def test_serialize_buffers_are_checked(calls):
    r = case(calls, "serialize: buffers")
    assert r["size"] == OK and r["need"] > 100
    assert r["small"] == ERROR and r["small_untouched"]
    assert f"the state needs {r['need']}" in r["small_messages"][0][2]
    assert r["exact"] == OK and r["big"] == OK
    assert r["big_same"] and r["big_tail_untouched"]


@pytest.mark.parametrize("label", ["garbage", "truncated", "not JSON"])
def test_deserializing_what_is_not_a_state_is_refused(calls, label):
    r = case(calls, f"deserialize: {label}")
    assert r["status"] == ERROR and r["handle"] is None
    assert [m[:2] for m in r["messages"]] == [[ERROR, "logStatusError"]]
    assert "corrupted" in r["messages"][0][2]


def test_instance_lives_after_refused_states(calls):
    assert case(calls, "deserialize: then a step")["status"] == OK
    assert case(calls, "deserialize: the good blob") == {"status": OK, "set": OK,
                                                         "restored": True, "freed": OK}


def test_a_reused_handle_takes_the_new_state(calls):
    assert case(calls, "reuse") == {"status": OK, "same_handle": True, "set": OK,
                                    "restored": True}


def test_a_state_of_another_instance_is_refused(calls):
    r = case(calls, "foreign state")
    assert (r["set"], r["free"]) == (ERROR, ERROR) and len(r["messages"]) == 2


# ------------------------------------------------------------------ status, time, logs
def test_refused_setup_experiment_keeps_the_last_successful_time(disk_fmu):
    r = FmuRunner(disk_fmu)
    try:
        for _ in range(5):
            r.step(0.01)
        with pytest.raises(FMICallException) as info:
            r.fmu.setupExperiment(startTime=7.0)        # illegal after initialization
        assert info.value.status == fmi2Error
        assert r.fmu.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(0.05)
    finally:
        r.close()


def test_refused_state_is_logged_for_its_own_instance(disk_fmu):
    """pythonfmu deserializes at class level (no instance to log with); the loader logs for
    the instance whose call it is, not for the one instantiated last."""
    a = FmuRunner(disk_fmu, instance="a")
    b = FmuRunner(disk_fmu, instance="b")
    try:
        na, nb = len(a.messages), len(b.messages)
        with pytest.raises(FMICallException):
            a.fmu.deSerializeFMUstate(b"\xff not a state")
        assert [s for s, _ in a.messages[na:]] == [ERROR]
        assert "corrupted" in a.messages[-1][1]
        assert b.messages[nb:] == []
    finally:
        a.close()
        b.close()


def _run(r, steps, bad, results, key):
    """Step with F_ext varying and a refused call every 10 steps, recording every status."""
    statuses = []
    for k in range(steps):
        try:
            r.set(F_ext=0.1 * (k % 7))
            statuses.append(OK)
        except FMICallException as exc:
            statuses.append(exc.status)
        if k % 10 == 3:
            try:
                r.set(**{bad: float("nan")})
                statuses.append("accepted")
            except FMICallException as exc:
                statuses.append(-exc.status)
            try:
                r.fmu.deSerializeFMUstate(b"not a state of " + key.encode())
                statuses.append("accepted")
            except FMICallException as exc:
                statuses.append(-exc.status)
        statuses.append(r.step(0.002))
    results[key] = (statuses, r.outputs())


def test_two_instances_stepped_from_two_threads(disk_fmu):
    """Each thread's good calls answer fmi2OK and its refused calls fmi2Error, whatever the
    other thread does; each logger gets only its own instance's messages; both end exactly
    where a run alone ends."""
    steps = 150
    alone = {}
    r = FmuRunner(disk_fmu, instance="alone")
    try:
        _run(r, steps, "F_ext", alone, "alone")
    finally:
        r.close()
    a, b = FmuRunner(disk_fmu, instance="a"), FmuRunner(disk_fmu, instance="b")
    try:
        na, nb = len(a.messages), len(b.messages)
        results = {}
        threads = [threading.Thread(target=_run, args=(a, steps, "F_ext", results, "a")),
                   threading.Thread(target=_run, args=(b, steps, "T_ext", results, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        expected = alone["alone"][0]
        assert results["a"][0] == expected and results["b"][0] == expected
        assert results["a"][1] == alone["alone"][1] == results["b"][1]
        refusals = sum(1 for k in range(steps) if k % 10 == 3)
        for r, own, other in ((a, "F_ext", "T_ext"), (b, "T_ext", "F_ext")):
            texts = [t for _, t in r.messages[na if r is a else nb:]]
            assert len(texts) == 2 * refusals
            assert sum(own in t for t in texts) == refusals
            assert sum("corrupted" in t for t in texts) == refusals
            assert not any(other in t for t in texts)
    finally:
        a.close()
        b.close()


# ------------------------------------------------------------------ memory
def _rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


def test_no_leak_per_instance_or_state(disk_fmu, tmp_path):
    """RSS over 300 fmi2Instantiate/fmi2FreeInstance cycles and 1000 cycles of each state
    call, after a warm-up.  Bounds are generous (pythonfmu's fmi2Instantiate leaks about
    2.6 kB of Python objects itself); a reused GetFMUstate handle leaked its old state (2 kB
    per call on disk_ramp) before."""
    sys.path.insert(0, str(HERE))
    from loader_calls import CO_SIMULATION, Binary, callbacks
    md = read_model_description(disk_fmu)
    root = Path(extract(disk_fmu, unzipdir=str(tmp_path / "fmu")))
    lib = Binary(root / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so")
    cb = callbacks(7)
    uri = (root / "resources").as_uri().encode()

    def instance():
        c = lib.Instantiate(b"leak", CO_SIMULATION, md.guid.encode(), uri,
                            ctypes.addressof(cb), 0, 0)
        assert c
        return c

    def grows(cycle, n, warm=30):
        for _ in range(warm):
            cycle()
        gc.collect()
        before = _rss()
        for _ in range(n):
            cycle()
        gc.collect()
        return _rss() - before

    assert grows(lambda: lib.FreeInstance(instance()), 300) < 3_000_000
    c = instance()
    assert lib.SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) == OK
    assert lib.EnterInitializationMode(c) == OK and lib.ExitInitializationMode(c) == OK
    assert lib.DoStep(c, 0.0, 0.01, 1) == OK
    s = ctypes.c_void_p()

    def get_free():
        assert lib.GetFMUstate(c, ctypes.byref(s)) == OK
        assert lib.FreeFMUstate(c, ctypes.byref(s)) == OK

    def reuse():
        assert lib.GetFMUstate(c, ctypes.byref(s)) == OK

    def round_trip():
        n = ctypes.c_size_t()
        assert lib.SerializedFMUstateSize(c, s, ctypes.byref(n)) == OK
        buf = ctypes.create_string_buffer(n.value)
        assert lib.SerializeFMUstate(c, s, buf, n.value) == OK
        d = ctypes.c_void_p()
        assert lib.DeSerializeFMUstate(c, buf, n.value, ctypes.byref(d)) == OK
        assert lib.FreeFMUstate(c, ctypes.byref(d)) == OK

    try:
        assert grows(get_free, 1000) < 500_000
        assert grows(reuse, 1000) < 500_000
        assert grows(round_trip, 1000) < 500_000
    finally:
        lib.FreeInstance(c)
        shutil.rmtree(root, ignore_errors=True)
