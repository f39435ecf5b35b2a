"""Driven modes: as many independent constraints as speeds, 0 degrees of freedom.

When the active constraints B u + C = 0 (eq 7) number as many as the speeds, every speed is
dependent (eq 11: u_ind is empty) and eq 12 reduces to u = E = -B^-1 C: the motion is fixed
by the constraints, the dynamics only give the constraint forces.  The symbolic embedding
would invert B symbolically (``embedding.embed``: an n x n inverse, then its time derivative
for the accelerations), which for braun_goldfarb2012's biped (n = 9) makes a step of 10^4
operations and monitors of 10^7 before common subexpressions.  A driven mode instead compiles
B, C and the acceleration terms as they are and solves them numerically, one LU of B a
stage:

    u = -B^-1 C                                      (eq 12 with D empty)
    qdot = W u + X                                   (the kinematical equations, eq 2)
    B udot = -gamma,  gamma = (B u + C)_q qdot + (B u + C)_t    (eq 12 differentiated)
    B^T lambda = -(F + F*) = -(b + A_u udot)         (F + F* + B^T lambda = 0, Sec 5.4)

x = q.  The whole RK4 step is one compiled straight-line program (``driven_program``), as a
"linear" mode's is (``programs.linear_program``): B, C at each stage, then u = -B^T (B B^T)^-1 C
(the least-norm solution, which for a square nonsingular B is -B^-1 C), the step's Newton
correction of Phi(q, t+h) = 0 (haug_pavesic2023 eq 13-14), and the monitors with
udot = -B^T (B B^T)^-1 gamma and lambda = -(B B^T)^-1 B (F + F*), every solve an LDL^T of the
definite B B^T (``Program.ldl_solve``, no pivoting: B is nonsingular away from a kinematic
singularity, where the solve gives inf or nan, which the step's finiteness check reports).
One call a step, where ``DrivenMode`` (kept for a program that cannot be compiled) makes
five LU factorizations and seven solves in Python.  Used where a mode has no independent
speed and the model no declared forces or auxiliary speeds (``driven_parts`` returns None
otherwise, and the general embedding runs).
"""

from __future__ import annotations

import numpy as np
from ..base.lazy import symengine as se

from ..model.constraints import gamma, phi_and_gradient, velocity
from ..base.errors import ConstraintRankError
from ..model import symbols
from .driven_program import driven_program
from .modes import _SymbolicMode, rk4_stepwise


_LAPACK = []


def _lapack():
    """(dgetrf, dgetrs) of scipy's LAPACK, loaded when a driven mode first steps: a
    stepping process without one does not load it, and none imports scipy.linalg
    (``embed.base.flapack``, issue 30)."""
    if not _LAPACK:
        from ..base.flapack import routine
        _LAPACK[:] = (routine("dgetrf"), routine("dgetrs"))
    return _LAPACK


def driven_parts(model, params, cset, dep, outputs, guards):
    """The parts of a driven mode (``compile.make_mode``'s kind "driven"), or None when the
    mode has independent speeds or the model declared forces or auxiliary speeds.

    Parameters
    ----------
    model : Model
    params : list of symbols
        The parameter vector's symbols.
    cset : ConstraintSet
        The active constraints, as many as speeds.
    dep : tuple of int
        The dependent speeds (all of them).
    outputs, guards : list of expressions
        In the model's symbols; multipliers named ``lambda_<constraint>``.

    Returns
    -------
    dict or None
    """
    n = model.n
    if len(dep) != n or len(cset) != n or model.forces or model.aux:
        return None
    from .functions import max_abs        # (compile and numeric import this module's users)
    from .numeric import lam_symbol
    terms = model.linear_terms()
    if terms.nonlinear is not None:
        return None
    q, u, ud = list(model.q), list(model.u), list(model.ud)
    lam = [lam_symbol(c.name) for c in cset.items]
    B = [e for c in cset.items for e in c.B]                    # row by row
    C = [c.C for c in cset.items]
    qdot = list(model.qdot)
    identity = all(se.expand(a - b) == 0 for a, b in zip(qdot, u))
    acc = [gamma(model, c) for c in cset.items]
    dyn = acc + list(terms.b) + [e for row in terms.Au for e in row]
    res = []
    for c in cset.items:
        res.append(velocity(c, u))
        if c.holonomic:
            res.append(c.phi)
    mon = (u + list(outputs) + [max_abs(res), se.Integer(1)] + list(guards) + lam)
    return {"kind": "driven", "x": q, "ind": (), "dep": tuple(dep), "params": list(params),
            "phi": [phi_and_gradient(model, c) for c in cset.items if c.holonomic],
            "sizes": (n, 0, len(outputs), len(guards), n),
            "args_q": [symbols.TIME] + q + list(params), "sys": B + C,
            "args_u": [symbols.TIME] + q + u + list(params), "qdot": None if identity else qdot,
            "dyn": dyn, "args_mon": [symbols.TIME] + q + u + ud + lam + list(params), "mon": mon}


def compile_driven(parts, key, backend=None):
    """The compiled step of a driven mode (``driven_program``: one native function, stepped by
    ``modes.ProgramMode``) or, if it cannot be compiled, the functions of ``DrivenMode``:
    [B, C](t, q), qdot(t, q, u) (None when it is u),
    [gamma, b, A_u](t, q, u) and the monitors(t, q, u, udot, lambda); with LLVM unless another
    backend is asked for (compiled, a stage of braun_goldfarb2012's biped costs a fraction of
    the interpreted one's: docs/design.md, facts)."""
    from .functions import lambdify
    from ..base.errors import CompilationError
    from ..codegen.native import OPT_RUN, compile_program
    try:
        prog, outs = driven_program(parts)
        return (compile_program(prog, outs, f"the RK4 step of driven mode {key}", OPT_RUN),)
    except CompilationError:
        pass
    backend = backend or "llvm"
    sys = lambdify(parts["args_q"], parts["sys"], f"B and C of mode {key}", backend)
    qdot = (None if parts["qdot"] is None else
            lambdify(parts["args_u"], parts["qdot"], f"qdot of mode {key}", backend))
    dyn = lambdify(parts["args_u"], parts["dyn"], f"the dynamics of mode {key}", backend)
    mon = lambdify(parts["args_mon"], parts["mon"], f"the monitors of mode {key}", backend)
    return (sys, qdot, dyn, mon)


class DrivenMode(_SymbolicMode):
    """A compiled driven mode (``CompiledModeProtocol``): x = q, u solved from B u = -C at
    every evaluation (one LU of B), RK4 stage by stage (``modes.rk4_stepwise``)."""

    def __init__(self, meta, key, fns):
        _SymbolicMode.__init__(self, meta, key)
        self._sys, self._qdot, self._dyn, self._mon = fns

    def _speeds(self, t, x, p):
        """(LU of B, pivots, u) at (t, q = x)."""
        n = self.n
        v = self._sys(np.concatenate(([t], x, p)))
        dgetrf, dgetrs = _lapack()
        lu, piv, info = dgetrf(v[:n * n].reshape(n, n))
        if info != 0:
            raise ConstraintRankError(
                f"the constraints {list(self.key[1])} of driven mode {self.key[0]} have a "
                f"singular B at t = {t:.9g} s (a kinematic singularity of the driven motion)")
        u, _ = dgetrs(lu, piv, -v[n * n:])
        return lu, piv, u

    def rhs(self, t, x, p):
        """qdot = W u + X with u = -B^-1 C (eq 12, D empty)."""
        _, _, u = self._speeds(t, x, p)
        if self._qdot is None:
            return u
        return self._qdot(np.concatenate(([t], x, u, p)))

    def monitors(self, t, x, p):
        """The monitors at q = x: u, the outputs (with the multipliers), the residual, 1 for
        kappa (no partition to re-select), the guards, the multipliers."""
        n = self.n
        lu, piv, u = self._speeds(t, x, p)
        d = self._dyn(np.concatenate(([t], x, u, p)))
        dgetrs = _lapack()[1]
        udot, _ = dgetrs(lu, piv, -d[:n])                         # B udot = -gamma
        ff = d[n:2 * n] + d[2 * n:].reshape(n, n) @ udot          # F + F* = b + A_u udot
        lam, _ = dgetrs(lu, piv, -ff, trans=1)                    # B^T lambda = -(F + F*)
        return self._mon(np.concatenate(([t], x, u, udot, lam, p)))

    def rk4(self, t, h, x, p):
        return rk4_stepwise(self, t, h, x, p)
