"""What an FMU's start leaves for later (issue 30, start-up; figures: benchmarks/bench_startup.py):
shipped object code placed at its first call (or where another function names it), the same
bytes computing the same bits, and all of it at a real-time run's initialization; dgeqp3's
answers formed at build time taken only for the very bytes they were formed from, so that
scipy's LAPACK (10 ms) is loaded by an offline start of none of the bundled FMUs."""

import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from embed.base.flapack import routine
from embed.codegen import native
from embed.codegen.program import Program
from embed.embedding import partition

ROOT = Path(__file__).resolve().parents[1]


def _pair():
    """(caller, callee): compiled functions, the caller naming the callee (a call by name,
    ``Registers.call``), and 50 random argument vectors."""
    p = Program(2)
    f = native.compile_program(p, [p.mul(p.unary("sin", 0), p.binary("pow", 1, p.const(2.5)))],
                               "a callee")
    q = Program(2)
    r = q.call(f, [1, 0])
    g = native.compile_program(q, [q.add(r[0], q.unary("cos", 0))], "a caller")
    return g, f, np.random.default_rng(5).uniform(0.1, 3.0, (50, 2))


def test_unpickled_function_placed_at_its_first_call():
    """Unpickled, a function is not placed (no entry point) until its first call, then
    computes its original's bits; placing it again (``load``) changes nothing."""
    _, f, xs = _pair()
    again = pickle.loads(pickle.dumps(f))
    with pytest.raises(AttributeError):
        object.__getattribute__(again, "_f")
    assert native._PENDING.get(again.name) is again
    for x in xs:
        assert again(x).tobytes() == f(x).tobytes()
    placed = object.__getattribute__(again, "_f")
    again.load()
    assert object.__getattribute__(again, "_f") is placed
    assert again.name not in native._PENDING


CHILD = r"""
import json, pickle, sys
import numpy as np
from embed.codegen import native
g, f, xs = pickle.loads(open(sys.argv[1], "rb").read())
pending = sorted(n for n in (g.name, f.name) if n in native._PENDING)
out = [g(x).tobytes().hex() for x in xs]
print(json.dumps({"pending": pending, "out": out, "left": sorted(native._PENDING),
                  "llvm": "llvmlite.binding" in sys.modules}))
"""


@pytest.mark.parametrize("loader", ["", "mcjit"])
def test_function_named_by_another_is_placed_with_it(tmp_path, loader):
    """In a fresh process, the caller unpickled before its callee and called first: its
    placement places the callee it names first (``elf_load``: ``_resolve``; MCJIT, which
    aborts the process on a symbol it cannot find: ``_place``), and it computes the
    compiling process's bits."""
    g, f, xs = _pair()
    want = [g(x).tobytes().hex() for x in xs]
    path = tmp_path / "pair.pkl"
    path.write_bytes(pickle.dumps((g, f, xs)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), native.LOADER_ENV: loader}
    res = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                         text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    assert got["pending"] == sorted([g.name, f.name])
    assert got["left"] == [] and got["llvm"] == (loader == "mcjit")
    assert got["out"] == want


def test_shipped_pivots_only_for_the_same_bytes(monkeypatch):
    """A recorded factorization is dgeqp3's; shipped, it answers exactly the matrix it was
    recorded for (without calling LAPACK); a matrix one bit apart, or another shape of the
    same bytes, is factorized by dgeqp3."""
    rng = np.random.default_rng(11)
    a = rng.normal(size=(5, 9))
    a[:, 3] = a[:, 7]                       # tied columns: roundoff decides the pivots
    with partition.recording() as table:
        diag, piv = partition._pivoted_qr(a)
    qr, jpvt, _, _, _ = routine("dgeqp3")(a)
    assert list(piv) == list(jpvt - 1) and diag.tobytes() == np.abs(qr.diagonal()).tobytes()
    assert list(table) == [((5, 9), a.tobytes())]
    monkeypatch.setattr(partition, "_SHIPPED", {})
    partition.shipped(table)
    calls = []
    real = partition.routine
    monkeypatch.setattr(partition, "routine", lambda name: calls.append(name) or real(name))
    d2, p2 = partition._pivoted_qr(a)
    assert calls == [] and list(p2) == list(piv) and d2.tobytes() == diag.tobytes()
    b = a.copy()
    b.view(np.int64)[2, 4] ^= 1
    _, p3 = partition._pivoted_qr(b)
    jpvt3 = real("dgeqp3")(b)[1]
    assert calls == ["dgeqp3"] and list(p3) == list(jpvt3 - 1)
    partition._pivoted_qr(a.reshape(9, 5))
    assert calls == ["dgeqp3", "dgeqp3"]


START = r"""
import json, sys
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
unzip, real_time = sys.argv[1], sys.argv[2] == "1"
md = read_model_description(unzip)
f = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="lazy")
f.instantiate()
f.setupExperiment(startTime=0.0)
f.enterInitializationMode()
if real_time:
    v = next(v for v in md.modelVariables if v.name == "real_time")
    f.setBoolean([v.valueReference], [True])
f.exitInitializationMode()
f.doStep(0.0, 1e-3)
native = next(m for k, m in sys.modules.items() if k.endswith(".codegen.native"))
print(json.dumps({"flapack": "scipy.linalg._flapack" in sys.modules,
                  "pending": len(native._PENDING)}))
"""


def _start(fmu, tmp_path, real_time):
    unzip = tmp_path / f"{fmu.stem}{int(real_time)}"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    res = subprocess.run([sys.executable, "-c", START, str(unzip), str(int(real_time))],
                         capture_output=True, text=True, cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["ball_bowl", "kneed_walker", "biped7", "disk_fence"])
def test_offline_start_leaves_lapack_and_placements(fmu_dir, tmp_path, name):
    """The first step of an offline run: scipy's LAPACK not loaded (every pivoted QR of the
    start was shipped), and disk_fence's functions of modes not reached still unplaced; a
    real-time run has loaded LAPACK (a mode has more than ``SMALL_M`` constraints) and
    placed everything at its initialization."""
    fmu = fmu_dir / f"{name}.fmu"
    offline = _start(fmu, tmp_path, False)
    assert not offline["flapack"], offline
    if name == "disk_fence":
        assert offline["pending"] > 10, offline
    rt = _start(fmu, tmp_path, True)
    assert rt["pending"] == 0, rt
    assert rt["flapack"] == (name != "disk_fence"), rt
