"""A function of symengine's "llvm" backend as the object code it already is (issue 30).

symengine's ``Lambdify(..., backend="llvm")`` compiles its expressions with MCJIT into one
object file (ELF on Linux) holding ``void symengine_func(const double *in, double *out)``
and pickles as that file (``LLVMDouble.__reduce__``: its last argument); loading it needs
symengine.  ``native_of_llvm`` takes the same bytes and loads them into the engine's own
MCJIT (``embed.codegen.native.NativeFunction``): the same machine code, the same bits, no
symengine.  The file is used only where every symbol it leaves undefined is one of the C
math library's (what symengine's visitor calls: sin, pow, ...), which the process resolves
as symengine's own engine does; else (another format, another call) ``None``: the function
then pickles as symengine's.
"""

from __future__ import annotations

import ctypes
import struct

ENTRY = "symengine_func"        # symengine's llvm_double.cpp names its function so
_LIBS = []


def _resolvable(name: str) -> bool:
    """Whether the C math or C library exports ``name`` (how MCJIT resolves it)."""
    if not _LIBS:
        import ctypes.util as util
        _LIBS.extend(ctypes.CDLL(util.find_library(n)) for n in ("m", "c"))
    return any(hasattr(lib, name) for lib in _LIBS)


def elf_symbols(obj: bytes):
    """(defined, undefined) symbol names of the 64-bit little-endian ELF object ``obj``, or
    None if it is not one."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                for i in range(shnum)]
    defined, undefined = set(), set()
    for sh in sections:
        if sh[1] != 2:                                   # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for k in range(sh[5] // 24):
            name_at, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, sh[4] + 24 * k)
            if not name_at:
                continue
            start = strtab[4] + name_at
            name = obj[start:obj.index(b"\0", start)].decode()
            (undefined if shndx == 0 else defined).add(name)
    return defined, undefined


def native_of_llvm(fn, n_in: int, n_out: int):
    """The ``LambdaNative`` (kept argument address, ``embed.codegen.lambda_order``) running
    the object code of symengine's LLVM function ``fn``, or None where it cannot stand alone."""
    try:
        obj = fn.__reduce__()[1][-1]
    except Exception:  # noqa: BLE001 - another symengine's pickle: kept as it is
        return None
    if not isinstance(obj, bytes):
        return None
    symbols = elf_symbols(obj)
    if symbols is None or ENTRY not in symbols[0] or \
            not all(_resolvable(s) for s in symbols[1]):
        return None
    from .lambda_order import LambdaNative
    from .native import NativeFunction
    return LambdaNative(NativeFunction(obj, ENTRY, n_in, n_out, load=False))
