"""Constraints and constraint sets: B u + C = 0 (gillespie2005 eq 5-7).

A configuration constraint Phi(q, t) = 0 is differentiated with the kinematical
equations qdot = W u + X (eq 6): B = Phi_q W, C = Phi_q X + Phi_t.  A motion
constraint is given directly as an expression linear in u; B and C are read off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import symengine as se

from ..base.errors import ModelDefinitionError
from ..base.record import Record
from . import symbols

if TYPE_CHECKING:              # annotations only: a model's module reaches these through joints
    from .model import Model


class Constraint(Record):
    """One scalar constraint with its B row and C entry (eq 7).

    ``B``: row of symengine expressions in q, t, params; ``C``: symengine expression in q,
    t, params; ``phi``: configuration-level Phi(q, t) for holonomic constraints, or None."""

    FIELDS = ("name", "B", "C", "phi")
    FROZEN = True

    def __init__(self, name: str, B: tuple, C, phi=None):
        self.__dict__.update(name=name, B=B, C=C, phi=phi)

    @property
    def holonomic(self) -> bool:
        return self.phi is not None


def holonomic(model: Model, name: str, phi) -> Constraint:
    """Configuration constraint Phi(q, t) = 0, differentiated once (eq 6)."""
    phi = model.sym(phi)
    if any(phi.has(s) for s in model.u):
        raise ModelDefinitionError(
            f"configuration constraint {name!r} depends on speeds; give it as a motion constraint")
    grad = [se.diff(phi, qi) for qi in model.q]
    dphi = sum((g * qd for g, qd in zip(grad, model.qdot)), se.Integer(0)) \
        + se.diff(phi, symbols.TIME)
    return _from_motion(model, name, dphi, phi)


def motion(model: Model, name: str, expr) -> Constraint:
    """Motion constraint expr(q, u, t) = 0, linear in u (eq 7)."""
    return _from_motion(model, name, model.sym(expr), None)


def _from_motion(model, name, expr, phi):
    B = tuple(se.diff(expr, ui) for ui in model.u)
    for ui in model.u:
        for b in B:
            if b.has(ui):
                raise ModelDefinitionError(
                    f"constraint {name!r} is not linear in the speed {ui}; "
                    "motion constraints must have the form B(q,t) u + C(q,t) = 0")
    C = se.expand(expr.subs({ui: 0 for ui in model.u}))
    if all(b == 0 for b in B):
        raise ModelDefinitionError(f"constraint {name!r} involves no generalized speed")
    return Constraint(name, B, C, phi)


def moving_B(model: Model, constraints) -> bool:
    """Whether B of any of ``constraints`` changes with q or t: then kappa(B1) can grow and
    the partition may need re-selecting (gillespie2005 Sec 5.4).  Each constraint's answer
    is kept in it (by the model's coordinates' names): asked again at every simulator's
    start, it is then no symbolic work (issue 30)."""
    return any(_moves(model, c) for c in constraints)


def _moves(model: Model, c: Constraint) -> bool:
    """Whether B of ``c`` changes with q or t, worked out once per coordinate names."""
    key = ("moving_B", tuple(map(str, model.q)))
    memo = c.__dict__.get("_memo")
    if memo is None:
        memo = {}
        object.__setattr__(c, "_memo", memo)     # a frozen dataclass: not a field
    if key not in memo:
        moving = set(model.q) | {symbols.TIME}
        memo[key] = any(e.free_symbols & moving for e in c.B)
    return memo[key]


def velocity(c: Constraint, u):
    """B u + C of constraint ``c`` for speeds ``u`` (eq 7): zero when it is satisfied."""
    return sum((b * ui for b, ui in zip(c.B, u)), c.C)


def gamma(model: Model, c: Constraint):
    """gamma = (B u + C)_q qdot + (B u + C)_t: the constraint at acceleration level is
    B udot + gamma = 0 (the Bdot u + Cdot of gillespie2005 eq 12)."""
    v = velocity(c, model.u)
    return sum((se.diff(v, qi) * qd for qi, qd in zip(model.q, model.qdot)),
               se.diff(v, symbols.TIME))


def phi_and_gradient(model: Model, c: Constraint):
    """[Phi, dPhi/dq_1, ..., dPhi/dq_n] of a configuration constraint (the projection's terms,
    haug_pavesic2023 eq 13)."""
    return [c.phi] + [se.diff(c.phi, qi) for qi in model.q]


class ConstraintSet:
    """An ordered, hashable set of active constraints; its key names the mode's cache entry."""

    def __init__(self, constraints=()):
        self.items = tuple(sorted(constraints, key=lambda c: c.name))
        names = [c.name for c in self.items]
        if len(set(names)) != len(names):
            raise ModelDefinitionError(f"constraint names repeat in {names}")

    @property
    def key(self) -> tuple:
        return tuple(c.name for c in self.items)

    def __len__(self):
        return len(self.items)

    def B(self):
        return se.DenseMatrix([list(c.B) for c in self.items]) if self.items else None

    def C(self):
        return se.DenseMatrix([[c.C] for c in self.items]) if self.items else None


ADJUGATE_MAX = 4      # dependent blocks up to which B1^-1 = adj(B1) / det(B1)


def block_inverse(B1):
    """B1^-1 without pivots chosen by symbolic form: symengine's LU inverse divides by B1[0, 0]
    if it is not zero symbolically, though it may vanish on the constraint manifold (a loop
    closure's x row has d/d theta = -y of its end, 0 wherever the loop is closed: the LU
    inverse then lost every digit, speeds of 1e15 at a state where cond(B1) = 2).  The
    cofactors (minors up to 3 x 3: symengine's det is division-free there, not beyond) and the
    determinant by Laplace's expansion along them only divide by det(B1),
    which the partition keeps away from 0 (eq 11); larger blocks keep the LU inverse."""
    m = B1.nrows()
    if m > ADJUGATE_MAX:
        return B1.inv()
    if m == 1:
        return se.DenseMatrix([[1 / B1[0, 0]]])
    adj = se.zeros(m, m)
    for i in range(m):
        for j in range(m):
            minor = se.DenseMatrix(B1)
            minor.row_del(j)
            minor.col_del(i)
            adj[i, j] = (-1) ** (i + j) * minor.det()     # minors up to 3 x 3: no division
    det = sum((B1[0, j] * adj[j, 0] for j in range(m)), se.Integer(0))   # Laplace, row 0
    return adj / det
