"""The compiled-terms path as one straight-line program, with the partition as data.

gillespie2005 Sec 5.5 and eq 11-16, evaluated numerically but compiled once per mode and
constraint set: the RK4 step of ``programs.linear_program``'s layout, whose stages evaluate the
unconstrained terms F + F* = b + A_u udot and qdot = W u + X, each active constraint's B, C and
gamma = Bdot u + Cdot, and then embed: the dependent block B1 of B (its columns chosen by the
permutation ``perm`` = [ind..., dep...], given as arguments), D = -B1^-1 B_ind and E = -B1^-1 C
(eq 12), u_dep = D u_ind + E, udot = T udot_ind + g with T = [I; D] and g = [0; -B1^-1 gamma],
and the independent accelerations from (T^T A_u T) udot_ind = -T^T (b + A_u g) (eq 13-16,
LDL^T: ``Program.ldl_solve``). The monitors at the step's end take the multipliers lambda =
-B1^-T (F + F*)_dep (Sec 5.4). A new partition (a re-selection of the independent speeds, Sec
5.4) is new data for the same compiled function: nothing to embed or compile. For models
without constraint forces, laws or auxiliary speeds, and at most 3 active constraints (B1
inverted by Cramer's rule, well conditioned by the partition's pivoting).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import symengine as se

from .programs import _splice, _template, newton_program, rhs_program, rk4_program
from ..model.constraints import gamma, moving_B, phi_and_gradient
from ..embedding.embedding import TIE
from ..base.errors import CompilationError
from ..base.tolerances import ACTIVATION_TOL, PHI_TOL, PIVOT_RANK_TOL
from ..model.model import TIME
from .modes import ProgramMode
from ..codegen.native import Buffer, compile_program
from .numeric import lam_symbol
from ..codegen.program import Program
from ..codegen import reduction

MAX_M = 3
PARTITIONS_AHEAD = 1000   # a program's partition copies made ahead up to this many (3 KB each)


def supported(model, cset):
    """Whether a mode of ``model`` with constraints ``cset`` can be one such program."""
    return not model.forces and not model.aux and len(cset) <= MAX_M


def model_template(model, psyms):
    """[b..., A_u (row by row)..., qdot...] of (t, q, u, p): F + F* = b + A_u udot (eq 1-4)."""
    lt = model.linear_terms()
    exprs = lt.b + [c for row in lt.Au for c in row]
    return _template([TIME] + list(model.q) + list(model.u) + list(psyms),
                     exprs + list(model.qdot))


def constraint_template(model, c, psyms):
    """[B..., C, Phi (holonomic: else 0)] of (t, q, p) and [gamma] of (t, q, u, p)."""
    tq = [TIME] + list(model.q) + list(psyms)
    bc = _template(tq, list(c.B) + [c.C, c.phi if c.holonomic else se.Integer(0)])
    g = _template([TIME] + list(model.q) + list(model.u) + list(psyms), [gamma(model, c)])
    return bc, g


def terms_program(model, psyms, cset, templates, outputs, guards, lam_names, watch):
    """The program (``programs.rk4_program``) and its stage (xdot, eq 2 and 16): arguments [t, h, x..., p..., perm...,
    iperm...] (x = [q, u_ind]), outputs [x(t+h)..., monitors(x(t+h))..., sum |x_i(t+h)|]
    (``modes.MonitorLayout``).

    ``templates`` = (the model's unconstrained terms, compiled: ``model_template``'s, one
    function that every mode's program calls, kept warm by whichever mode steps; [constraint
    templates in ``cset`` order]);
    ``outputs``, ``guards``: the mode's outputs and switching conditions, of (t, q, u,
    lambda_<name> for ``lam_names``, p); ``watch``: whether kappa(B1) can change (else 1)."""
    n, m, npar = model.n, len(cset), len(psyms)
    n_i = n - m
    nx = n + n_i
    terms, ctemps = templates
    mon_t = _template([TIME] + list(model.q) + list(model.u) + [lam_symbol(c) for c in lam_names]
                      + list(psyms), list(outputs) + list(guards))

    def embed(prog):
        """Everything one evaluation needs at the program's arguments [t, q, u_ind, p, perm,
        iperm] (eq 11-16)."""
        t, q, ui = 0, list(range(1, 1 + n)), list(range(1 + n, 1 + nx))
        pr = list(range(1 + nx, 1 + nx + npar))
        perm = list(range(1 + nx + npar, 1 + nx + npar + n))
        iperm = list(range(1 + nx + npar + n, 1 + nx + npar + 2 * n))
        one, zero = prog.const(1.0), prog.const(0.0)
        rows = [_splice(prog, bc, [t] + q + pr) for bc, _ in ctemps]
        B = [r[:n] for r in rows]
        C = [r[n] for r in rows]
        phi = [r[n + 1] for r, c in zip(rows, cset.items) if c.holonomic]
        Bp = [[prog.gather(b, perm[j]) for j in range(n)] for b in B]
        B1 = [r[n_i:] for r in Bp]
        inv = [list(r) for r in zip(*[prog.solve_small(B1, [one if i == j else zero
                                                             for i in range(m)])
                                      for j in range(m)])]  # B1^-1, row by row
        D = [[prog.unary("neg", prog.dot(inv[k], [Bp[r][j] for r in range(m)]))
              for j in range(n_i)] for k in range(m)]        # eq 12
        E = [prog.unary("neg", prog.dot(inv[k], C)) for k in range(m)]
        up = ui + [prog.dot(D[k], ui, E[k]) for k in range(m)]
        u = [prog.gather(up, iperm[j]) for j in range(n)]
        gam = [_splice(prog, gt, [t] + q + u + pr)[0] for _, gt in ctemps]
        g = [prog.unary("neg", prog.dot(inv[k], gam)) for k in range(m)]
        v = prog.call(terms, [t] + q + u + pr)
        udi, MTd, r0d = reduced(prog, v[:n + n * n], perm, D, g)     # eq 13-16
        qdot = v[n + n * n:]
        return dict(B=B, C=C, phi=phi, inv=inv, u=u, MTd=MTd, r0d=r0d, udi=udi, qdot=qdot,
                    pr=pr)

    n_args = 1 + nx + npar + 2 * n + 1          # ..., iperm, the correction's flag
    stage = Program(n_args)
    e = embed(stage)
    mh = len(e["phi"])
    # xdot, then what the monitors take: B, C, Phi, B1^-1, u, the dependent rows of A_u T
    # and of r0 (the final stage calls the stage: it is compiled once)
    extras = ([r for row in e["B"] for r in row] + e["C"] + e["phi"]
              + [r for row in e["inv"] for r in row] + e["u"]
              + [r for row in e["MTd"] for r in row] + e["r0d"])
    stage = (stage, e["qdot"] + e["udi"] + extras)
    prog = Program(n_args)
    v = prog.call(stage, list(range(n_args)))
    xdot, udi, o = v[:nx], v[n:nx], nx
    B = [v[o + k * n:o + (k + 1) * n] for k in range(m)]
    o += m * n
    C, phi = v[o:o + m], v[o + m:o + m + mh]
    o += m + mh
    inv = [v[o + k * m:o + (k + 1) * m] for k in range(m)]
    o += m * m
    u = v[o:o + n]
    o += n
    MTd = [v[o + k * n_i:o + (k + 1) * n_i] for k in range(m)]
    r0d = v[o + m * n_i:o + m * n_i + m]
    e = dict(B=B, C=C, phi=phi, inv=inv, u=u, udi=udi,
             pr=list(range(1 + nx, 1 + nx + npar)))
    # multipliers: lambda = -B1^-T (F + F*)_dep, F + F* = r0 + A_u T udot_ind (Sec 5.4)
    res_dep = [prog.dot(MTd[k], udi, r0d[k]) for k in range(m)]
    lam = [prog.unary("neg", prog.dot([inv[k][c] for k in range(m)], res_dep))
           for c in range(m)]
    names = [c.name for c in cset.items]
    lam_by_name = [lam[names.index(c)] if c in names else prog.const(0.0) for c in lam_names]
    og = _splice(prog, mon_t, list(range(1 + n)) + e["u"] + lam_by_name + e["pr"])
    res = prog.const(0.0)
    for k in range(m):
        v = prog.dot(e["B"][k], e["u"], e["C"][k])
        res = prog.binary("max", res, prog.unary("fabs", v))
    for p_ in e["phi"]:
        res = prog.binary("max", res, prog.unary("fabs", p_))
    kap = prog.const(1.0)
    if watch and m:                    # kappa(B1) = ||B||_1 ||B1^-1||_1 (Sec 5.4)
        kap = prog.mul(_norm1(prog, e["B"], n), _norm1(prog, e["inv"], m))
    n_out = len(outputs)
    # xdot last: the step remembers it for the next step's first stage (rk4_program)
    final = (prog, e["u"] + og[:n_out] + [res, kap] + og[n_out:] + lam + xdot)
    phi = [phi_and_gradient(model, c) for c in cset.items if c.holonomic]
    correct = newton_program(model.q, nx, psyms,
                             npar + 2 * n + 1, phi) if phi else None
    prog, outs = rk4_program(nx, npar + 2 * n + 1, stage, final, correct)
    if m <= n:                   # the event's own function, exported (``TermsProgramMode.enter``)
        prog.subs.append(entry_program(model, npar, cset, templates, final))
        prog.exports["enter"] = len(prog.subs) - 1
    return (prog, outs), stage


def reduced(prog, v, perm, D, g):
    """(udot_ind, the dependent rows of A_p T and of r0) from the unconstrained terms
    v = [b..., A_u by rows...] (registers) in the partition's order perm = [ind..., dep...]:
    A_p T = A_p[:, ind] + sum_k A_p[:, dep_k] D_k (T = [I; D]), r0 = b_p + A_p [0; g], and
    (T^T A_p T) udot_ind = -T^T r0 (eq 13-16), by LDL^T (``Program.ldl_solve``).  Straight-line
    up to ``reduction.LOOP_MIN`` independent speeds; from there a call of the looped
    ``embed_reduce``, the same operations in the same order (``Program.reduced``)."""
    n, m = len(perm), len(g)
    n_i = n - m
    if n_i >= reduction.LOOP_MIN:
        return prog.reduced(v, perm, D, g)
    b, Au = v[:n], v[n:]
    fn = prog.const(float(n))
    bp = [prog.gather(b, perm[i]) for i in range(n)]
    rowidx = [prog.mul(perm[i], fn) for i in range(n)]
    Ap = [[prog.gather(Au, prog.add(rowidx[i], perm[j])) for j in range(n)] for i in range(n)]
    MT = [[prog.dot([Ap[r][n_i + k] for k in range(m)], [D[k][j] for k in range(m)], Ap[r][j])
           for j in range(n_i)] for r in range(n)]           # A_p T
    A = [[prog.dot([D[k][i] for k in range(m)], [MT[n_i + k][j] for k in range(m)], MT[i][j])
          if j <= i else None for j in range(n_i)] for i in range(n_i)]   # T^T A_p T
    r0 = [prog.dot([Ap[r][n_i + k] for k in range(m)], g, bp[r]) for r in range(n)]
    rhs = [prog.unary("neg", prog.dot([D[k][i] for k in range(m)],
                                      [r0[n_i + k] for k in range(m)], r0[i]))
           for i in range(n_i)]
    udi, = prog.ldl_solve(A, [rhs])
    return udi, MT[n_i:], r0[n_i:]


def entry_program(model, npar, cset, templates, final):
    """Entering the constraint set ``cset`` at (t, q, u) as one program: its arguments
    [t, q..., u..., p..., allow, tol], its outputs [max |Phi| (nan if any output is not
    finite), jumped, |diag R| (m)..., dep (m, ascending)..., impulses (m)..., x = [q,
    u_ind]..., monitors(x)...].

    - The momentum-consistent activation jump (mueller eq 7): [-M B^T; B 0] [du; impulse] =
      [0; -(B u + C)] (M du = B^T impulse) by LDL^T (``Program.ldl_solve``; M definite: the
      Schur complement B M^-1 B^T is then definite too, no pivoting); taken where ``allow``
      is nonzero and |B u + C| > tol max(1, |u|), as ``activation.activation_jump`` does.
    - The dependent speeds by modified Gram-Schmidt with column pivoting on B, later speeds
      first (eq 11, ``embedding.partition``'s choice), and the permutation they give.
    - The monitors of the mode at x, by the step's final stage (``final``).

    A singular K, a degenerate B (a zero pivot) or non-finite terms come out as nan: the caller
    then takes the general path, which says what is wrong."""
    n, m = model.n, len(cset)
    n_i = n - m
    terms, ctemps = templates
    prog = Program(1 + 2 * n + npar + 2)
    t, q, u = 0, list(range(1, 1 + n)), list(range(1 + n, 1 + 2 * n))
    pr = list(range(1 + 2 * n, 1 + 2 * n + npar))
    allow, tol = 1 + 2 * n + npar, 2 + 2 * n + npar
    zero, one = prog.const(0.0), prog.const(1.0)
    rows = [_splice(prog, bc, [t] + q + pr) for bc, _ in ctemps]
    B, C = [r[:n] for r in rows], [r[n] for r in rows]
    phi = zero
    for r, c in zip(rows, cset.items):
        if c.holonomic:
            phi = prog.binary("max", phi, prog.unary("fabs", r[n + 1]))
    Au = prog.call(terms, [t] + q + u + pr)[n:n + n * n]
    # the activation jump (mueller eq 7)
    res = [prog.dot(B[k], u, C[k]) for k in range(m)]
    big, umax = zero, one
    for v in res:
        big = prog.binary("max", big, prog.unary("fabs", v))
    for v in u:
        umax = prog.binary("max", umax, prog.unary("fabs", v))
    K = [[Au[i * n + j] if i < n and j < n else B[i - n][j] if j < n else
          B[j - n][i] if i < n else zero for j in range(n + m)] for i in range(n + m)]
    # A_u = -M (F* = -M udot - ...): [A_u B^T; B 0] [du; impulse] = [0; -(B u + C)]
    rhs = [zero] * n + [prog.unary("neg", v) for v in res]
    z, = prog.ldl_solve(K, [rhs])      # quasi-definite: no pivoting
    jumped = prog.mul(allow, prog.compare("gt", big, prog.mul(tol, umax)))
    u_new = [prog.select(jumped, prog.add(u[j], z[j]), u[j]) for j in range(n)]
    impulses = z[n:]
    diag, dep, perm, iperm = partitioned(prog, B, n)         # eq 11
    x = q + [prog.gather(u_new, perm[k]) for k in range(n_i)]
    args = [t] + x + pr + perm + iperm + [zero]
    mon = prog.call(final, args)
    prog.remember(args, mon[-len(x):])   # the first stage of the steps that start here
    outs = diag + dep + impulses + x + mon[:-len(x)]
    total = _sum(prog, [jumped] + outs)      # s - s is nan where any output is not finite
    return prog, [prog.add(phi, prog.sub(total, total)), jumped] + outs


def partitioned(prog, B, n):
    """(|diag R|, dep ascending, perm = [ind..., dep...], iperm) of the partition of the
    speeds (eq 11) for the registers B (m rows of n speeds): modified Gram-Schmidt with column
    pivoting on B's columns, later speeds first, ties within ``TIE`` to the first
    (``embedding.partition``'s choice).  Straight-line below ``reduction.LOOP_MIN`` speeds;
    from there a call of the looped ``embed_partition``, the same operations in the same
    order (``Program.pivoted``)."""
    m, n_i = len(B), n - len(B)
    if n >= reduction.LOOP_MIN:
        return prog.pivoted(B, n, TIE)
    zero, one = prog.const(0.0), prog.const(1.0)
    cols = [[B[k][n - 1 - j] for k in range(m)] for j in range(n)]
    chosen, diag, piv = [zero] * n, [], []
    for _ in range(m):
        norms = [prog.select(chosen[j], prog.const(-1.0), prog.dot(c, c))
                 for j, c in enumerate(cols)]
        best, at = prog.argmax(norms, TIE)
        d = prog.unary("sqrt", best)
        e = [prog.div(prog.gather([c[k] for c in cols], at), d) for k in range(m)]
        cols = [[prog.sub(c[k], prog.mul(prog.dot(e, c), e[k])) for k in range(m)]
                for c in cols]
        chosen = [prog.binary("max", chosen[j], prog.compare("eq", prog.const(j), at))
                  for j in range(n)]
        diag.append(d)
        piv.append(prog.sub(prog.const(n - 1), at))
    dep = _sorted(prog, piv)
    perm = []
    for k in range(n_i):                 # the k-th speed not in dep
        j = prog.const(k)
        for d in dep:
            j = prog.add(j, prog.sub(one, prog.compare("gt", d, j)))
        perm.append(j)
    perm += dep
    iperm = []
    for j in range(n):
        rj = prog.const(j)
        below = [prog.compare("gt", rj, d) for d in dep]
        at_dep = [prog.compare("eq", rj, d) for d in dep]
        rank = prog.dot(at_dep, [prog.const(n_i + r) for r in range(m)])
        iperm.append(prog.select(_sum(prog, at_dep), rank,
                                 prog.sub(rj, _sum(prog, below))))
    return diag, dep, perm, iperm


def _sum(prog, regs):
    acc = prog.const(0.0)
    for r in regs:
        acc = prog.add(acc, r)
    return acc


def _sorted(prog, regs):
    """The registers' values in ascending order (a sorting network, a few registers)."""
    regs = list(regs)
    for i in range(len(regs)):
        for j in range(len(regs) - 1 - i):
            a, b = regs[j], regs[j + 1]
            regs[j], regs[j + 1] = prog.binary("min", a, b), prog.binary("max", a, b)
    return regs


def _norm1(prog, rows, cols):
    """max_j sum_i |rows[i][j]| (registers)."""
    acc = prog.const(0.0)
    for j in range(cols):
        col = prog.const(0.0)
        for r in rows:
            col = prog.add(col, prog.unary("fabs", r[j]))
        acc = prog.binary("max", acc, col)
    return acc


def partition_tail(ind, dep, flag):
    """The step's arguments after p: [perm..., iperm..., flag] with perm = [ind..., dep...]
    (the partition as data, eq 11) and the correction's flag (``newton_program``)."""
    perm = tuple(ind) + tuple(dep)
    iperm = [0] * len(perm)
    for k, j in enumerate(perm):
        iperm[j] = k
    return np.array(perm + tuple(iperm) + (flag,), dtype=float)


class TermsProgramMode(ProgramMode):
    """A mode (constraint set, any partition) of the compiled-terms path as one compiled call
    a step (``terms_program``): the partition is data, so a re-selection of the independent
    speeds costs no embedding and no compile.  ``with_dep(dep)`` gives the mode for a
    partition (sharing the compiled function)."""

    path = "numeric"

    def __init__(self, meta, key, fns):
        ProgramMode.__init__(self, meta, key, fns)
        self._meta = meta
        self._made = (meta, key, fns)   # what it pickles as (object code: shipped, issue 30)
        n = self.n
        self._tail = partition_tail(self.ind, self.dep, 1.0)
        self._copies = {self.dep: self}      # every partition's mode, shared by the copies
        self._enter = fns[0].entries.get("enter")
        m = self.sizes[4]
        npar = meta["n_rest"] - 2 * n - 1
        self._e_in = Buffer(1 + 2 * n + npar + 2)          # ``entry_program``'s layout
        self._e_out = Buffer(2 + 3 * m + self.nx + self.n_mon)

    def enter(self, t, q, u, p, allow, tol=ACTIVATION_TOL):
        """Entering this mode's constraints at (t, q, u) in one compiled call
        (``entry_program``): the activation jump (mueller eq 7) if ``allow``, the dependent
        speeds (eq 11), the state x = [q, u_ind] and the monitors there.

        Returns
        -------
        tuple or None
            (dep, x, monitors, impulses: a list, or None where there is no jump); None where
            the general path must decide (Phi above PHI_TOL: the configuration is projected
            first; a singular K or a rank-deficient B: it says which constraints; anything
            not finite), or where there is nothing to enter (no constraint).
        """
        if self._enter is None or not self.sizes[4]:
            return None
        m, n, nx = self.sizes[4], self.n, self.nx
        args, out = self._e_in.array, self._e_out.array
        # written as a step's ``_load`` writes its arguments (numpy's paths the stepping loop
        # keeps warm: np.concatenate's took 7 us more in an event step that found it cold)
        args[0] = t
        args[1:1 + n] = q
        args[1 + n:1 + 2 * n] = u
        args[1 + 2 * n:-2] = p
        args[-2] = 1.0 if allow else 0.0
        args[-1] = tol
        self._enter(self._e_in.at, self._e_out.at)
        head = out[:2 + 3 * m].tolist()
        diag = head[2:2 + m]
        if not (head[0] <= PHI_TOL and diag[-1] > PIVOT_RANK_TOL * max(diag[0], 1.0)):
            return None         # (head[0] is nan where any output is not finite)
        dep = tuple(int(d) for d in head[2 + m:2 + 2 * m])
        x = out[2 + 3 * m:2 + 3 * m + nx].copy()
        return dep, x, out[2 + 3 * m + nx:].copy(), head[2 + 2 * m:] if head[1] else None

    def rhs(self, t, x, p):
        """xdot = [qdot, udot_ind] (eq 2 and 16): the stage, compiled on first use."""
        if self._rhs is None:
            self._rhs = compile_program(*rhs_program(self.nx, self._meta["n_rest"],
                                                     self._meta["stage"]),
                                        f"the right-hand side of mode {self.key}")
        return ProgramMode.rhs(self, t, x, p)

    def __reduce__(self):
        return (_terms_mode, self._made + (self.dep, self.correct))

    def with_dep(self, dep):
        """The same compiled mode for the dependent speeds ``dep``: a copy sharing the compiled
        function, made once (``partitions`` makes them ahead: an event step that makes one
        finds the 30 entries it copies cold, 15-70 us)."""
        dep = tuple(dep)
        mode = self._copies.get(dep)
        if mode is None:
            mode = object.__new__(TermsProgramMode)
            mode.__dict__.update(self.__dict__)
            mode.dep, mode.ind = dep, tuple(i for i in range(self.n) if i not in dep)
            mode.key = self.key[:2] + (dep,)
            mode._tail = partition_tail(mode.ind, dep, self._tail[-1])
            mode._inb = mode._argument_buffer(2 + self.nx + self._meta["n_rest"])
            self._copies[dep] = mode
        return mode

    def uncorrected(self):
        """This mode without the step's Newton correction (``ProgramMode.uncorrected``), whose
        partitions (``with_dep``) are uncorrected too."""
        mode = ProgramMode.uncorrected(self)
        mode._copies = {mode.dep: mode}
        return mode

    def partitions(self, limit=PARTITIONS_AHEAD):
        """Make the copies of every partition ahead (``with_dep``), if there are at most
        ``limit`` (n choose m)."""
        n, m = self.n, len(self.dep)
        if math.comb(n, m) <= limit:
            for dep in itertools.combinations(range(n), m):
                self.with_dep(dep)


def _terms_mode(meta, key, fns, dep, correct):
    """A ``TermsProgramMode`` loaded (``__reduce__``): made again from its compiled function,
    uncorrected if it was, for the partition ``dep``."""
    mode = TermsProgramMode(meta, key, fns)
    if not correct:
        mode = mode.uncorrected()
    return mode.with_dep(dep)


def make_terms_mode(forms, mode_id, active, dep, opt=None):
    """The ``TermsProgramMode`` of a mode of ``forms`` (``embed.modes.forming.AutomatonForms``) with
    the constraints ``active``, compiled (CompilationError where ``supported`` is not)."""
    model, lib = forms.model, forms.library
    cset = forms.constraint_set(active)
    mode = forms.automaton.modes[mode_id]
    if not supported(model, cset) or mode.laws:
        raise CompilationError(f"mode {mode_id} with {list(active)}: no compiled-terms program")
    terms = lib.shared("terms_program.model", lambda: compile_program(
        *model_template(model, forms.psyms), "the unconstrained terms of the model"))
    ctemps = [lib.shared(("terms_program.constraint", c.name),
                         lambda c=c: constraint_template(model, c, forms.psyms))
              for c in cset.items]
    outs, guards = forms.mode_exprs(mode_id)
    watch = moving_B(model, cset.items)
    lam_names = list(mode.constraints) + sorted(
        {str(x)[len("lambda_"):] for e in list(outs) + list(guards) for x in e.free_symbols
         if str(x).startswith("lambda_")} - set(mode.constraints))
    (prog, res), stage = terms_program(model, forms.psyms, cset, (terms, ctemps), outs, guards,
                                       lam_names, watch)
    fn = compile_program(prog, res, f"the compiled terms of mode {mode_id} {list(active)}", opt)
    n = model.n
    meta = {"sizes": (n, 0, len(outs), len(guards), len(cset)), "nx": 2 * n - len(cset),
            "ind": tuple(i for i in range(n) if i not in dep), "dep": tuple(dep),
            "n_rest": len(forms.psyms) + 2 * n + 1, "stage": stage}
    return TermsProgramMode(meta, (mode_id, tuple(active), tuple(dep)), (fn,))
