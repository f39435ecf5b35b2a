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

ROOT = Path(__file__).resolve().parents[1]

# the FMU run in a fresh process; the stack of the first import of sympy, if any
RUN = r"""
import json, sys, traceback
import numpy as np
first = []

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "sympy" and not first:
            first.append([f.name for f in traceback.extract_stack()])

sys.meta_path.insert(0, Watch())
from fmpy import simulate_fmu
log = []
res = simulate_fmu(sys.argv[1], stop_time=8.0, output_interval=0.01,
                   logger=lambda *a: log.append(a[-1].decode() if isinstance(a[-1], bytes)
                                                else str(a[-1])), debug_logging=True)
np.save(sys.argv[2], res)
print(json.dumps({"log": log, "sympy": first[0] if first else None,
                  "symengine": "symengine" in sys.modules}))
"""


# modes whose compiled code the object code cannot carry yet: their FMU's image hands over
# to the real scenario at the start (a ``ProgramMode``'s ctypes entry points do not pickle)
NOT_SHIPPED = {"top": "ProgramMode (1, ('normalization', 'tip'), (2, 6))"}


def run(fmu, out):
    res = subprocess.run([sys.executable, "-c", RUN, str(fmu), str(out)], capture_output=True,
                         text=True, cwd=Path(out).parent, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return np.load(out), json.loads(res.stdout.strip().splitlines()[-1])


def rewritten(fmu, dest, change):
    """A copy of ``fmu`` whose members ``change(name, data)`` rewrites (None drops one)."""
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = change(item.filename, src.read(item))
            if data is not None:
                dst.writestr(item, data)
    return dest


def foreign(data):
    """A shipped file's bytes with its key naming another model (its digest still right)."""
    head, payload = data[len(shipped.MAGIC):].split(b"\n", 1)
    header = json.loads(head)
    header["key"]["model"] = "another"
    return shipped.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


@pytest.mark.parametrize("name", ["disk_ramp", "pendulum_belt", "top"])
def test_image_fmu_bit_for_bit_hand_over_and_refusals(fmu_dir, tmp_path, name):
    """Five FMUs of one build run 8 s with their events: as built (the image loaded), without
    any shipped file (bare: the scenario built and compiled as before issue 30), with the
    object code removed but the image kept (every mode formed after the image's hand-over
    to the real scenario), with the image corrupted (one byte: refused by its SHA-256) and
    formed for another model (refused by its key): each refusal logged, every output at
    every communication point bit for bit the bare FMU's.  As built, disk_ramp's and
    pendulum_belt's processes never import sympy through 8 s of impacts, entries and
    releases; where sympy is imported at all, it is by the hand-over (``AutomatonForms.
    symbolic``), never by loading the image (``NOT_SHIPPED``: top's mode)."""
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
    # the image loaded: sympy never (the object code held every mode it met), or imported
    # by the hand-over only (no object code; top's mode, which does not ship)
    assert (runs["shipped"][1]["sympy"] is None) == (name not in NOT_SHIPPED)
    for sub in ("shipped", "no_objects"):
        stack = runs[sub][1]["sympy"]
        assert stack is None or "symbolic" in stack, stack
    bare = runs["bare"][0]
    assert bare.shape[0] == 801 and bare["time"][-1] == pytest.approx(8.0)
    if name != "top":                                   # a spinning top: no events
        assert bare["event_count"][-1] > 0
    for sub in ("shipped", "no_objects", "corrupt", "foreign"):
        got = runs[sub][0]
        for field in bare.dtype.names:
            np.testing.assert_array_equal(got[field], bare[field], err_msg=f"{sub} {field}")


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
