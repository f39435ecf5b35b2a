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

from ..base.lazy import symengine as se

from .programs import _splice, _template, newton_program, rk4_program
from ..model.constraints import gamma, phi_and_gradient
from ..model import symbols
from .numeric import lam_symbol
from ..codegen.program import Program
from .terms_algebra import _norm1, _sum, partitioned, reduced

MAX_M = 3


def supported(model, cset):
    """Whether a mode of ``model`` with constraints ``cset`` can be one such program."""
    return not model.forces and not model.aux and len(cset) <= MAX_M


def model_template(model, psyms):
    """[b..., A_u (row by row)..., qdot...] of (t, q, u, p): F + F* = b + A_u udot (eq 1-4)."""
    lt = model.linear_terms()
    exprs = lt.b + [c for row in lt.Au for c in row]
    return _template([symbols.TIME] + list(model.q) + list(model.u) + list(psyms),
                     exprs + list(model.qdot))


def constraint_template(model, c, psyms):
    """[B..., C, Phi (holonomic: else 0)] of (t, q, p) and [gamma] of (t, q, u, p)."""
    tq = [symbols.TIME] + list(model.q) + list(psyms)
    bc = _template(tq, list(c.B) + [c.C, c.phi if c.holonomic else se.Integer(0)])
    g = _template([symbols.TIME] + list(model.q) + list(model.u) + list(psyms), [gamma(model, c)])
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
    mon_t = _template([symbols.TIME] + list(model.q) + list(model.u) + [lam_symbol(c) for c in lam_names]
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
      first (eq 11, ``partition.partition``'s choice), and the permutation they give.
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
