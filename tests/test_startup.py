"""The formed scenario and its object code shipped in the FMU (issue 30, embed.base.shipped,
fmu_src.runtime.formed): an FMU that loads them steps bit for bit as one that forms and
compiles everything itself; a corrupt or foreign file is refused by its hash or key, said
in the log, and the FMU still runs with the same results.  Start-up figures:
benchmarks/bench_startup.py."""

import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from embed.base import shipped

ROOT = Path(__file__).resolve().parents[1]

RUN = r"""
import json, sys
import numpy as np
from fmpy import simulate_fmu
log = []
res = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), output_interval=0.01,
                   logger=lambda *a: log.append(a[-1].decode() if isinstance(a[-1], bytes)
                                                else str(a[-1])),
                   debug_logging=True)
np.save(sys.argv[3], res)
print(json.dumps(log))
"""


def run(fmu, tmp_path, stop=8.0):
    """(outputs every 10 ms, the FMU's log lines) of ``fmu`` run in a fresh process."""
    out = tmp_path / f"{Path(fmu).stem}_{len(list(tmp_path.iterdir()))}.npy"
    res = subprocess.run([sys.executable, "-c", RUN, str(fmu), str(stop), str(out)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return np.load(out), json.loads(res.stdout.strip().splitlines()[-1])


def rewritten(fmu, dest, change):
    """A copy of ``fmu`` at ``dest`` whose members ``change(name, data)`` rewrites (None
    drops the member)."""
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = change(item.filename, src.read(item))
            if data is not None:
                dst.writestr(item, data)
    return dest


def shipped_members(fmu):
    with zipfile.ZipFile(fmu) as z:
        return sorted(n for n in z.namelist() if f"/{shipped.FOLDER}/" in n)


@pytest.mark.parametrize("name", ["disk_ramp", "pendulum_belt"])
def test_shipped_objects_bit_for_bit_and_corrupt_refused(fmu_dir, tmp_path, name):
    """Three FMUs of one build, 8 s with their events: as built (formed objects loaded), with
    the object code corrupted (one byte: refused by its SHA-256, the formed scenario loaded,
    modes compiled at run time), and without any shipped file (built and compiled as before
    issue 30).  Every output at every communication point agrees bit for bit."""
    fmu = fmu_dir / f"{name}.fmu"
    members = shipped_members(fmu)
    assert [Path(m).name for m in members] == [shipped.OBJECTS_FILE, shipped.SCENARIO_FILE]

    def flip(member, data):
        if member.endswith(shipped.OBJECTS_FILE):
            data = bytearray(data)
            data[-100] ^= 0x01          # inside the pickle, after the header
            return bytes(data)
        return data

    for sub in ("corrupt", "bare"):
        (tmp_path / sub).mkdir()
    corrupt = rewritten(fmu, tmp_path / "corrupt" / f"{name}.fmu", flip)
    bare = rewritten(fmu, tmp_path / "bare" / f"{name}.fmu",
                     lambda m, d: None if m in members else d)
    shipped_out, shipped_log = run(fmu, tmp_path)
    corrupt_out, corrupt_log = run(corrupt, tmp_path)
    bare_out, bare_log = run(bare, tmp_path)
    assert not any("shipped" in line for line in shipped_log), shipped_log
    refused = [line for line in corrupt_log if "shipped object code not used" in line]
    assert refused and "corrupt" in refused[0], corrupt_log
    assert not any("formed model not used" in line for line in corrupt_log)
    assert not any("shipped" in line for line in bare_log)   # no folder: nothing to refuse
    assert shipped_out.shape == bare_out.shape and shipped_out.shape[0] > 700
    assert shipped_out["time"][-1] == pytest.approx(8.0)
    assert shipped_out["event_count"][-1] > 0          # the run went through its events
    for field in shipped_out.dtype.names:
        np.testing.assert_array_equal(shipped_out[field], bare_out[field], err_msg=field)
        np.testing.assert_array_equal(corrupt_out[field], bare_out[field], err_msg=field)


def test_read_refuses_foreign_key_and_tampered_bytes(tmp_path):
    """``shipped.read``: the object back for its own key; another CPU (or model, or package
    version) named in the refusal; a truncated file or one with a changed byte refused
    before it is unpickled (a payload that would run code if unpickled never runs)."""
    key = shipped.key("m", {"N": 3}, "abc", cpu=True)
    path = tmp_path / "objects.pkl"
    shipped.write(path, key, {"x": np.arange(3.0)})
    obj, why = shipped.read(path, key)
    assert why is None and np.array_equal(obj["x"], np.arange(3.0))
    other = dict(key, cpu="another-cpu")
    obj, why = shipped.read(path, other)
    assert obj is None and "cpu" in why
    obj, why = shipped.read(path, dict(key, sources="def"))
    assert obj is None and "sources" in why
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    obj, why = shipped.read(path, key)
    assert obj is None and "truncated" in why

    class Boom:                       # unpickling it would raise: it must never be unpickled
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))

    shipped.write(path, key, {"x": 1})
    head, payload = path.read_bytes().split(b"\n", 2)[:2], path.read_bytes().split(b"\n", 2)[2]
    path.write_bytes(b"\n".join(head) + b"\n" + pickle.dumps(Boom()))
    obj, why = shipped.read(path, key)
    assert obj is None and "corrupt" in why
    assert shipped.read(tmp_path / "absent.pkl", key)[0] is None
