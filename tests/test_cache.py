"""The engine runner's cache of compiled modes (issue 30, ``embed.modes.cache``).

Compiles are counted where the object code is made: symengine's ``Lambdify`` with the LLVM
backend and llvmlite's ``TargetMachine.emit_object`` (the engine's own programs), wrapped
(not replaced) in a fresh process that runs pendulum_belt over its events.  A run from the
cache must compile nothing and give the uncached run's trajectory to the bit.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from embed.base import cache_files, shipped
from embed.modes import cache

ROOT = Path(__file__).resolve().parents[1]
NAME, UNTIL = "pendulum_belt", 1.0

CHILD = r'''
import hashlib, json, sys
import llvmlite.binding as llvm
import symengine
COUNT = {"llvm": 0}
_lambdify, _emit = symengine.Lambdify, llvm.TargetMachine.emit_object
def lambdify(*a, **kw):
    COUNT["llvm"] += kw.get("backend") == "llvm"
    return _lambdify(*a, **kw)
def emit(self, *a, **kw):
    COUNT["llvm"] += 1
    return _emit(self, *a, **kw)
symengine.Lambdify, llvm.TargetMachine.emit_object = lambdify, emit
import warnings
import numpy as np
import scenarios
sc = scenarios.load(sys.argv[1]).build()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sim = sc.simulator()
h = hashlib.sha256()
for k in range(1, int(round(float(sys.argv[2]) / 0.01)) + 1):
    sim.advance(k * 0.01)
    h.update(np.asarray(sim.state.x, dtype=float).tobytes())
    h.update(np.asarray(sim.state.mon, dtype=float).tobytes())
h.update(repr(sim.events).encode())
print(json.dumps({"compiles": COUNT["llvm"], "hash": h.hexdigest(), "events": len(sim.events),
                  "warnings": [str(w.message) for w in caught]}))
'''


def _start(where, script, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMBED_CACHE": str(where)}
    if cwd is not None:              # a home of its own: what it writes is seen
        cwd.mkdir(exist_ok=True)
        env.update(HOME=str(cwd), XDG_CACHE_HOME="")
    return subprocess.Popen([sys.executable, "-c", script, NAME, str(UNTIL)], env=env,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def _run(where, cwd=None):
    return _result(_start(where, CHILD, cwd))


def test_cached_run_is_bit_for_bit_and_compiles_nothing(tmp_path):
    """Two cold processes write the same file at once; a third loads it: no compile, the
    uncached trajectory to the bit (and the cold ones equal it too)."""
    where = tmp_path / "cache"
    off = _run("off", cwd=tmp_path / "off-home")
    cold = [_start(where, CHILD) for _ in range(2)]      # concurrent writers
    cold = [_result(p) for p in cold]
    files = list(where.glob("*" + cache_files.SUFFIX))
    assert len(files) == 1 and not list(where.glob("*.tmp"))
    warm = _run(where)
    assert off["compiles"] > 0 and off["events"] > 2
    # cold, or (a loaded machine staggers their starts) the other's whole file found: never
    # a partial one (it would be refused with a warning and compiled again)
    assert all(c["compiles"] in (0, off["compiles"]) and c["warnings"] == [] for c in cold)
    assert max(c["compiles"] for c in cold) == off["compiles"]
    assert warm["compiles"] == 0, warm
    assert warm["hash"] == off["hash"] == cold[0]["hash"] == cold[1]["hash"]
    assert warm["warnings"] == [] and warm["events"] == off["events"]
    assert list((tmp_path / "off-home").rglob("*")) == []   # nothing in its cwd, HOME


def test_cache_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.ENV, "off")
    assert cache_files.folder() is None and not cache.enabled()
    monkeypatch.setenv(cache_files.ENV, str(tmp_path))
    assert cache_files.folder() == tmp_path and cache.enabled()
    monkeypatch.delenv(cache_files.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_files.folder() == tmp_path / "xdg" / "embed-fmu"


@pytest.fixture(scope="module")
def primed(tmp_path_factory):
    """(folder, the file one cold run of pendulum_belt wrote, its bytes)."""
    where = tmp_path_factory.mktemp("primed")
    _run(where)
    (path,) = where.glob("*" + cache_files.SUFFIX)
    return where, path, path.read_bytes()


def _damaged(tmp_path, primed, damage):
    where = tmp_path / "cache"
    where.mkdir()
    path = where / primed[1].name
    path.write_bytes(damage(primed[2]))
    return where, path


def _flip(data):
    i = len(data) - 100          # a byte of the pickle, past the header
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


@pytest.mark.parametrize("damage, said", [
    (_flip, "corrupt or truncated"),
    (lambda d: d[:len(d) // 2], "corrupt or truncated"),
    (lambda d: b"", "not a shipped file")])
def test_damaged_file_refused_then_overwritten(tmp_path, primed, damage, said):
    where, path = _damaged(tmp_path, primed, damage)
    got = _run(where)
    assert got["compiles"] > 0 and len(got["warnings"]) == 1, got
    assert said in got["warnings"][0] and path.name in got["warnings"][0]
    assert "compiling as without it" in got["warnings"][0]
    assert shipped.read(path, json.loads(primed[2].split(b"\n")[1])["key"])[1] is None
    if damage is not _flip:
        return                   # overwritten whole; once is enough to run it again
    again = _run(where)
    assert again["compiles"] == 0 and again["warnings"] == []
    assert again["hash"] == got["hash"]


@pytest.mark.parametrize("entry, value", [("cpu", "another-cpu"), ("llvmlite", "0.0.1")])
def test_foreign_key_refused(tmp_path, primed, entry, value):
    """A file whose header names another CPU or another version is refused by its key,
    before its (intact) pickle is loaded."""
    head, payload = primed[2][len(shipped.MAGIC):].split(b"\n", 1)
    key = json.loads(head)["key"]
    key[entry] = value
    where = tmp_path / "cache"
    cache_files.write(where / primed[1].name, key, payload)
    got = _run(where)
    assert got["compiles"] > 0 and len(got["warnings"]) == 1
    assert f"another {entry} ('{value}'" in got["warnings"][0], got["warnings"]


WRITER = r'''
import sys
from pathlib import Path
from embed.base import cache_files
path, me = Path(sys.argv[1]), sys.argv[2]
for i in range(40):
    cache_files.write(path, {"writer": "any"}, (me * (1000 + 97 * i)).encode())
'''


def test_concurrent_writers_leave_whole_files(tmp_path):
    """Two processes rewrite one file while this one reads it: every read is a whole file
    of one of them (the header's SHA-256 checks it)."""
    path = tmp_path / "x.modes"
    cache_files.write(path, {"writer": "any"}, b"start")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), me], env=env)
             for me in "ab"]
    reads = 0
    while any(p.poll() is None for p in procs) or reads == 0:
        data = path.read_bytes()
        head, payload = data[len(shipped.MAGIC):].split(b"\n", 1)
        header = json.loads(head)
        assert hashlib.sha256(payload).hexdigest() == header["sha256"]
        assert set(payload) <= {ord("a")} or set(payload) <= {ord("b")} or payload == b"start"
        reads += 1
    assert all(p.wait() == 0 for p in procs)
    assert not list(tmp_path.glob("*.tmp"))


def test_prune_keeps_the_folder_bounded(tmp_path):
    for i in range(5):
        cache_files.write(tmp_path / f"f{i}{cache_files.SUFFIX}", {"i": i}, b"x" * 1000)
        os.utime(tmp_path / f"f{i}{cache_files.SUFFIX}", (1e9 + i, 1e9 + i))
    gone = cache_files.prune(tmp_path, max_bytes=3500)
    assert sorted(f.name for f in gone) == ["f0.modes", "f1.modes"]
    assert cache_files.info(tmp_path)["bytes"] < 3500
    assert cache_files.clear(tmp_path) == 3 and cache_files.info(tmp_path)["files"] == []


def test_key_follows_the_build(tmp_path):
    """The key is a function of what is built: equal for two builds in one process, unequal
    for another build option (a chain's N)."""
    from scenarios import pendulum_chain
    a, b, c = pendulum_chain.build(N=2), pendulum_chain.build(N=2), pendulum_chain.build(N=3)
    ka = cache.key_of(a, "symbolic")
    assert ka == cache.key_of(b, "symbolic")
    assert ka["content"] != cache.key_of(c, "symbolic")["content"]
    assert ka != cache.key_of(a, "numeric")
    assert cache.path_of(tmp_path, ka) != cache.path_of(tmp_path, cache.key_of(a, "numeric"))


def test_program_mode_pickles_bit_for_bit():
    """A ``ProgramMode`` (pendulum_chain N = 5's mode: one compiled program a step) pickles
    without its ctypes entry points and, loaded, steps to the same bits as the original."""
    import cloudpickle
    import numpy as np

    from embed.modes.library import ModeLibrary
    from embed.modes.modes import ProgramMode
    from scenarios import pendulum_chain

    sc = pendulum_chain.build(N=5)
    sim = sc.simulator(library=ModeLibrary())
    sim.advance(0.05)
    (mode,) = [m for m in sim.library.modes.values() if isinstance(m, ProgramMode)]
    copy = cloudpickle.loads(cloudpickle.dumps(mode))
    assert copy._call is not mode._call
    x, p = np.array(sim.state.x), np.array(sim.state.pvec)
    assert np.array_equal(copy.rk4(0.05, 1e-3, x, p), mode.rk4(0.05, 1e-3, x, p))
    assert np.array_equal(copy.monitors(0.05, x, p), mode.monitors(0.05, x, p))


def test_llvm_helper_object_code_refused_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.ENV, str(tmp_path))
    made = []

    def make():
        made.append(1)
        return b"object code"
    assert cache_files.object_code("h", b"ir", make) == b"object code" and len(made) == 1
    assert cache_files.object_code("h", b"ir", make) == b"object code" and len(made) == 1
    (path,) = tmp_path.glob("llvm-h-*")
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.warns(cache_files.CacheWarning, match="corrupt or truncated"):
        assert cache_files.object_code("h", b"ir", make) == b"object code"
    assert len(made) == 2
    assert cache_files.object_code("h", b"other ir", make) and len(made) == 3
