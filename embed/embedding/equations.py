"""The embedded equations of one mode (gillespie2005 eq 13-16): the linear system S z = s
for the independent accelerations and the free forces, read from the model's coefficients
(or differentiated, the reference), solved symbolically where it is small, and the contact
forces and multipliers recovered."""

from __future__ import annotations

from ..base.lazy import symengine as se

from ..base.errors import ModelDefinitionError
from ..model.model import Model, to_symengine
from .embedding import Embedding, tree_size


EXPLICIT_MAX = 3      # unknowns up to which eq 15-16 are solved symbolically (LU on a dense
                      # symbolic matrix swells beyond that: n = 10 took minutes)
EXPLICIT_OPS = 2000   # ... and operations in S and s up to which (a 3 x 3 system of the ball
                      # in the bowl gave a 177 000-character solution that never compiled)
EXPLICIT_OPS_OFFLINE = 100000   # the same, where compile time is not on the stepping path


def _ops_within(exprs, budget):
    """``se.count_ops(*exprs) <= budget``, decided without counting a huge tree: every
    operation node has at most two children per operation counted (k - 1 for a sum or product
    of k terms, 1 for a power or a function), so count_ops >= (nodes - len(exprs)) / 2 and a
    tree of more than 2 budget + len(exprs) nodes is over budget (``tree_size`` stops there).
    count_ops walks the trees without sharing: on a closed spherical loop's S it ran for
    minutes (docs/design.md, facts)."""
    cap = 2 * budget + len(exprs)
    if tree_size(exprs, cap) > cap:
        return False
    return se.count_ops(*exprs) <= budget


class ModeEquations:
    """Eq 15-16 for one mode: the linear system S z = s for z = [udot_ind, free forces].

    ``laws`` maps force symbols to their constitutive law in this mode (Coulomb
    friction while sliding, say); the other force symbols are unknowns.  Either they
    carry every constraint force (one per auxiliary speed and active constraint: they
    are determined by the auxiliary equations and the dependent rows) or only the
    auxiliary ones; then the active constraints' forces are the multipliers
    lambda = -B1^-T (F + F*)_dep, which make F + F* + B^T lambda = 0 hold in every row.
    ``forces`` and ``multipliers`` are expressions in the state and z.  With at most
    EXPLICIT_MAX unknowns the system is solved symbolically: ``solution`` gives z, and
    ``udot_ind``, ``forces``, ``multipliers`` are explicit (eq 16).

    S and s are products of the model's coefficient blocks (``model.LinearTerms``) with
    T = [I; D], no derivative taken per mode; ``direct=True`` differentiates the recombined
    equations instead (the reference, and the way for equations or laws not linear in the
    unknowns, which it refuses with ModelDefinitionError).
    """

    def __init__(self, model: Model, emb: Embedding, laws: dict, explicit_ops=None,
                 direct=False):
        """``direct``: differentiate the recombined equations (eq 13-15) for S and s instead of
        reading them from the model's coefficients (``model.LinearTerms``); the same system,
        kept as the reference of the coefficient form and for models it does not cover."""
        self.model, self.emb = model, emb
        explicit_ops = EXPLICIT_OPS if explicit_ops is None else explicit_ops
        laws = {to_symengine(k): to_symengine(v) for k, v in (laws or {}).items()}
        laws = {k: (v.subs(emb.u_sub) if emb.u_sub else v) for k, v in laws.items()}
        free = [f for f in model.forces if f not in laws]
        m, na = len(emb.dep), len(model.aux)
        if len(free) == na + m:
            multipliers = False
        elif len(free) == na:
            multipliers = True
        else:
            raise ModelDefinitionError(
                f"model {model.name!r}: {len(free)} unknown forces {[str(f) for f in free]} for "
                f"{na} auxiliary speeds and {m} active constraints; declare one force symbol per "
                "auxiliary speed (and optionally one per constraint), or give the others a law")
        ud_ind = [model.ud[i] for i in emb.ind]
        self.free_forces = free
        self.z = ud_ind + free
        form = None if direct else _coefficient_form(model, emb, laws, free, not multipliers)
        if form is None:
            form = _differentiated_form(model, emb, laws, free, not multipliers, self.z)
        self.S, self.s, dep_rows, coupled = form
        forces = dict(zip(free, free))
        for k, v in laws.items():
            forces[k] = v
        self.forces = [forces[f] for f in model.forces]
        if multipliers and m:
            self.multipliers = list(-(emb.B1inv.T * se.DenseMatrix(dep_rows)))
        else:
            self.multipliers = [se.Integer(0)] * m
        self.u_full = [emb.u_sub.get(model.u[i], model.u[i]) for i in range(model.n)]
        self.qdot = [e.subs(emb.u_sub) if emb.u_sub else e for e in model.qdot]
        self.solution = None
        self.udot_ind = None
        if len(self.z) <= EXPLICIT_MAX and _ops_within([*self.S, *self.s], explicit_ops):
            self.solution = _solve_blocks(self.S, self.s, len(ud_ind), len(ud_ind), coupled)
            zs = dict(zip(self.z, self.solution))
            self.udot_ind = self.solution[:len(ud_ind)]                  # eq 16
            self.forces = [e.subs(zs) for e in self.forces]
            self.multipliers = [e.subs(zs) for e in self.multipliers]


def _differentiated_form(model, emb, laws, free, with_dep, z):
    """(S, s, (F + F*)_dep, coupled) of eq 15 and the force rows by differentiating the
    recombined equations (eq 13-14) with respect to z = [udot_ind, free forces]; refuses
    equations that are not linear in z."""
    lsub = lambda e: e.subs(laws) if laws else e  # noqa: E731
    minimal = [lsub(a + b) for a, b in zip(emb.Ftil, emb.Ftil_star)]   # eq 15
    dep_rows = [lsub(e) for e in emb.dep_rows]
    rest = [lsub(e) for e in emb.aux] + (dep_rows if with_dep else [])
    S, s = _linear_system(minimal + rest, z, model.name)
    return S, s, dep_rows, any(e.has(f) for e in minimal for f in free)


def _coefficient_form(model, emb, laws, free, with_dep):
    """(S, s, (F + F*)_dep, coupled) read from the model's coefficients, no differentiation:
    with udot = T udot_ind + g (T = [I; D] by rows, g_dep = Ddot u_ind + Edot, eq 12) and
    the forces f = P f_free + p0 (the mode's laws, linear in the free forces),
    F + F* = b + A_u udot + A_f f gives the minimal rows T^T (A_u T, A_f P | -(b + A_u g +
    A_f p0)) (eq 13-15), the auxiliary rows alike and the dependent rows without T^T.
    None where the coefficients do not cover the model (equations or laws not linear in
    udot and the forces, a law holding an acceleration or a force given a law): the
    differentiated form decides those."""
    terms = model.linear_terms()
    if terms.nonlinear is not None:
        return None
    fixed = set(model.ud) | set(laws)
    free_set = set(free)
    zero_f = {f: 0 for f in free}
    index = {f: i for i, f in enumerate(model.forces)}
    law_rows = []                       # (force index, l0, [dlaw/df_free])
    for f, law in laws.items():
        if law.free_symbols & fixed:
            return None
        L = [se.diff(law, c) for c in free]
        if any(c.free_symbols & free_set for c in L):
            return None
        law_rows.append((index[f], law.subs(zero_f) if free else law, L))
    free_idx = [index[f] for f in free]
    ind, dep, D, g = emb.ind, emb.dep, emb.D, emb.g_dep
    m, n_ind = len(dep), len(ind)
    u_sub = emb.u_sub
    sub = (lambda e: e.subs(u_sub)) if u_sub else (lambda e: e)  # noqa: E731

    def forcing(b, Af):
        """b + A_f p0 and A_f P, dependent speeds substituted."""
        row = [sub(c) for c in Af]
        b = sub(b)
        extra = [row[k] * l0 for k, l0, _ in law_rows if row[k] != 0 and l0 != 0]
        F = [_add(row[i], [row[k] * L[j] for k, _, L in law_rows if row[k] != 0 and L[j] != 0])
             for j, i in enumerate(free_idx)]
        return _add(b, extra), F

    def with_T(Au_row, b):
        """(A_u T) of one row and b + A_u g: the row's udot_ind coefficients and its rest."""
        Au_row = [sub(c) for c in Au_row]
        a_dep = [Au_row[j] for j in dep]
        AT = [_add(Au_row[i], [a_dep[l] * D[l, p] for l in range(m)]) for p, i in enumerate(ind)]
        return AT, _add(b, [a_dep[l] * g[l] for l in range(m)])

    n = model.n
    AT, Af, r0 = [None] * n, [None] * n, [None] * n
    for i in range(n):
        b, Af[i] = forcing(terms.b[i], terms.Af[i])
        AT[i], r0[i] = with_T(terms.Au[i], b)

    def TT(v, p):
        """(T^T v)_p, v(i) a function of the speed index."""
        return _add(v(ind[p]), [D[k, p] * v(dep[k]) for k in range(m)])

    rows, rhs = [], []
    for p in range(n_ind):                                                  # eq 13-15
        rows.append([TT(lambda i: AT[i][j], p) for j in range(n_ind)]  # noqa: B023
                    + [TT(lambda i: Af[i][c], p) for c in range(len(free))])  # noqa: B023
        rhs.append(-TT(r0.__getitem__, p))
    coupled = any(e != 0 for r in rows for e in r[n_ind:])
    for a in range(len(model.aux)):
        b, Fa = forcing(terms.ba[a], terms.Aaf[a])
        ATa, ra = with_T(terms.Aau[a], b)
        rows.append(ATa + Fa)
        rhs.append(-ra)
    z = [model.ud[i] for i in ind] + list(free)
    dep_rows = [_add(r0[j], [c * x for c, x in zip(AT[j] + Af[j], z)]) for j in dep]
    if with_dep:
        for j in dep:
            rows.append(AT[j] + Af[j])
            rhs.append(-r0[j])
    S = se.DenseMatrix(rows) if rows else se.zeros(0, 0)
    s = se.DenseMatrix([[e] for e in rhs]) if rhs else se.zeros(0, 1)
    return S, s, dep_rows, coupled


def _add(first, terms):
    """first + sum(terms) as one symengine Add (first itself when there are no terms)."""
    return se.Add(first, *terms) if terms else first


def _linear_system(eqs, unknowns, name):
    """eqs (linear in unknowns) = 0 as S z = s."""
    if len(eqs) != len(unknowns):
        raise ModelDefinitionError(
            f"model {name!r}: {len(eqs)} equations for the {len(unknowns)} unknowns "
            f"{[str(x) for x in unknowns]}")
    z0 = {x: 0 for x in unknowns}
    S = se.DenseMatrix([[se.diff(e, x) for x in unknowns] for e in eqs]) if eqs else se.zeros(0, 0)
    for e in S:
        if any(e.has(x) for x in unknowns):
            raise ModelDefinitionError(
                f"model {name!r}: equations are not linear in {[str(x) for x in unknowns]}")
    s = se.DenseMatrix([-e.subs(z0) for e in eqs]) if eqs else se.zeros(0, 1)
    return S, s


def _solve_blocks(S, s, n_min, n_ud, coupled):
    """Solve S z = s symbolically; when the minimal equations hold no force, solve them
    first (eq 15-16) and recover the forces from the remaining rows."""
    n = S.rows
    if n == 0:
        return []
    if coupled or n_min == n or n_ud == 0:
        z = S.LUsolve(s)
        return [z[i] for i in range(n)]
    A = S[:n_min, :n_ud]
    ud = A.LUsolve(s[:n_min, :])
    rest_A = S[n_min:, n_ud:]
    rest_b = s[n_min:, :] - S[n_min:, :n_ud] * ud
    f = rest_A.LUsolve(rest_b)
    return [ud[i] for i in range(n_ud)] + [f[i] for i in range(f.rows)]
