"""On-line constraint embedding (gillespie2005 eq 11-14).

``embed.embedding.partition`` chooses the dependent speeds by numeric pivoting on B at the
current state (eq 11), ``embed`` forms D and E (eq 12) and the dependent speeds and
accelerations, and ``embed.embedding.equations.ModeEquations`` forms eq 15 (the recombined
terms, eq 13-14, read from the model's coefficients F + F* = b + A_u udot + A_f f rather than
differentiated), solves it for the independent accelerations (eq 16) and recovers the contact
forces.  All symbolic work is symengine; ``embed.modes.forming`` assembles a mode from these.
See docs/design.md, "Where each paper fits".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..base.lazy import symengine as se

from ..model.constraints import ConstraintSet, block_inverse
from ..base.errors import ConstraintRankError, SymbolicBudgetError
from ..model import symbols
from ..model.model import Model
from .partition import TIE, partition  # noqa: F401  (importable from here, as before the split)


EMBED_NODES = 2_000_000   # expression nodes of D and E beyond which a mode is not embedded
                          # symbolically: far above a long chain's and disk_fence's large
                          # fences', below a closed spatial loop's, whose derivatives take
                          # minutes (the sizes: docs/design.md, facts)


def tree_size(exprs, cap):
    """Nodes of the expression trees ``exprs`` (shared subexpressions counted each time they
    occur, as differentiation and ``count_ops`` meet them), counted up to ``cap`` + 1 at most:
    the walk stops there, so its cost is bounded whatever the size."""
    n, stack = 0, list(exprs)
    while stack:
        n += 1
        if n > cap:
            return n
        stack.extend(stack.pop().args)
    return n


@dataclass
class Embedding:
    """D, E and the dependent speeds and accelerations for one constraint set and partition
    (eq 12); the recombined terms (eq 13-14) are formed on demand (``Ftil``, ...): a mode's
    linear system is read from the model's coefficients instead (``ModeEquations``)."""

    cset: ConstraintSet
    ind: tuple
    dep: tuple
    D: se.DenseMatrix
    E: se.DenseMatrix
    u_sub: dict          # u_dep -> D u_ind + E
    ud_sub: dict         # ud_dep -> D ud_ind + Ddot u_ind + Edot
    g_dep: list          # Ddot u_ind + Edot: ud_dep = D ud_ind + g_dep
    model: Model
    B1inv: object = None  # inverse of the dependent block of B (for the multipliers)

    def _s(self, e):
        sub = {**self.u_sub, **self.ud_sub}
        return e.subs(sub) if sub else e

    def _recombined(self, terms):
        D = self.D
        return [self._s(terms[r] + sum((D[k, r_pos] * terms[j] for k, j in enumerate(self.dep)),
                                       se.Integer(0)))
                for r_pos, r in enumerate(self.ind)]

    @cached_property
    def Ftil(self):
        """F~_r, r in ind (eq 13), dependent speeds and accelerations substituted."""
        return self._recombined(self.model.Fr)

    @cached_property
    def Ftil_star(self):
        """F~*_r (eq 14)."""
        return self._recombined(self.model.Frstar)

    @cached_property
    def dep_rows(self):
        """F_s + F_s*, s in dep: the rows whose constraint forces cancel in eq 13-14."""
        return [self._s(self.model.Fr[j] + self.model.Frstar[j]) for j in self.dep]

    @cached_property
    def aux(self):
        """The auxiliary equations, substituted."""
        return [self._s(a) for a in self.model.aux]


def embed(model: Model, cset: ConstraintSet, dep: tuple) -> Embedding:
    """Embed the constraint set with the given dependent speeds (eq 11-12); the recombined
    terms (eq 13-14) are the Embedding's, on demand."""
    n = model.n
    ind = tuple(i for i in range(n) if i not in dep)
    u_ind = [model.u[i] for i in ind]
    ud_ind = [model.ud[i] for i in ind]
    B1inv = None
    if len(cset) == 0:
        D = se.zeros(0, n)
        E = se.zeros(0, 1)
        u_sub, ud_sub, g_dep = {}, {}, []
    else:
        B, C = cset.B(), cset.C()
        B1 = B[:, list(dep)]
        Bi = B[:, list(ind)]
        if se.expand(B1.det()) == 0:     # symengine's inverse aborts the process on this
            raise ConstraintRankError(
                f"the dependent block of B for {list(cset.key)} with dependent speeds "
                f"{[str(model.u[j]) for j in dep]} is singular everywhere; choose others")
        B1inv = block_inverse(B1)
        D = (-B1inv * Bi).applyfunc(_expand_if_safe)          # eq 12
        E = (-B1inv * C).applyfunc(_expand_if_safe)
        udep = _mv(D, u_ind) + E
        u_sub = {model.u[j]: udep[k] for k, j in enumerate(dep)}
        qdot = [e.subs(u_sub) for e in model.qdot]

        def ddt(e):
            return sum((se.diff(e, qi) * qd for qi, qd in zip(model.q, qdot)),
                       se.diff(e, symbols.TIME))

        if tree_size(list(D) + list(E), EMBED_NODES) > EMBED_NODES:
            raise SymbolicBudgetError(
                f"model {model.name!r}: D and E of the constraints {list(cset.key)} with "
                f"dependent speeds {[str(model.u[j]) for j in dep]} exceed {EMBED_NODES} "
                "expression nodes (a closed spatial loop, say): their derivatives (eq 12) would "
                "take minutes; this mode runs on the numeric path")
        Dd = D.applyfunc(ddt)
        Ed = E.applyfunc(ddt)
        g = _mv(Dd, u_ind) + Ed
        uddep = _mv(D, ud_ind) + g
        g_dep = [g[k] for k in range(len(dep))]
        ud_sub = {model.ud[j]: uddep[k] for k, j in enumerate(dep)}
    return Embedding(cset, ind, tuple(dep), D, E, u_sub, ud_sub, g_dep, model, B1inv)

def _expand_if_safe(e):
    """e expanded (trigonometric products cancel: the slider-crank's D re-embeds faster,
    docs/design.md, facts), unless it holds an integer power of a sum: its multinomial expansion cancels
    digits (a quartic fence, powers of q4 - L at q4 ~ 30, drifted to |Phi| = 8e-9)."""
    if any(isinstance(p.args[0], se.Add) and isinstance(p.args[1], se.Integer)
           and abs(int(p.args[1])) >= 2 for p in e.atoms(se.Pow)):
        return e
    return se.expand(e)


def _mv(A, v):
    """A v for a symengine matrix and a list (also when there are no independent speeds)."""
    return A * se.DenseMatrix(v) if v else se.zeros(A.rows, 1)
