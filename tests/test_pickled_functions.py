"""Shipped pickles load what cloudpickle pickled by value without importing cloudpickle
(``embed.base.pickled_functions``, issue 30 start-up): closures, and classes pickled by value
(disk_fence's image has a class and frozen dataclasses) give what cloudpickle's own loads
gives, one class per tracker id in a process, the same class cloudpickle later finds."""

import json
import os
import subprocess
import sys
from pathlib import Path

import cloudpickle

ROOT = Path(__file__).resolve().parents[1]

MODULE = '''
import dataclasses

SCALE = 3.0


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float = 2.0
    tags: tuple = dataclasses.field(default=(), compare=False)

    def norm1(self):
        return abs(self.x) + abs(self.y)


class Fence:
    """a class with a method, a class attribute and a property"""
    kind = "fence"

    def __init__(self, k):
        self.k = k

    @property
    def twice(self):
        return 2 * self.k * SCALE


def make(k):
    def f(x):
        return Point(x * k, SCALE).norm1() + Fence(k).twice
    return f
'''

CHILD = r'''
import io, json, pickle, sys
from embed.base import shipped
data = open(sys.argv[1], "rb").read()
a = shipped._Loader(io.BytesIO(data)).load()
b = shipped._Loader(io.BytesIO(data)).load()
lean = "cloudpickle" not in sys.modules
import cloudpickle
c = cloudpickle.loads(data)
print(json.dumps({
    "lean": lean,
    "f": a["f"](1.5), "p": a["p"], "p_eq": a["p"] == a["cls"](-4.0, 1.0, tags=("z",)),
    "same_class": a["cls"] is b["cls"] is c["cls"] and type(a["p"]) is type(c["p"]),
    "fence": [a["fence"].kind, a["fence"].twice, isinstance(c["fence"], type(a["fence"]))],
    "doc": a["fence_cls"].__doc__,
}, default=repr))
'''


def test_classes_and_closures_by_value_without_cloudpickle(tmp_path):
    (tmp_path / "byvalue_mod.py").write_text(MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        import byvalue_mod as m
        cloudpickle.register_pickle_by_value(m)
        try:
            payload = cloudpickle.dumps({"f": m.make(2.0), "p": m.Point(-4.0, 1.0),
                                         "cls": m.Point, "fence": m.Fence(5.0),
                                         "fence_cls": m.Fence})
        finally:
            cloudpickle.unregister_pickle_by_value(m)
        want = {"f": m.make(2.0)(1.5), "fence": [m.Fence.kind, m.Fence(5.0).twice, True]}
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("byvalue_mod", None)
    (tmp_path / "byvalue_mod.py").unlink()      # the child cannot import it: by value only
    path = tmp_path / "payload.pkl"
    path.write_bytes(payload)
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["lean"], "cloudpickle was imported to load the pickle"
    assert got["f"] == want["f"]
    assert got["p"] == "Point(x=-4.0, y=1.0, tags=())"
    assert got["p_eq"] is True              # compare=False on tags: the dataclass's own eq
    assert got["same_class"] is True
    assert got["fence"] == want["fence"]
    assert got["doc"] == "a class with a method, a class attribute and a property"
