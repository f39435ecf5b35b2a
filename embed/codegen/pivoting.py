"""The partition of the speeds (gillespie2005 eq 11) as a looped function that compiled programs
call: the dependent speeds by modified Gram-Schmidt with column pivoting on B, later speeds
first (``partition.partition``'s choice, ties within ``TIE`` to the first), and the
permutation they give.

``embed_partition(B, out, m, n, keep)``: B (m x n by rows); out = [|diag R| (m)..., dep
(m, ascending)..., perm (n) = [ind..., dep...]..., iperm (n)...], the indices as doubles;
keep = 1 - TIE.  Each value is computed by the operations, in the order, of the straight-line
code it replaces (``terms_algebra.partitioned``): the same results, bit for bit.  That code
is O(n m^2) operations with a select for each column and pivot: 2,000 of the 40-link chain's
entry, half of the machine code a step switching into the mode reads cold; this one is a few
kilobytes, shared by every program.  A nan in B gives a nan |diag R| (the caller declines);
the indices stay in range whatever B holds.
"""

from __future__ import annotations

from ..base.lazy import LazyModule

ir = LazyModule("llvmlite.ir")   # imported when a helper is built: not at an FMU's start

from .ldlt import _loop

NAME = "embed_partition"


def module():
    """The IR text of ``embed_partition`` (the module docstring)."""
    dbl, i64, ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
    mod = ir.Module(NAME)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, i64, dbl]), NAME)
    B, out, m, n, keep = fn.args
    B.add_attribute("noalias")
    out.add_attribute("noalias")
    sqrt = ir.Function(mod, ir.FunctionType(dbl, [dbl]), "llvm.sqrt.f64")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero, one = ir.Constant(i64, 0), ir.Constant(i64, 1)
    fzero, fone = ir.Constant(dbl, 0.0), ir.Constant(dbl, 1.0)
    cols = b.alloca(dbl, b.mul(n, m))        # column j of B reversed (speed n - 1 - j), by columns
    chosen, norms, e = b.alloca(dbl, n), b.alloca(dbl, n), b.alloca(dbl, m)
    best = b.alloca(dbl)              # the first norm >= thr, else the last (its index: ``pick``)
    ni = b.sub(n, m)
    last = b.sub(n, one)

    def at(q, k):
        return b.gep(q, [k], inbounds=True, source_etype=dbl)

    def ld(q, k):
        return b.load(at(q, k), typ=dbl)

    def col(j, k):
        return at(cols, b.add(b.mul(j, m), k))

    def dot(x, y):
        """x_0 y_0 + x_1 y_1 + ... (the first product the start: ``Program.dot`` folds + 0)"""
        return _loop(b, one, m, lambda k, acc: b.fadd(acc, b.fmul(ld(x, k), ld(y, k))),
                     b.fmul(ld(x, zero), ld(y, zero)))

    def start(j, _):
        _loop(b, zero, m, lambda k, _: b.store(ld(B, b.add(b.mul(k, n), b.sub(last, j))),
                                               col(j, k)))
        b.store(fzero, at(chosen, j))

    _loop(b, zero, n, start)

    def rnd(r, _):
        def norm(j, _):
            c = b.fcmp_unordered("une", ld(chosen, j), fzero)
            b.store(b.select(c, ir.Constant(dbl, -1.0), dot(col(j, zero), col(j, zero))),
                    at(norms, j))
        _loop(b, zero, n, norm)

        def top(j, acc):              # max with nan carried (``native``'s "max")
            x = ld(norms, j)
            s = b.select(b.fcmp_ordered(">", acc, x), acc, x)
            return b.select(b.fcmp_unordered("uno", acc, acc), acc, s)
        thr = b.fmul(_loop(b, one, n, top, ld(norms, zero)), keep)
        b.store(ld(norms, last), best)

        def pick(j, k):
            x = ld(norms, j)
            below = b.fcmp_ordered(">", thr, x)
            b.store(b.select(below, b.load(best, typ=dbl), x), best)
            return b.select(below, k, j)
        k = _loop(b, zero, n, pick, last, down=True)
        d = b.call(sqrt, [b.load(best, typ=dbl)])
        _loop(b, zero, m, lambda i, _: b.store(b.fdiv(b.load(col(k, i), typ=dbl), d),
                                               at(e, i)))

        def update(j, _):
            p = dot(e, col(j, zero))
            _loop(b, zero, m, lambda i, _: b.store(
                b.fsub(b.load(col(j, i), typ=dbl), b.fmul(p, ld(e, i))), col(j, i)))
        _loop(b, zero, n, update)
        b.store(fone, at(chosen, k))
        b.store(d, at(out, r))
        b.store(b.sitofp(b.sub(last, k), dbl), at(out, b.add(m, r)))

    _loop(b, zero, m, rnd)
    dep = b.gep(out, [m], inbounds=True, source_etype=dbl)

    def sweep(i, _):                  # dep ascending (a bubble sort: m <= 3)
        def swap(j, _):
            x, y = ld(dep, j), ld(dep, b.add(j, one))
            c = b.fcmp_ordered(">", x, y)
            b.store(b.select(c, y, x), at(dep, j))
            b.store(b.select(c, x, y), at(dep, b.add(j, one)))
        _loop(b, zero, b.sub(b.sub(m, one), i), swap)
    _loop(b, zero, m, sweep)
    perm, iperm = (b.gep(out, [b.add(b.add(m, m), o)], inbounds=True, source_etype=dbl)
                   for o in (zero, n))

    def independent(k, _):            # the k-th speed not in dep
        def past(i, j):
            return b.fadd(j, b.fsub(fone, b.uitofp(b.fcmp_ordered(">", ld(dep, i), j), dbl)))
        b.store(_loop(b, zero, m, past, b.sitofp(k, dbl)), at(perm, k))
    _loop(b, zero, ni, independent)
    _loop(b, zero, m, lambda i, _: b.store(ld(dep, i), at(perm, b.add(ni, i))))

    def inverse(j, _):                # iperm[perm[k]] = k
        fj = b.sitofp(j, dbl)

        def count(i, acc):            # (sum of n_i + i where j is dep[i], of hits, of dep < j)
            x = ld(dep, i)
            hit = b.uitofp(b.fcmp_ordered("==", fj, x), dbl)
            sums = [b.fadd(b.extract_value(acc, 0), b.fmul(hit, b.sitofp(b.add(ni, i), dbl))),
                    b.fadd(b.extract_value(acc, 1), hit),
                    b.fadd(b.extract_value(acc, 2), b.uitofp(b.fcmp_ordered(">", fj, x), dbl))]
            for k, v in enumerate(sums):
                acc = b.insert_value(acc, v, k)
            return acc
        acc = _loop(b, zero, m, count, ir.Constant(ir.LiteralStructType([dbl] * 3),
                                                    [0.0, 0.0, 0.0]))
        b.store(b.select(b.fcmp_unordered("une", b.extract_value(acc, 1), fzero),
                         b.extract_value(acc, 0), b.fsub(fj, b.extract_value(acc, 2))),
                at(iperm, j))
    _loop(b, zero, n, inverse)
    b.ret_void()
    return str(mod)
