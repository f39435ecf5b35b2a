"""What an FMU's start no longer pays (issue 30, benchmarks/bench_startup.py): pythonfmu's
builder imported only when asked for, the sources' digest walked without ``Path.rglob``
(the same digest, and a changed byte still changes it), the cyclic collector paused and
restored as it was, and an offline run that does not wait for its background workers."""

import gc
import hashlib
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pythonfmu

from embed.base import shipped
from fmu_src.builder.bytecode import lazy_pythonfmu_init
from fmu_src.runtime.gc_pause import gc_paused

ROOT = Path(__file__).resolve().parents[1]


def rglob_digest(root, packages):
    """The digest as main computed it before (Path.rglob, sorted Paths): the reference."""
    h = hashlib.sha256()
    root = Path(root)
    for pkg in sorted(packages):
        for f in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def test_sources_digest_is_rglobs_and_sees_a_changed_byte(tmp_path):
    for pkg in ("embed", "fmu_src"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "embed" / "a-b.py").write_text("x = 1\n")      # '-' sorts before '/'
    (tmp_path / "embed" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "embed" / "__pycache__" / "stale.py").write_text("ignored\n")
    packages = ("fmu_src", "embed")
    before = shipped.sources_digest(tmp_path, packages)
    assert before == rglob_digest(tmp_path, packages)
    f = tmp_path / "embed" / "base" / "shipped.py"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 1
    f.write_bytes(bytes(data))
    after = shipped.sources_digest(tmp_path, packages)
    assert after != before and after == rglob_digest(tmp_path, packages)


def test_pythonfmu_builder_lazy_with_every_name(tmp_path):
    pkg = tmp_path / "pythonfmu"
    shutil.copytree(Path(pythonfmu.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "resources"))
    init = pkg / "__init__.py"
    original = init.read_bytes()
    lazy = lazy_pythonfmu_init(original)
    assert lazy is not None and b"from .builder import" not in lazy.split(b"def __getattr__")[0]
    init.write_bytes(lazy)
    probe = ("import sys, types, pythonfmu; names = sorted(n for n, v in vars(pythonfmu).items() "
             "if not n.startswith('_') and not isinstance(v, types.ModuleType)); "
             "print('pythonfmu.builder' in sys.modules, names); "
             "from pythonfmu import FmuBuilder; print(FmuBuilder.__module__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    eager = sorted(n for n, v in vars(pythonfmu).items()        # the installed package's
                   if not n.startswith("_") and not isinstance(v, types.ModuleType))
    assert "FmuBuilder" in eager
    assert out[0] == f"False {sorted(set(eager) - {'FmuBuilder'})}"   # the rest eager
    assert out[1] == "pythonfmu.builder"
    assert lazy_pythonfmu_init(b"from .builder import Other\n") is None   # another pythonfmu


def test_gc_paused_restores_the_collector_as_it_was():
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with gc_paused():
        made = [[i] for i in range(100)]
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)     # what the block made: frozen
    gc.unfreeze()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()        # a master that turned it off keeps it off
    finally:
        gc.enable()
