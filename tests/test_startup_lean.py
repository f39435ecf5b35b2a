"""What an FMU's start no longer pays (issue 30, benchmarks/bench_startup.py): pythonfmu's
builder imported only when asked for, the sources' digest walked without ``Path.rglob``
(the same digest, and a changed byte still changes it), the cyclic collector paused and
restored as it was, and an offline run that does not wait for its background workers."""

import gc
import hashlib
import importlib.util
import os
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
    """The digest written another way (Path.rglob, sorted Paths, each file's PEP 552 source
    hash): the reference."""
    h = hashlib.sha256()
    root = Path(root)
    for pkg in sorted(packages):
        for f in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode() + b"\0"
                         + importlib.util.source_hash(f.read_bytes()) + b"\0")
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


def test_bundle_serves_a_module_only_for_its_own_source(tmp_path):
    """The FMU's modules from one file (``embed.base.bundle`` through the slave's
    ``fmu_src.runtime.bundle``, written by
    ``bytecode.bundle``): the bundled code runs while the module's source is the one it was
    made from (a bundle whose code says X = 3 for the source X = 1 gives 3: the bundle's code
    ran), the edited source runs once it changed (X = 2), with the module's file and package
    as from the path finder."""
    import marshal

    from embed.base.bundle import pack, unpack
    from fmu_src.builder.bytecode import bundle
    res = tmp_path / "resources"
    members = {"resources/fmu_src_ab12/__init__.py": b"",
               "resources/fmu_src_ab12/runtime/__init__.py": b"",
               "resources/fmu_src_ab12/runtime/bundle.py":
                   (ROOT / "fmu_src" / "runtime" / "bundle.py").read_bytes(),
               "resources/embed_ab12/__init__.py": b"",
               "resources/embed_ab12/base/__init__.py": b"",
               "resources/embed_ab12/base/bundle.py":
                   (ROOT / "embed" / "base" / "bundle.py").read_bytes(),
               "resources/embed_ab12/mod.py": b"X = 1\n"}
    members["resources/fmu_src_ab12/runtime/bundle.py"] = members[
        "resources/fmu_src_ab12/runtime/bundle.py"].replace(b"from embed.", b"from embed_ab12.")
    for name, data in members.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    name, data = bundle(members)
    table = unpack(data)
    assert set(table) == {"fmu_src_ab12", "fmu_src_ab12.runtime", "fmu_src_ab12.runtime.bundle",
                          "embed_ab12", "embed_ab12.base", "embed_ab12.base.bundle",
                          "embed_ab12.mod"}
    is_package, rel, digest, _ = table["embed_ab12.mod"]
    table["embed_ab12.mod"] = (is_package, rel, digest,
                               marshal.dumps(compile("X = 3\n", rel, "exec")))
    (tmp_path / name).write_bytes(pack(table))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from fmu_src_ab12.runtime.bundle import install; assert install(); "
            "import embed_ab12.mod as m; print(m.X, m.__file__, m.__package__)")

    def imported():
        out = subprocess.run([sys.executable, "-c", code, str(res)], capture_output=True,
                             text=True, timeout=60,
                             env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()

    where = str(res / "embed_ab12" / "mod.py")
    assert imported() == ["3", where, "embed_ab12"]
    (res / "embed_ab12" / "mod.py").write_bytes(b"X = 2\n")
    assert imported() == ["2", where, "embed_ab12"]
