"""A mode's RK4 step, its Newton correction and its right-hand side as straight-line programs
(``embed.codegen.program``, compiled by ``embed.codegen.native``): eq 15-16 solved at every
stage by an unrolled LDL^T (``linear_program``), the stages spliced from templates whose common
subexpressions are eliminated once.
"""

from __future__ import annotations

from ..base.errors import CompilationError
from ..codegen.program import Program
from ..codegen.registers import Memo
from ..model import symbols

def _template(args, exprs, cse=True):
    """``exprs`` of ``args`` as a program of its own, to be spliced in (``_splice``) once for
    each stage: common subexpressions eliminated once, not at every stage."""
    prog = Program(len(args))
    return prog, prog.emit(exprs, {a: i for i, a in enumerate(args)}, cse)


def _splice(prog, template, regs):
    """Append ``template`` = (program, outputs) to ``prog`` with its arguments in ``regs``;
    returns the registers of its outputs."""
    tp, outs = template
    if len(regs) != tp.n_in:
        raise CompilationError(f"template of {tp.n_in} arguments given {len(regs)}")
    where = list(regs) + [None] * len(tp.ops)
    n_in = tp.n_in
    for k, (op, a, b) in enumerate(tp.ops):
        if op == "const":
            r = prog.const(a)
        elif b is None:
            r = prog.unary(op, where[a])
        else:
            r = prog.binary(op, where[a], where[b])
        where[n_in + k] = r
    return [where[o] for o in outs]


def rk4_program(nx, n_rest, stage, final, correct=None):
    """The classical RK4 step (``modes.rk4_scheme``) as a program calling ``stage`` four times
    and ``final`` once, each a program of [t, x..., rest...] compiled once as a function of
    its own (``Program.call``; ``stage`` returns xdot first, then what ``final`` may take
    from it by calling it too): arguments [t, h, x..., rest...], outputs [x(t+h)...,
    final(t+h, x(t+h))..., sum |x_i(t+h)|] (the composed step's layout, ``CompiledMode``).
    ``final``'s last nx outputs are xdot at its arguments (the stage it calls), which the
    step remembers (``program.Memo``): the next step's first stage, if it starts there with
    the same arguments, is not evaluated again (first same as last; the result is the same
    to the bit), nor that of a step from the state an event entered
    (``TermsProgramMode.enter``).
    ``correct``, a program of the same arguments returning x, is applied to x(t+h) first
    (``newton_program``)."""
    prog = Program(2 + nx + n_rest)
    prog.memo = Memo(stage, nx)
    t, h = 0, 1
    xr, rest = list(range(2, 2 + nx)), list(range(2 + nx, 2 + nx + n_rest))

    def f(tt, xs, memo=False):  # the stage's first nx outputs are xdot (then its extras)
        return prog.call(stage, [tt] + xs + rest, memo)[:nx]

    half = prog.mul(h, prog.const(0.5))
    th, t1 = prog.add(t, half), prog.add(t, h)
    k1 = f(t, xr, memo=True)
    k2 = f(th, [prog.add(a, prog.mul(half, b)) for a, b in zip(xr, k1)])
    k3 = f(th, [prog.add(a, prog.mul(half, b)) for a, b in zip(xr, k2)])
    k4 = f(t1, [prog.add(a, prog.mul(h, b)) for a, b in zip(xr, k3)])
    sixth = prog.div(h, prog.const(6.0))
    two = prog.const(2.0)
    xn = [prog.add(xr[i], prog.mul(sixth, prog.add(prog.add(k1[i], k4[i]),
                                                  prog.mul(two, prog.add(k2[i], k3[i])))))
          for i in range(nx)]
    if correct is not None:
        xn = prog.call(correct, [t1] + xn + rest)
    mon = prog.call(final, [t1] + xn + rest)
    prog.remember([t1] + xn + rest, mon[-nx:])
    mon = mon[:-nx]
    prog.exports["monitors"] = prog.subs.index(final)      # the monitors alone, at x
    total = prog.const(0.0)
    for r in xn:
        total = prog.add(total, prog.unary("fabs", r))
    return prog, xn + mon + [total]


def newton_program(q, nx, params, n_rest, phi_rows):
    """One Newton step toward Phi(q) = 0 with a fresh chart (haug_pavesic2023 eq 13-14,
    U = Phi_q^T, B = (Phi_q U)^-1): q <- q - flag Phi_q^T (Phi_q Phi_q^T)^-1 Phi(q), the
    speeds unchanged (the dependent ones follow from the embedding at the new q, eq 12), as a
    program of [t, x..., rest...] (x = [q, u_ind], ``nx`` long) whose ``rest`` begins with the parameters ``params`` and
    ends with the flag (1: correct, 0: not); ``phi_rows``: [Phi, Phi_q...] of each holonomic
    constraint (``constraints.phi_and_gradient``).  After an RK4 step |Phi| is about the
    step's local error: one step takes it to roundoff, so the Newton iteration of
    ``embed.hybrid.projection`` (eq 13-16, held chart) is left with nothing to do in most steps."""
    n, mh = len(q), len(phi_rows)
    if mh > 3:
        raise CompilationError(f"{mh} configuration constraints: the step's correction holds 3")
    tmpl = _template([symbols.TIME] + list(q) + list(params), [e for row in phi_rows for e in row])
    prog = Program(1 + nx + n_rest)
    v = _splice(prog, tmpl, [0] + list(range(1, 1 + n))
                + list(range(1 + nx, 1 + nx + len(params))))
    rows = [v[k * (n + 1):(k + 1) * (n + 1)] for k in range(mh)]
    G, r = [row[1:] for row in rows], [row[0] for row in rows]
    y = prog.solve_small([[prog.dot(G[i], G[j]) for j in range(mh)] for i in range(mh)], r)
    flag = prog.n_in - 1
    xq = [prog.sub(1 + i, prog.mul(flag, prog.dot([G[k][i] for k in range(mh)], y)))
          for i in range(n)]
    return prog, xq + list(range(1 + n, 1 + nx))


def rhs_program(nx, n_rest, stage):
    """xdot = stage(t, x) as a program of [t, h, x..., rest...] (the step's arguments)."""
    prog = Program(2 + nx + n_rest)
    return prog, prog.call(stage, [0] + list(range(2, 2 + nx + n_rest)))[:nx]


def linear_program(parts, rhs_only=False, cse=True):
    """A "linear" mode's RK4 step as one straight-line program (eq 15-16 solved inside it,
    ``rk4_program``); ``rhs_only``: xdot at (t, x) alone (the adaptive solver's right-hand
    side, eq 2 and 16).  At each stage S z = s is solved for z = [udot_ind, free forces]:
    S's udot_ind block is the reduced mass matrix T^T M T of eq 15 (negative definite:
    unrolled LDL^T, no pivoting), the forces by their Schur complement (at most 3, Cramer's
    rule).  ``cse``: as in ``Program.emit``."""
    x, params, z = parts["x"], parts["params"], parts["z"]
    nx, nz, n_ud, n = len(x), len(z), parts["n_ud"], parts["sizes"][0]
    k = nz - n_ud
    if k > 3:
        raise CompilationError(f"{k} free forces: the straight-line program solves at most 3")
    sys_t = _template([symbols.TIME] + x + params, parts["sys"], cse)
    mon_t = _template([symbols.TIME] + x + z + params, parts["mon"], cse)

    def solve(prog):
        """z at the program's arguments [t, x..., p...]; and qdot."""
        v = _splice(prog, sys_t, list(range(prog.n_in - 1)))     # the flag is not read
        S = [v[i * nz:(i + 1) * nz] for i in range(nz)]
        s, qdot = v[nz * nz:nz * nz + nz], v[nz * nz + nz:nz * nz + nz + n]
        A = [row[:n_ud] for row in S[:n_ud]]
        cols = prog.ldl_solve(A, [s[:n_ud]] + [[S[i][n_ud + j] for i in range(n_ud)]
                                                for j in range(k)])
        xs_, xb = cols[0], cols[1:]
        if not k:
            return qdot, xs_
        # Schur complement of A: (S22 - S21 A^-1 S12) f = s2 - S21 A^-1 s1
        S21 = [row[:n_ud] for row in S[n_ud:]]
        sch = [[prog.sub(S[n_ud + i][n_ud + j], prog.dot(S21[i], xb[j])) for j in range(k)]
               for i in range(k)]
        f = prog.solve_small(sch, [prog.sub(s[n_ud + i], prog.dot(S21[i], xs_))
                                   for i in range(k)])
        udi = [prog.sub(xs_[i], prog.dot([xb[j][i] for j in range(k)], f)) for i in range(n_ud)]
        return qdot, udi + f

    n_rest = len(params) + 1               # the parameters, then the correction's flag
    stage = Program(1 + nx + n_rest)
    qdot, zs = solve(stage)
    stage = (stage, qdot + zs)                   # xdot = [qdot, udot_ind], then the forces
    if rhs_only:
        return rhs_program(nx, n_rest, stage)
    final = Program(1 + nx + n_rest)             # the monitors: the stage called, then
    args = list(range(final.n_in))               # the monitors' expressions of z (and
    v = final.call(stage, args)                  # xdot, for the next step: ``rk4_program``)
    mon = _splice(final, mon_t, args[:1 + nx] + v[n:] + args[1 + nx:-1])
    correct = newton_program(x[:n], nx, params, n_rest, parts["phi"]) if parts["phi"] else None
    return rk4_program(nx, n_rest, stage, (final, mon + v[:nx]), correct)
