"""The scenario image shipped in the FMU (issue 30, ``embed.interface.image``,
``fmu_src.runtime.formed``): loaded at fmi2Instantiate without sympy or the scenario's module,
it steps bit for bit as the FMU without any shipped file; where its simulator needs symbols
(a constraint's terms or a mode nobody shipped) it builds the real scenario then and goes on
bit for bit; a refused image (corrupt, foreign key) falls back to building the scenario and
says why.  Directional derivatives from an image-loaded FMU: tests/test_directional_derivative.py
(its FMUs carry an image)."""

import copy
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from embed.base import shipped
from embed.interface import image
from test_startup import rewritten

ROOT = Path(__file__).resolve().parents[1]

# the FMU run in a fresh process; the stack of the first import of sympy, if any
RUN = r"""
import json, sys, traceback
import numpy as np
first = []

symengine = []

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "sympy" and not first:
            first.append([f.name for f in traceback.extract_stack()])
        if name == "symengine" and not symengine:
            symengine.append(traceback.format_stack()[-12:-1])

sys.meta_path.insert(0, Watch())
from fmpy import simulate_fmu
log = []
res = simulate_fmu(sys.argv[1], stop_time=8.0, output_interval=0.01,
                   start_values=json.loads(sys.argv[3]),
                   logger=lambda *a: log.append(a[-1].decode() if isinstance(a[-1], bytes)
                                                else str(a[-1])), debug_logging=True)
np.save(sys.argv[2], res)
print(json.dumps({"log": log, "sympy": first[0] if first else None,
                  "symengine": symengine[0] if symengine else None,
                  "modules": [m for m in ("sympy", "symengine") if m in sys.modules]}))
"""


def run(fmu, out, start=None):
    if "pendulum_chain" in Path(fmu).name:    # the latch armed: it catches the tip (an event)
        start = {"pin": 2, **(start or {})}
    res = subprocess.run([sys.executable, "-c", RUN, str(fmu), str(out), json.dumps(start or {})],
                         capture_output=True, text=True, cwd=Path(out).parent, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return np.load(out), json.loads(res.stdout.strip().splitlines()[-1])


def foreign(data):
    """A shipped file's bytes with its key naming another model (its digest still right)."""
    head, payload = data[len(shipped.MAGIC):].split(b"\n", 1)
    header = json.loads(head)
    header["key"]["model"] = "another"
    return shipped.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


@pytest.mark.parametrize("name", ["disk_ramp", "pendulum_belt", "top", "slider_crank3",
                                  "swing_bar", "metamorphic_palm", "disk_fence",
                                  "pendulum_chain"])
def test_image_fmu_bit_for_bit_hand_over_and_refusals(fmu_dir, tmp_path, name):
    """Each FMU of one build runs 8 s with their events: as built (the image loaded), without
    any shipped file (bare: the scenario built and compiled as before issue 30), with the
    object code removed but the image kept (every mode formed after the image's hand-over
    to the real scenario), with the image corrupted (one byte: refused by its SHA-256) and
    formed for another model (refused by its key): each refusal logged, every output at
    every communication point bit for bit the bare FMU's.  As built, the processes never
    import sympy or symengine through 8 s of impacts, entries and releases; without the object code it
    is imported by the hand-over (``AutomatonForms.symbolic``), never by loading the image.
    swing_bar's model holds a ``QuaternionJoint`` (frozen as a placeholder: its module imports
    sympy); metamorphic_palm runs on the numeric path, on the shipped compiled terms;
    disk_fence on the background path with its extension (its fence families shipped in
    the image, its background worker a process of its own, where sympy is allowed).

    pendulum_chain (the background path, its latch armed: it catches the tip) steps on its
    shipped compiled-terms program from the first step, where an FMU that compiles at run
    time steps on numpy until that program is compiled (tests/test_startup.py): as built it
    is bit for bit the FMU whose image is refused (the scenario built from the shipped Kane's
    terms, the same object code), and within 1e-9 of the bare FMU, which the one without
    object code follows bit for bit; its background workers are never started (every mode
    has its program), so no process imports sympy at all."""
    fmu = fmu_dir / f"{name}.fmu"
    img = f"resources/{shipped.FOLDER}/{shipped.IMAGE_FILE}"
    with zipfile.ZipFile(fmu) as z:
        assert img in z.namelist()

    def flip(member, data):
        if member == img:
            data = bytearray(data)
            data[-100] ^= 0x01
            return bytes(data)
        return data

    variants = {
        "bare": lambda m, d: None if f"/{shipped.FOLDER}/" in m else d,
        "no_objects": lambda m, d: None if m.endswith(shipped.OBJECTS_FILE) else d,
        "corrupt": flip,
        "foreign": lambda m, d: foreign(d) if m == img else d,
    }
    runs = {"shipped": run(fmu, tmp_path / "shipped.npy")}
    for sub, change in variants.items():
        (tmp_path / sub).mkdir()
        copy_ = rewritten(fmu, tmp_path / sub / f"{name}.fmu", change)
        runs[sub] = run(copy_, tmp_path / sub / "out.npy")
    logs = {k: v[1]["log"] for k, v in runs.items()}
    assert not any("not used" in line for k in ("shipped", "bare") for line in logs[k])
    assert any("shipped object code not used" in line for line in logs["no_objects"])
    assert not any("image not used" in line for line in logs["no_objects"])
    for sub, why in (("corrupt", "corrupt"), ("foreign", "another model")):
        refused = [line for line in logs[sub] if "shipped scenario image not used" in line]
        assert refused and why in refused[0], logs[sub]
    # the image loaded: neither sympy nor symengine ever (the object code held every mode it
    # met, symengine's LLVM functions as their object code), or imported by the hand-over
    # only (no object code: at the start)
    assert runs["shipped"][1]["sympy"] is None
    assert runs["shipped"][1]["symengine"] is None, "".join(runs["shipped"][1]["symengine"])
    assert runs["shipped"][1]["modules"] == []
    assert "symbolic" in runs["no_objects"][1]["sympy"]
    bare = runs["bare"][0]
    assert bare.shape[0] == 801 and bare["time"][-1] == pytest.approx(8.0)
    if name in ("disk_ramp", "pendulum_belt", "pendulum_chain"):   # top, slider_crank3: none
        assert bare["event_count"][-1] > 0
    same = {sub: "bare" for sub in ("shipped", "no_objects", "corrupt", "foreign")}
    if name == "pendulum_chain":     # the shipped program from the first step (docstring)
        same.update(corrupt="shipped", foreign="shipped")
        del same["shipped"]
        assert runs["shipped"][0]["event_count"][-1] == bare["event_count"][-1]
        for field in bare.dtype.names:
            np.testing.assert_allclose(runs["shipped"][0][field], bare[field], rtol=1e-9,
                                       atol=1e-9, err_msg=f"shipped {field}")
    for sub, ref in same.items():
        for field in bare.dtype.names:
            np.testing.assert_array_equal(runs[sub][0][field], runs[ref][0][field],
                                          err_msg=f"{sub} {field}")


def test_image_loads_without_sympy_or_the_scenario_module(tmp_path):
    """``freeze`` of pendulum_belt (reset maps, guards' closures, the initial map, the
    feasibility checks) loads in a fresh process that imports neither sympy nor the
    scenario's module, with its names, sizes and defaults those of the scenario; its
    symbols are placeholders, which refuse any symbolic use by name."""
    import scenarios
    sc = scenarios.load("pendulum_belt").build()
    path = tmp_path / "image.pkl"
    path.write_bytes(image.freeze(sc, {"dependence": {"x": True}}))
    want = {"q": [str(s) for s in sc.automaton.model.q], "n": sc.automaton.model.n,
            "defaults": sc.defaults(), "modes": sc.mode_names(),
            "outputs": [v.name for v in sc.outputs], "constraints": sorted(sc.automaton.constraints)}
    code = r"""
import json, sys
from embed.interface import image
img = image.thaw(open(sys.argv[1], "rb").read())
sc = img["scenario"]
m = sc.automaton.model
print(json.dumps({"q": [str(s) for s in m.q], "n": m.n, "defaults": sc.defaults(),
                  "modes": {str(k): v for k, v in sc.mode_names().items()},
                  "outputs": [v.name for v in sc.outputs],
                  "constraints": sorted(sc.automaton.constraints),
                  "dependence": img["dependence"],
                  "loaded": sorted(k for k in sys.modules if k.split(".")[0] in
                                   ("sympy", "scenarios"))}))
"""
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got.pop("loaded") == []
    assert got.pop("dependence") == {"x": True}
    want["modes"] = {str(k): v for k, v in want["modes"].items()}
    assert got == want
    q0 = image.thaw(path.read_bytes())["scenario"].automaton.model.q[0]
    assert isinstance(q0, image.Placeholder) and str(q0) == str(sc.automaton.model.q[0])
    assert copy.deepcopy(q0) == q0 and hash(q0) == hash(copy.copy(q0))
    with pytest.raises(image.SymbolsNeeded, match=str(q0)):
        q0 + 1
    with pytest.raises(image.SymbolsNeeded, match="free_symbols"):
        q0.free_symbols


# objects.pkl of an extracted FMU rewritten without the compiled modes of its highest mode id
# (with the FMU's own renamed packages, in a process of its own); prints the keys dropped
DROP = r"""
import hashlib, io, json, sys
from importlib import import_module
from pathlib import Path
res = Path(sys.argv[1])
sys.path.insert(0, str(res))
tag = next(p.name for p in res.iterdir() if p.name.startswith("embed_"))
shipped = import_module(tag + ".base.shipped")
path = res / shipped.FOLDER / shipped.OBJECTS_FILE
data = path.read_bytes()
end = data.find(b"\n", len(shipped.MAGIC))
header = json.loads(data[len(shipped.MAGIC):end])
model = object()
libraries = shipped._Loader(io.BytesIO(data[end + 1:]), {"model": model}).load()
dropped = []
for lib in libraries.values():
    if not hasattr(lib, "modes"):     # the helpers' objects, the shipped dgeqp3 answers
        continue
    last = max(k[0] for k in lib.modes)
    for slot in ("modes", "numeric_modes"):
        for k in [k for k in getattr(lib, slot) if k[0] == last]:
            dropped.append(repr(k))
            del getattr(lib, slot)[k]
    for k in [k for k in lib.terms_programs if k[0] == last]:
        del lib.terms_programs[k]
payload = shipped.persistent_pickle(libraries, {"model": model})
header.update(sha256=hashlib.sha256(payload).hexdigest(), size=len(payload))
path.write_bytes(shipped.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload)
print(json.dumps(dropped))
"""


def test_hand_over_in_a_step_bit_for_bit(fmu_dir, tmp_path):
    """disk_ramp's FMU with the object code of one mode (its highest id) left out: the
    image steps on the shipped modes until an event enters that mode, then, in that step,
    builds the real scenario (sympy imported there, not at instantiate) and forms the mode;
    every output bit for bit the FMU's without any shipped file; so are runs with other
    parameters and on the numeric path."""
    fmu = fmu_dir / "disk_ramp.fmu"
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    res = subprocess.run([sys.executable, "-c", DROP, str(unzip / "resources")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1])        # a mode was left out
    objects = (unzip / "resources" / shipped.FOLDER / shipped.OBJECTS_FILE).read_bytes()
    (tmp_path / "partial").mkdir()
    (tmp_path / "bare").mkdir()
    partial = rewritten(fmu, tmp_path / "partial" / "disk_ramp.fmu",
                        lambda m, d: objects if m.endswith(shipped.OBJECTS_FILE) else d)
    bare = rewritten(fmu, tmp_path / "bare" / "disk_ramp.fmu",
                     lambda m, d: None if f"/{shipped.FOLDER}/" in m else d)
    got, info = run(partial, tmp_path / "partial" / "out.npy")
    want, _ = run(bare, tmp_path / "bare" / "out.npy")
    assert not any("not used" in line for line in info["log"]), info["log"]
    stack = info["sympy"]
    assert stack is not None and "symbolic" in stack and "do_step" in stack, stack
    assert want["event_count"][-1] > 0
    for field in want.dtype.names:
        np.testing.assert_array_equal(got[field], want[field], err_msg=field)
    # another start (down the ramp: other events), and the numeric embedding path (the
    # image hands over when its simulator is made): bit for bit too
    for k, start in enumerate(({"u1_start": -8.0},
                               {"embedding": "numeric"})):
        got, info = run(fmu, tmp_path / f"image{k}.npy", start)
        want, _ = run(bare, tmp_path / "bare" / f"out{k}.npy", start)
        assert "symbolic" in (info["sympy"] or []) or k == 0, info["sympy"]
        for field in want.dtype.names:
            np.testing.assert_array_equal(got[field], want[field], err_msg=f"{start} {field}")
