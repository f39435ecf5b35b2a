"""Start-up without LLVM (issue 30): shipped object code placed by the engine's own ELF
relocator (``embed.codegen.elf_load``) computes MCJIT's bits; what it does not know is left
to MCJIT; an FMU steps bit for bit as with MCJIT without importing ``llvmlite.binding``;
the shipped files' key (``embed.base.host_facts``) reads versions and the CPU cheaply and
misses when a version changes; the FMU's modules ship as checked-hash bytecode, never
used for an edited source.  Start-up figures: benchmarks/bench_startup.py."""

import json
import os
import pickle
import struct
import subprocess
import sys
from importlib.metadata import version as metadata_version

import numpy as np
import pytest

from embed.base import host_facts, shipped
from embed.codegen import elf_load, native

from test_llvm_object import library_after, llvm_functions
from test_startup import run


def native_functions(obj, found, seen):
    """Every NativeFunction reachable from ``obj``."""
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, np.ndarray)):
        return found
    seen.add(id(obj))
    if isinstance(obj, native.NativeFunction):
        found.append(obj)
        return found
    items = list(obj.values()) if isinstance(obj, dict) else list(obj) \
        if isinstance(obj, (list, tuple, set)) else \
        list(getattr(obj, "__dict__", {}).values()) + \
        [getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)]
    for v in items:
        native_functions(v, found, seen)
    return found


def test_placed_functions_compute_mcjits_bits():
    """Every compiled function of pendulum_belt's and top's runs (our programs, symengine's
    LLVM functions, top's LDL^T helper call) placed again from its object code by
    ``elf_load``: the same outputs, bit for bit, as MCJIT's load on 200 random vectors over
    1e-3..1e3 with zeros (the ProgramModes' step functions, which read their state
    buffers, are compared by the FMU runs below)."""
    fns = []
    for name in ("pendulum_belt", "top"):
        lib = library_after(name, 1.0)
        parts = [getattr(lib, k) for k in type(lib).__slots__ if hasattr(lib, k)]
        found = native_functions(parts, [], set())
        # symengine's LLVM functions, as the object code they pickle as (llvm_object)
        found += [pickle.loads(pickle.dumps(f)).native
                  for f in llvm_functions([lib.terms, lib.entry, lib.modes], [])]
        fns += found
    plain = {id(f): f for f in fns if not f.exports and not f.memo_size}.values()
    assert len(plain) >= 10 and any(b"embed_ldlt" in f.obj for f in fns)
    rng = np.random.default_rng(3)
    for fn in plain:
        placed = elf_load.load(fn.obj, native._resolve)
        assert placed is not None, fn.name
        call = native._CFUNC(placed[fn.name])
        v = rng.normal(size=(200, fn.n_in)) * 10.0 ** rng.uniform(-3, 3, (200, 1))
        v[::17] = 0.0
        for x in v:
            x = np.ascontiguousarray(x)
            want, got = np.empty(max(fn.n_out, 1)), np.empty(max(fn.n_out, 1))
            fn.unsafe_real(x, want)
            call(x.ctypes.data, got.ctypes.data)
            assert want.tobytes() == got.tobytes(), fn.name
    # the helper object code an FMU ships is placed too (top names embed_ldlt_exact)
    assert any(name.startswith("embed_ldlt") for name in native.HELPER_OBJECTS)


def test_what_it_does_not_know_is_left_to_mcjit():
    """Not an ELF object, another machine, an undefined symbol nobody exports, a relocation
    kind it does not apply (a GOT entry): ``load`` returns None (the caller loads through
    MCJIT) and nothing is published."""
    from embed.codegen.program import Program
    prog = Program(2)
    out = prog.mul(prog.unary("sin", 0), prog.binary("pow", 1, prog.const(2.5)))
    fn = native.compile_program(prog, [out], "a test program")
    obj = fn.obj
    assert elf_load.load(obj) is not None
    before = elf_load.published()
    assert elf_load.load(b"not an object") is None
    other = bytearray(obj)
    struct.pack_into("<H", other, 0x12, 183)                    # EM_AARCH64
    assert elf_load.load(bytes(other)) is None
    assert elf_load.load(obj.replace(b"\0sin\0", b"\0zzz\0")) is None
    sections = elf_load._sections(obj)
    rela = [sh for sh in sections if sh[1] == elf_load.SHT_RELA and sh[5]]
    got = bytearray(obj)
    for sh in rela:                       # every relocation made a GOTPCREL (kind 9)
        for k in range(sh[5] // 24):
            info, = struct.unpack_from("<Q", got, sh[4] + 24 * k + 8)
            struct.pack_into("<Q", got, sh[4] + 24 * k + 8, (info >> 32 << 32) | 9)
    if rela:
        assert elf_load.load(bytes(got)) is None
    assert elf_load.published() == before


@pytest.mark.parametrize("name", ["top", "disk_ramp"])
def test_fmu_steps_without_llvm_bit_for_bit(fmu_dir, tmp_path, name, monkeypatch):
    """The FMU 8 s with its events (disk_ramp) or its helper-calling program mode (top), in
    fresh processes: placed by ``elf_load`` (llvmlite.binding never imported) and loaded by
    MCJIT (EMBED_OBJECT_LOADER=mcjit): every output at every point the same bits.  The FMU
    holds the code of each of its modules: its own in the bytecode bundle, pythonfmu's as
    checked-hash pycs (``fmu_files.resources``)."""
    from fmu_files import resources
    fmu = fmu_dir / f"{name}.fmu"
    assert resources(fmu)["embed"]
    import test_startup
    monkeypatch.setattr(test_startup, "RUN", test_startup.RUN.replace(
        '"imported": [m for m in HEAVY if m in sys.modules]',
        '"imported": [m for m in HEAVY + ("llvmlite.binding",) if m in sys.modules]'))
    loaded = {"elf": [], "mcjit": []}
    placed, log = run(fmu, tmp_path, 8.0, loaded["elf"])
    monkeypatch.setenv(native.LOADER_ENV, "mcjit")
    jit, _ = run(fmu, tmp_path, 8.0, loaded["mcjit"])
    assert loaded == {"elf": [], "mcjit": ["llvmlite.binding"]}, loaded
    assert not any("shipped" in line for line in log), log
    if name == "disk_ramp":
        assert placed["event_count"][-1] > 0
    for field in placed.dtype.names:
        np.testing.assert_array_equal(placed[field], jit[field], err_msg=field)


def test_versions_read_cheaply_and_a_changed_version_misses(tmp_path):
    """``host_facts.version`` gives importlib.metadata's version for the packages the key
    names; a package upgraded (its dist-info renamed) is another key, and the file formed
    for the old one is refused naming the package.  The CPU's facts name its features."""
    for p in shipped.PACKAGES:
        assert host_facts.version(p) == metadata_version(p), p
    facts = host_facts.cpu()
    assert facts["cpu"] and len(facts["cpu_features"]) >= 16
    assert host_facts.llvm().startswith(f"llvmlite {metadata_version('llvmlite')}")
    site = tmp_path / "site"
    (site / "fakepkg_ab").mkdir(parents=True)
    (site / "fakepkg_ab" / "__init__.py").write_text("")
    (site / "fakepkg_ab-1.0.dist-info").mkdir()
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); "
            "from embed.base import host_facts, shipped; "
            "shipped.PACKAGES += ('fakepkg_ab',); "
            "print(json.dumps(shipped.key('m', {}, 'd', cpu=True)))")

    def key():
        res = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    old = key()
    assert old["fakepkg_ab"] == "1.0" and old["cpu"] == facts["cpu"]
    path = tmp_path / "objects.pkl"
    shipped.write(path, old, {"x": 1})
    os.rename(site / "fakepkg_ab-1.0.dist-info", site / "fakepkg_ab-1.1.dist-info")
    new = key()
    assert new == dict(old, fakepkg_ab="1.1")
    obj, why = shipped.read(path, new)
    assert obj is None and "another fakepkg_ab ('1.0'" in why and "here '1.1'" in why


def test_bytecode_is_used_only_for_its_own_source(tmp_path):
    """A checked-hash pyc (``fmu_src.builder.bytecode``) is used while its source is
    unchanged and ignored once the source is edited (the edit runs)."""
    from fmu_src.builder.bytecode import pyc_name, pyc_of
    (tmp_path / "pkg").mkdir()
    src = b"X = 1\n"
    (tmp_path / "pkg" / "mod.py").write_bytes(src)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / pyc_name("pkg/mod.py")).write_bytes(pyc_of("pkg/mod.py", src))
    code = "import sys; sys.path.insert(0, sys.argv[1]); from pkg import mod; print(mod.X)"

    def imported():
        res = subprocess.run([sys.executable, "-v", "-c", code, str(tmp_path)],
                             capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        assert res.returncode == 0, res.stderr[-2000:]
        used = any("matches" in line and "mod.py" in line for line in res.stderr.splitlines())
        return res.stdout.strip(), used

    assert imported() == ("1", True)
    (tmp_path / "pkg" / "mod.py").write_bytes(b"X = 2\n")
    assert imported() == ("2", False)
