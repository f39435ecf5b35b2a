"""The compiled RK4 step of a driven (0-dof) mode: the speeds from the constraints at every
stage, u = -B^T (B B^T)^-1 C (least norm; -B^-1 C for a square B), then one Newton
correction of the position-level rows (haug_pavesic2023 eq 13-14), as one straight-line
program (``embed.codegen.program``); ``driven.py`` holds the mode that runs it."""

from __future__ import annotations

def _least_norm(prog, B, rhs):
    """-B^T (B B^T)^-1 r for each r in ``rhs`` (registers; B square: -B^-1 r), by one LDL^T
    of the definite B B^T."""
    n = len(B)
    G = [[prog.dot(B[i], B[j]) for j in range(n)] for i in range(n)]
    out = []
    for w in prog.ldl_solve(G, rhs):
        out.append([prog.sub(prog.const(0.0), prog.dot([B[i][k] for i in range(n)], w))
                    for k in range(n)])
    return out


def driven_program(parts, rhs_only=False):
    """A driven mode's RK4 step as one straight-line program (``programs.rk4_program``'s
    layout, arguments [t, h, q..., p..., flag]): each stage u = -B^-1 C (eq 12, D empty) and
    qdot = W u + X; after the step q <- q - flag Phi_q^T (Phi_q Phi_q^T)^-1 Phi(q, t+h)
    (haug_pavesic2023 eq 13-14, one Newton step); the monitors at its end with
    B udot = -gamma and B^T lambda = -(b + A_u udot) (Sec 5.4).  ``rhs_only``: qdot alone."""
    from .programs import _splice, _template, rhs_program, rk4_program
    from ..codegen.program import Program
    q, params = parts["x"], parts["params"]
    n = nx = len(q)
    n_rest = len(params) + 1                   # the parameters, then the correction's flag
    sys_t = _template(parts["args_q"], parts["sys"])
    qdot_t = None if parts["qdot"] is None else _template(parts["args_u"], parts["qdot"])
    dyn_t = _template(parts["args_u"], parts["dyn"])
    mon_t = _template(parts["args_mon"], parts["mon"])
    pr = list(range(1 + nx, 1 + nx + len(params)))            # the parameters' registers

    def speeds(prog, t, qs):
        v = _splice(prog, sys_t, [t] + qs + pr)
        B = [v[i * n:(i + 1) * n] for i in range(n)]
        return B, _least_norm(prog, B, [v[n * n:]])[0]

    stage = Program(1 + nx + n_rest)
    qs = list(range(1, 1 + n))
    _, u = speeds(stage, 0, qs)
    qdot = u if qdot_t is None else _splice(stage, qdot_t, [0] + qs + u + pr)
    stage = (stage, qdot + u)                       # xdot, then u
    if rhs_only:
        return rhs_program(nx, n_rest, stage)
    final = Program(1 + nx + n_rest)
    v = final.call(stage, list(range(final.n_in)))
    xdot, u = v[:n], v[n:]
    w = _splice(final, sys_t, [0] + qs + pr)
    B = [w[i * n:(i + 1) * n] for i in range(n)]
    d = _splice(final, dyn_t, [0] + qs + u + pr)
    udot = _least_norm(final, B, [d[:n]])[0]                                # B udot = -gamma
    ff = [final.add(d[n + i], final.dot(d[2 * n + i * n:2 * n + (i + 1) * n], udot))
          for i in range(n)]                                                # b + A_u udot
    G = [[final.dot(B[i], B[j]) for j in range(n)] for i in range(n)]
    y = final.ldl_solve(G, [[final.dot(B[i], ff) for i in range(n)]])[0]
    lam = [final.sub(final.const(0.0), r) for r in y]        # B^T lambda = -(F + F*)
    mon = _splice(final, mon_t, [0] + qs + u + udot + lam + pr)
    return rk4_program(nx, n_rest, stage, (final, mon + xdot), _correction(parts, n_rest))


def _correction(parts, n_rest):
    """One Newton step toward Phi(q, t) = 0 (``programs.newton_program`` for any number of
    holonomic rows: Phi_q Phi_q^T by LDL^T), a program of [t, q..., p..., flag]; or None."""
    from .programs import _splice, _template
    from ..codegen.program import Program
    rows = parts["phi"]
    if not rows:
        return None
    q, params = parts["x"], parts["params"]
    n, mh = len(q), len(rows)
    tmpl = _template(parts["args_q"], [e for row in rows for e in row])
    prog = Program(1 + n + n_rest)
    v = _splice(prog, tmpl, list(range(1 + n + len(params))))
    rows = [v[k * (n + 1):(k + 1) * (n + 1)] for k in range(mh)]
    G, r = [row[1:] for row in rows], [row[0] for row in rows]
    y = prog.ldl_solve([[prog.dot(G[i], G[j]) for j in range(mh)] for i in range(mh)], [r])[0]
    flag = prog.n_in - 1
    return prog, [prog.sub(1 + i, prog.mul(flag, prog.dot([G[k][i] for k in range(mh)], y)))
                  for i in range(n)]
