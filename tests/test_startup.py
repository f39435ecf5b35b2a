"""Kane's terms and the object code shipped in the FMU (issue 30, embed.base.shipped,
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

HEAVY = ("sympy", "symengine", "scipy")   # what the stepping process should not need

RUN = r"""
HEAVY = %r
import json, sys
import numpy as np
from fmpy import simulate_fmu
log = []
res = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), output_interval=0.01,
                   logger=lambda *a: log.append(a[-1].decode() if isinstance(a[-1], bytes)
                                                else str(a[-1])),
                   debug_logging=True)
np.save(sys.argv[3], res)
print(json.dumps({"log": log, "imported": [m for m in HEAVY if m in sys.modules]}))
""" % (HEAVY,)


def run(fmu, tmp_path, stop=8.0, imported=None):
    """(outputs every 10 ms, the FMU's log lines) of ``fmu`` run in a fresh process; the
    packages of ``HEAVY`` that process had imported at the end go to ``imported``."""
    out = tmp_path / f"{Path(fmu).stem}_{len(list(tmp_path.iterdir()))}.npy"
    res = subprocess.run([sys.executable, "-c", RUN, str(fmu), str(stop), str(out)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    if imported is not None:
        imported.extend(got["imported"])
    return np.load(out), got["log"]


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


@pytest.mark.parametrize("name", ["disk_ramp", "pendulum_belt", "top", "slider_crank3",
                                  "pendulum_chain", "ball_bowl", "biped7", "kneed_walker"])
def test_shipped_objects_bit_for_bit_and_corrupt_refused(fmu_dir, tmp_path, name):
    """Three FMUs of one build, 8 s with their events (disk_ramp, pendulum_belt,
    kneed_walker; the others have none in 8 s), none of whose processes
    imports the scipy package (a partition pivoting more than 3 rows, ball_bowl's, biped7's
    and kneed_walker's, loads scipy's LAPACK extension alone: ``embed.base.flapack``, the
    same dgeqp3; pendulum_chain's is not asserted): as built (formed objects loaded), with
    the object code corrupted (one byte: refused by its SHA-256, the model built from the
    shipped Kane's terms, modes compiled at run time), and without any shipped file (built and compiled as before
    issue 30).  Every output at every communication point agrees bit for bit.  pendulum_chain
    (2 s, no events) is on the background path (its workers would build their model from the
    shipped Kane's terms, but every mode it meets has its compiled-terms program: they are
    never started): with the object code refused it runs bit for bit as the bare FMU.  With the object code it steps on the shipped compiled-terms program
    from the first step, where the bare FMU steps on numpy until that program is compiled
    (``ModeCompiler.terms_mode``): the same physics to 1e-9, not the same bits."""
    fmu = fmu_dir / f"{name}.fmu"
    members = shipped_members(fmu)
    # (the LLVM helpers' object code the build loaded ships in objects.pkl)
    assert [Path(m).name for m in members] == [
        shipped.IMAGE_FILE, shipped.KANE_FILE, shipped.OBJECTS_FILE]

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
    stop = 2.0 if name == "pendulum_chain" else 8.0
    imported = {"shipped": [], "corrupt": [], "bare": []}
    shipped_out, shipped_log = run(fmu, tmp_path, stop, imported["shipped"])
    corrupt_out, corrupt_log = run(corrupt, tmp_path, stop, imported["corrupt"])
    bare_out, bare_log = run(bare, tmp_path, stop, imported["bare"])
    if name != "pendulum_chain":     # its N links: a pivoted QR of more than 3 rows (scipy)
        # 8 s with impacts, activations, re-partitions: the stepping process never imports
        # scipy (numpy's LAPACK solves, bit for bit scipy's: the three runs agree below)
        assert {k: "scipy" in v for k, v in imported.items()} == dict.fromkeys(imported, False)
    assert not any("shipped" in line for line in shipped_log), shipped_log
    refused = [line for line in corrupt_log if "shipped object code not used" in line]
    assert refused and "corrupt" in refused[0], corrupt_log
    assert not any("Kane's terms not used" in line for line in corrupt_log)
    assert not any("shipped" in line for line in bare_log)   # no folder: nothing to refuse
    assert shipped_out.shape == bare_out.shape and shipped_out.shape[0] > 90 * stop
    assert shipped_out["time"][-1] == pytest.approx(stop)
    if name in ("disk_ramp", "pendulum_belt", "kneed_walker"):   # the others: no event in 8 s
        assert shipped_out["event_count"][-1] > 0      # the run went through its events
    for field in shipped_out.dtype.names:
        np.testing.assert_array_equal(corrupt_out[field], bare_out[field], err_msg=field)
        if name == "pendulum_chain":   # on-line: the shipped program from the first step
            np.testing.assert_allclose(shipped_out[field], bare_out[field], rtol=1e-9,
                                       atol=1e-9, err_msg=field)
        else:
            np.testing.assert_array_equal(shipped_out[field], bare_out[field], err_msg=field)


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
    head = path.read_bytes().split(b"\n", 2)[:2]
    path.write_bytes(b"\n".join(head) + b"\n" + pickle.dumps(Boom()))
    obj, why = shipped.read(path, key)
    assert obj is None and "corrupt" in why
    assert shipped.read(tmp_path / "absent.pkl", key)[0] is None


@pytest.mark.parametrize("name", ["pendulum_belt", "top"])
def test_shipped_kane_terms_form_the_fresh_model(name):
    """A model built from Kane's terms recorded by an earlier build (``kane_terms``) derives
    nothing (nothing recorded again) and holds the fresh build's symengine expressions term
    for term, in the same internal order: F_r, F_r*, qdot and every constraint's B and C.
    Their pickles do not (symengine's load reorders an Add's terms), which is why sympy
    forms are shipped."""
    import scenarios
    from embed.model import kane_terms

    def order(e):                   # the tree in symengine's internal argument order
        return (type(e).__name__, str(e) if not e.args else tuple(order(a) for a in e.args))

    def exprs(sc):
        m = sc.automaton.model
        out = m.Fr + m.Frstar + m.aux + m.qdot
        for c in sc.automaton.constraints.values():
            out += list(c.B) + [c.C]
        return out

    with kane_terms.recording() as terms:
        fresh = scenarios.load(name).build()
    assert list(terms) == [(fresh.automaton.model.name, 0)]
    with kane_terms.recording() as again, kane_terms.shipped(pickle.loads(pickle.dumps(terms))):
        formed = scenarios.load(name).build()
    assert again == {}                       # Kane's equations not derived a second time
    assert [order(e) for e in exprs(formed)] == [order(e) for e in exprs(fresh)]
    loaded = [pickle.loads(pickle.dumps(e)) for e in fresh.automaton.model.Fr]
    assert [e == f for e, f in zip(loaded, fresh.automaton.model.Fr)] == [True] * len(loaded)


def test_lapack_routines_without_scipy_linalg():
    """``embed.base.flapack``: in a fresh process, dgeqp3, dgetrf and dgetrs come without
    the scipy package or scipy.linalg imported, and are the very objects scipy.linalg.lapack
    exposes once it is imported after them (the same machine code: the partition's pivots
    and the driven modes' LU are scipy's, bit for bit); a pivoted QR of a 5 x 9 matrix
    with tied columns agrees with scipy's to the bit."""
    code = r"""
import json, sys
import numpy as np
from embed.base import flapack
mine = [flapack.routine(n) for n in ("dgeqp3", "dgetrf", "dgetrs")]
before = sorted(k for k in sys.modules if k.split(".")[0] == "scipy")
a = np.random.default_rng(7).standard_normal((5, 9))
a[:, 4] = a[:, 1]                       # a tie decided by roundoff
got = mine[0](a)
import scipy.linalg.lapack as lapack
want = lapack.dgeqp3(a)
print(json.dumps({"before": before,
                  "same": [m is getattr(lapack, n) for m, n in
                           zip(mine, ("dgeqp3", "dgetrf", "dgetrs"))],
                  "bits": all(np.array_equal(x, y) for x, y in zip(got, want))}))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got == {"before": ["scipy.linalg._flapack"], "same": [True] * 3, "bits": True}
