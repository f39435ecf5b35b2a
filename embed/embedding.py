"""On-line constraint embedding (gillespie2005 eq 11-16).

``partition`` chooses the dependent speeds by numeric pivoting on B at the
current state (eq 11), ``embed`` forms D and E (eq 12), recombines the
unconstrained terms (eq 13-14), substitutes the dependent speeds and their
derivatives, and ``ModeEquations`` solves eq 15 for the independent
accelerations (eq 16) and recovers the contact forces.  All symbolic work is
symengine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import symengine as se

from .constraints import ConstraintSet
from .errors import ConstraintRankError, ModelDefinitionError
from .model import TIME, Model

RANK_TOL = 1e-10


def partition(B_num: np.ndarray, names=()) -> tuple:
    """Dependent speed indices for a numeric B (m x n), by QR with column pivoting.

    Later speeds are preferred as dependent when columns tie, so that the paper's
    choice (u1 independent, u2 dependent for the rolling disk) comes out.
    Raises ConstraintRankError naming the constraints that are redundant.
    """
    m, n = B_num.shape
    if m == 0:
        return ()
    if not np.all(np.isfinite(B_num)):
        raise ConstraintRankError(f"constraint Jacobian B of {list(names)} is not finite at this state")
    rev = B_num[:, ::-1]
    _, R, piv = scipy.linalg.qr(rev, pivoting=True, mode="economic")
    diag = np.abs(np.diag(R))
    scale = max(diag[0], 1.0) if diag.size else 1.0
    if m > n or diag.size < m or diag[m - 1] <= RANK_TOL * scale:
        _, Rr, prow = scipy.linalg.qr(B_num.T, pivoting=True, mode="economic")
        dr = np.abs(np.diag(Rr))
        rank = int(np.sum(dr > RANK_TOL * max(dr[0], 1.0)))
        bad = [names[i] for i in prow[rank:]] if names else list(prow[rank:])
        raise ConstraintRankError(
            f"active constraints {list(names)} are redundant or inconsistent at this state "
            f"(rank {rank} < {m}); constraints {bad} depend on the others: remove them")
    dep = sorted(n - 1 - int(j) for j in piv[:m])
    return tuple(dep)


def condition_number(B_num: np.ndarray, dep) -> float:
    """Condition number of the dependent block B1 (gillespie2005 Sec 5.4)."""
    if len(dep) == 0:
        return 1.0
    return float(np.linalg.cond(B_num[:, list(dep)]))


@dataclass
class Embedding:
    """D, E and the recombined terms for one constraint set and partition (eq 12-14)."""

    cset: ConstraintSet
    ind: tuple
    dep: tuple
    D: se.DenseMatrix
    E: se.DenseMatrix
    u_sub: dict          # u_dep -> D u_ind + E
    ud_sub: dict         # ud_dep -> D ud_ind + Ddot u_ind + Edot
    Ftil: list           # F~_r, r in ind (eq 13), dependent speeds substituted
    Ftil_star: list      # F~*_r (eq 14)
    dep_rows: list       # F_s + F_s*, s in dep: recover the forces that cancel
    aux: list            # auxiliary equations, substituted


def embed(model: Model, cset: ConstraintSet, dep: tuple) -> Embedding:
    """Embed the constraint set with the given dependent speeds (eq 11-14)."""
    n = model.n
    ind = tuple(i for i in range(n) if i not in dep)
    u_ind = [model.u[i] for i in ind]
    ud_ind = [model.ud[i] for i in ind]
    if len(cset) == 0:
        D = se.zeros(0, n)
        E = se.zeros(0, 1)
        u_sub, ud_sub = {}, {}
    else:
        B, C = cset.B(), cset.C()
        B1 = B[:, list(dep)]
        Bi = B[:, list(ind)]
        B1inv = B1.inv()
        D = (-B1inv * Bi).applyfunc(se.expand)          # eq 12
        E = (-B1inv * C).applyfunc(se.expand)
        udep = D * se.DenseMatrix(u_ind) + E
        u_sub = {model.u[j]: udep[k] for k, j in enumerate(dep)}
        qdot = [e.subs(u_sub) for e in model.qdot]

        def ddt(e):
            return sum((se.diff(e, qi) * qd for qi, qd in zip(model.q, qdot)),
                       se.diff(e, TIME))

        Dd = D.applyfunc(ddt)
        Ed = E.applyfunc(ddt)
        uddep = D * se.DenseMatrix(ud_ind) + Dd * se.DenseMatrix(u_ind) + Ed
        ud_sub = {model.ud[j]: uddep[k] for k, j in enumerate(dep)}
    sub = {**u_sub, **ud_sub}

    def s(e):
        return e.subs(sub) if sub else e

    Ftil, Ftil_star = [], []
    for r_pos, r in enumerate(ind):
        F = model.Fr[r] + sum((D[k, r_pos] * model.Fr[j] for k, j in enumerate(dep)), se.Integer(0))
        Fs = model.Frstar[r] + sum((D[k, r_pos] * model.Frstar[j] for k, j in enumerate(dep)),
                                   se.Integer(0))
        Ftil.append(s(F))           # eq 13
        Ftil_star.append(s(Fs))     # eq 14
    dep_rows = [s(model.Fr[j] + model.Frstar[j]) for j in dep]
    aux = [s(a) for a in model.aux]
    return Embedding(cset, ind, tuple(dep), D, E, u_sub, ud_sub, Ftil, Ftil_star, dep_rows, aux)


class ModeEquations:
    """Eq 15-16 for one mode: independent accelerations and contact forces, explicit.

    ``laws`` maps force symbols to their constitutive law in this mode (Coulomb
    friction while sliding, say); the other force symbols are unknowns that the
    auxiliary equations and the dependent rows determine.  When the minimal
    equations (eq 15) contain no unknown force, they are solved alone and the
    forces are recovered afterwards from the unconstrained rows.
    """

    def __init__(self, model: Model, emb: Embedding, laws: dict):
        self.model, self.emb = model, emb
        laws = {se.sympify(k): se.sympify(v) for k, v in (laws or {}).items()}
        lsub = lambda e: e.subs(laws) if laws else e  # noqa: E731
        emb_sub = {**emb.u_sub}
        laws = {k: (v.subs(emb_sub) if emb_sub else v) for k, v in laws.items()}
        minimal = [lsub(a + b) for a, b in zip(emb.Ftil, emb.Ftil_star)]   # eq 15
        rest = [lsub(e) for e in emb.aux + emb.dep_rows]
        free = [f for f in model.forces if f not in laws]
        ud_ind = [model.ud[i] for i in emb.ind]
        self.minimal = minimal
        self.free_forces = free
        coupled = any(e.has(f) for e in minimal for f in free)
        if coupled:
            sol = _solve_linear(minimal + rest, ud_ind + free, model.name)
            udot = sol[:len(ud_ind)]
            lam = sol[len(ud_ind):]
        else:
            udot = _solve_linear(minimal, ud_ind, model.name) if ud_ind else []
            usub = dict(zip(ud_ind, udot))
            lam = _solve_linear([e.subs(usub) for e in rest], free, model.name) if free else []
        self.udot_ind = udot                                   # eq 16
        forces = dict(zip(free, lam))
        for k, v in laws.items():
            forces[k] = v.subs(forces) if forces else v
        self.forces = [forces[f] for f in model.forces]
        self.u_full = [emb.u_sub.get(model.u[i], model.u[i]) for i in range(model.n)]
        self.qdot = [e.subs(emb.u_sub) if emb.u_sub else e for e in model.qdot]


def _solve_linear(eqs, unknowns, name):
    """Solve eqs (linear in unknowns) = 0 symbolically: A z = b."""
    if len(eqs) != len(unknowns):
        raise ModelDefinitionError(
            f"model {name!r}: {len(eqs)} equations for the {len(unknowns)} unknowns "
            f"{[str(x) for x in unknowns]}; declare one force symbol per auxiliary speed and "
            "active constraint, or give the others a law in this mode")
    if not unknowns:
        return []
    z0 = {x: 0 for x in unknowns}
    A = se.DenseMatrix([[se.diff(e, x) for x in unknowns] for e in eqs])
    b = se.DenseMatrix([-e.subs(z0) for e in eqs])
    for e in A:
        if any(e.has(x) for x in unknowns):
            raise ModelDefinitionError(
                f"model {name!r}: equations are not linear in {[str(x) for x in unknowns]}")
    z = A.LUsolve(b)
    return [z[i] for i in range(len(unknowns))]
