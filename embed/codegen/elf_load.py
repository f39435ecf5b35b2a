"""Object code loaded without LLVM (issue 30, start-up): the engine's own ELF relocator.

A shipped mode is object code (``embed.codegen.native.NativeFunction``: what llvmlite's
``emit_object`` wrote at build time; ``embed.codegen.llvm_object``: symengine's).  Loading it
through llvmlite's MCJIT means importing ``llvmlite.binding``, which maps the 180 MB LLVM
library: about 0.1 s of an FMU's start.  ``load`` does what MCJIT's RuntimeDyld does with
such a file, for the little these files use, in Python: it places the sections LLVM
allocates (code, constants, zeroed data) in fresh pages (faulted in by the mmap that maps
them, outside the GIL), applies the relocations there, resolves undefined symbols as MCJIT
does (the C math and C library functions the engine makes known, then the process's own
symbols, then the functions loaded before: ``publish``), and makes the code pages
executable and no longer writable.  Object code with no writable data (no
memo: a pure function of its arguments) is placed once per process: the next instance of
an FMU (a study's next case) calls the same pages.  The machine code is the file's, byte for
byte but for the addresses the relocations write, so every result is the same bit for bit
(``tests/test_elf_load.py`` checks each shipped function against MCJIT's load of it).

Only what it knows is loaded: a 64-bit little-endian x86-64 relocatable ELF file whose
allocated sections are code, data or zeroed data (no constructors), with RELA relocations
of the kinds 64, PC64, PC32, PLT32, 32 and 32S whose values fit, against symbols it can
resolve.  Anything else (another architecture, a GOT, a symbol not found) returns None and
the caller loads the file through MCJIT as before; the unwind tables (.eh_frame) are not
loaded: nothing unwinds through these functions.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
import threading

from .loader_thread import SharedLock

SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 1, 2, 4, 8
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHN_UNDEF, SHN_ABS = 0, 0xFFF1
R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64 = 1, 2, 4, 10, 11, 24
PAGE = mmap.PAGESIZE
MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0x8000)   # (Linux's; in mmap from 3.10)

# MCJIT's own resolution (embed.codegen.native._llvm): these from libm / libc by name, the
# rest from the process
LIBM_NAMES = ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "pow")
LIBC_NAMES = ("memcpy", "memcmp")

_LOCK = SharedLock(threading.RLock())   # (a step may wait for it: loader_thread.SharedLock)
_PUBLISHED = {}        # name -> address of the global functions loaded so far (any loader)
_LIBS = {}
_KEEP = []             # the pages of every object loaded: they live as long as the process
_PURE = {}             # object code without writable data -> its symbols: placed once


def _library(name: str, soname: str):
    """The C library ``name`` by its glibc soname (``find_library`` runs ldconfig: 10 ms)."""
    try:
        return ctypes.CDLL(soname)
    except OSError:
        import ctypes.util as util   # (with subprocess, tempfile: 10 ms of a C master's start)
        return ctypes.CDLL(util.find_library(name))


def _libs():
    if not _LIBS:
        _LIBS["m"] = _library("m", "libm.so.6")
        _LIBS["c"] = _library("c", "libc.so.6")
        _LIBS["process"] = ctypes.CDLL(None)
        libc = _LIBS["c"]
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long)
        libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return _LIBS


def publish(name: str, address: int) -> None:
    """Make function ``name`` (loaded at ``address`` by either loader) known to later loads."""
    with _LOCK:
        _PUBLISHED.setdefault(name, address)


def published() -> dict:
    with _LOCK:
        return dict(_PUBLISHED)


def external(name: str):
    """The address MCJIT would give the undefined symbol ``name``, or None."""
    libs = _libs()
    lib = libs["m"] if name in LIBM_NAMES else libs["c"] if name in LIBC_NAMES else \
        libs["process"]
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _sections(obj: bytes):
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    e_type, e_machine = struct.unpack_from("<HH", obj, 0x10)
    if e_type != 1 or e_machine != 62:                       # ET_REL, EM_X86_64
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]


def _layout(sections):
    """{section index: offset} of the allocated sections (code first, then data), the code's
    size rounded to pages, and the total size; None for a section kind not handled."""
    code, data = [], []
    for i, sh in enumerate(sections):
        kind, flags = sh[1], sh[2]
        if not flags & SHF_ALLOC or kind not in (SHT_PROGBITS, SHT_NOBITS):
            if flags & SHF_ALLOC and kind not in (0x70000001,):      # .eh_frame: skipped
                return None
            continue
        (code if flags & SHF_EXECINSTR else data).append(i)
    where, at = {}, 0
    for group in (code, data):
        for i in group:
            align = max(sections[i][8], 1)
            at = -(-at // align) * align
            where[i] = at
            at += sections[i][5]
        if group is code:
            at = -(-at // PAGE) * PAGE
            code_size = at
    return where, code_size, max(at, 1)


def load(obj: bytes, resolve=None):
    """{global symbol: address} of the object file ``obj`` placed and relocated, or None
    where it cannot be (the caller then loads it through MCJIT).  ``resolve(name)``: the
    address of an undefined symbol neither published nor external, or None."""
    with _LOCK:
        same = _PURE.get(obj)
    if same is not None:
        return dict(same)
    sections = _sections(obj)
    if sections is None:
        return None
    laid = _layout(sections)
    if laid is None:
        return None
    where, code_size, size = laid
    symtab = next((sh for sh in sections if sh[1] == SHT_SYMTAB), None)
    if symtab is None:
        return None
    strtab = sections[symtab[6]]
    libs = _libs()
    with _LOCK:
        # the pages faulted in here, by the kernel in a call that drops the GIL, not one by
        # one by the writes below, which hold it: a fresh page costs about 5 us here, 20 of
        # them 0.1 ms of the loader thread's Python that a step waits out (issue 30, tails)
        base = libs["c"].mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_POPULATE, -1, 0)
        if base in (None, ctypes.c_void_p(-1).value):
            return None
        got = _placed(obj, sections, where, symtab, strtab, base, size, code_size, resolve)
        if got is None:
            libs["c"].munmap(base, size)
            return None
        _KEEP.append((base, size))
        defined, public = got
        for name in public:
            if name.startswith("embed_"):
                _PUBLISHED.setdefault(name, defined[name])
        if not any(sh[2] & SHF_WRITE and sh[2] & SHF_ALLOC for sh in sections):
            _PURE[bytes(obj)] = dict(defined)
    return defined


def _placed(obj, sections, where, symtab, strtab, base, size, code_size, resolve):
    """``load``'s work in the pages at ``base``: ({named symbol: address}, the global
    ones' names), or None."""
    image = memoryview((ctypes.c_char * size).from_address(base)).cast("B")
    try:
        got = _image(obj, sections, where, symtab, strtab, base, image, resolve)
    finally:
        image.release()
    if got is None:
        return None
    defined, public = got
    if code_size and _libs()["c"].mprotect(base, code_size,
                                           mmap.PROT_READ | mmap.PROT_EXEC) != 0:
        return None
    return defined, public


_SYM, _RELA = struct.Struct("<IBBHQQ"), struct.Struct("<QQq")
_U64, _I32, _U32 = struct.Struct("<Q"), struct.Struct("<i"), struct.Struct("<I")
_EXTERNAL = {}         # name -> address of an external symbol (``external``), once looked up


def _image(obj, sections, where, symtab, strtab, base, image, resolve):
    """Write the allocated sections, relocated, into ``image`` (the pages at ``base``; the
    tables read through a memoryview of ``obj``: no copy of them made): ({named symbol:
    address}, the global ones' names), or None (``_placed``; the table entries read with
    ``struct.iter_unpack``, external symbols looked up once a process: 2-3x faster than one
    ``unpack_from`` per entry, the same bytes)."""
    view = memoryview(obj)
    for i, at in where.items():
        sh = sections[i]
        if sh[1] == SHT_PROGBITS:
            image[at:at + sh[5]] = view[sh[4]:sh[4] + sh[5]]
    symbols, defined, public = [], {}, set()
    names = strtab[4]
    for name_at, info, _, shndx, value, _ in _SYM.iter_unpack(
            view[symtab[4]:symtab[4] + symtab[5] // 24 * 24]):
        name = obj[names + name_at:obj.index(b"\0", names + name_at)].decode() \
            if name_at else ""
        if shndx == SHN_UNDEF:
            addr = None
            if name:
                addr = _PUBLISHED.get(name) or _EXTERNAL.get(name)
                if addr is None:
                    addr = external(name)
                    if addr:
                        _EXTERNAL[name] = addr
                    elif resolve:
                        addr = resolve(name)
        elif shndx == SHN_ABS:
            addr = value
        elif shndx in where:
            addr = base + where[shndx] + value
            if name and info >> 4 in (1, 2):               # GLOBAL, WEAK
                defined[name] = addr
                public.add(name)
            elif name and info & 0xF in (1, 2):            # a local OBJECT or FUNC (MCJIT
                defined.setdefault(name, addr)             # finds those by name too)
        else:
            addr = None
        symbols.append(addr)
    n_sym = len(symbols)
    for sh in sections:
        if sh[1] != SHT_RELA or sh[7] not in where:
            continue
        target = where[sh[7]]
        for offset, info, addend in _RELA.iter_unpack(view[sh[4]:sh[4] + sh[5] // 24 * 24]):
            s = symbols[info >> 32] if info >> 32 < n_sym else None
            if s is None:
                return None
            at = target + offset
            kind = info & 0xFFFFFFFF
            if kind == R_64:
                _U64.pack_into(image, at, (s + addend) & 0xFFFFFFFFFFFFFFFF)
            elif kind in (R_PC32, R_PLT32, R_32S):
                v = s + addend - (base + at if kind != R_32S else 0)
                if not -0x80000000 <= v < 0x80000000:
                    return None
                _I32.pack_into(image, at, v)
            elif kind == R_PC64:
                _U64.pack_into(image, at, (s + addend - base - at) & 0xFFFFFFFFFFFFFFFF)
            elif kind == R_32:
                v = s + addend
                if not 0 <= v < 0x100000000:
                    return None
                _U32.pack_into(image, at, v)
            else:
                return None
    return defined, public
