"""The unconstrained multibody model: Kane's terms F_r and F_r* formed once.

gillespie2005 eq 1-4: generalized speeds u = Y qdot + Z, kinematical equations
qdot = W u + X, dynamical equations F_r + F_r* = 0 (r = 1..n).  Auxiliary
generalized speeds (gillespie2005 Sec 5.4, Kane's method) bring contact forces
such as a normal force into evidence without adding degrees of freedom.

Everything below the ``Model`` constructor is symengine: sympy is only used to
read the user's sympy.physics.mechanics description.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from ..base.lazy import symengine as se
from sympy.physics.mechanics import KanesMethod, dynamicsymbols

from ..base.errors import ModelDefinitionError
from . import kane_terms
from . import symbols


def to_symengine(e):
    """A sympy/symengine expression or a number as symengine, never text: sympify parses
    strings, and nothing from outside may be parsed that way (geometry text goes through
    embed.base.expression's whitelist, which builds the sympy tree itself)."""
    if isinstance(e, se.Basic):
        return e
    return se.sympify(_expression_object(e))


def __getattr__(name):          # ``TIME``: made at its first use (``symbols``)
    if name == "TIME":
        return symbols.TIME
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _expression_object(e):
    """e itself if it is a number or a sympy/symengine expression; anything else (text
    above all) is refused before any sympify sees it."""
    if isinstance(e, (bool, int, float, np.integer, np.floating, np.bool_, sp.Basic, se.Basic)):
        return e            # (a numpy array is refused: it may hold text)
    raise ModelDefinitionError(f"{e!r} ({type(e).__name__}) where an expression was expected; "
                               "build expressions with sympy/symengine, never from text")


def plain_name(f) -> str:
    """Name of a dynamicsymbol q1(t) -> 'q1'."""
    return str(f.func) if isinstance(f, sp.Function) or hasattr(f, "func") else str(f)


class Model:
    """Unconstrained Kane equations of a multibody system.

    Parameters are the sympy.physics.mechanics objects of the model: the Newtonian
    ``frame``, coordinates ``q`` and speeds ``u`` (dynamicsymbols), the kinematical
    differential equations ``kd_eqs``, ``bodies`` and ``loads``; ``u_aux`` lists
    auxiliary speeds; ``forces`` lists the symbols of contact/constraint forces
    that appear in the loads (they are unknowns solved per mode); ``params`` and
    ``inputs`` are the symbols whose values are supplied at run time.
    """

    def __init__(self, frame, q, u, kd_eqs, bodies, loads, *, u_aux=(), forces=(),
                 params=(), inputs=(), name="model"):
        self.name = name
        self.frame, self.bodies = frame, list(bodies)   # what a run is drawn from (embed.interface.visuals)
        q, u, u_aux = list(q), list(u), list(u_aux)
        if len(q) != len(u):
            raise ModelDefinitionError(
                f"model {name!r}: {len(q)} coordinates but {len(u)} speeds; "
                "give one generalized speed per coordinate")
        t = dynamicsymbols._t
        n = len(q)
        # Plain symbols for q, u, udot; the time symbol becomes t.
        self.q = [se.Symbol(plain_name(x)) for x in q]
        self.u = [se.Symbol(plain_name(x)) for x in u]
        self.ud = [se.Symbol(plain_name(x) + "d") for x in u]
        sub = {}
        for qs, ss in zip(q, self.q):
            sub[qs] = sp.Symbol(str(ss))
        for us, ss, ds in zip(u, self.u, self.ud):
            sub[us.diff(t)] = sp.Symbol(str(ds))
            sub[us] = sp.Symbol(str(ss))
        sub[t] = sp.Symbol("t")

        self._plain_sub = sub      # data, not a closure: a formed model pickles (shipped)
        plain = kane_terms.take(name)     # formed at embed-fmu build, shipped (issue 30)
        if plain is None:
            km = KanesMethod(frame, q_ind=q, u_ind=u, kd_eqs=kd_eqs,
                             u_auxiliary=u_aux or None)
            fr, frstar = km.kanes_equations(bodies, loads)
            kdd = km.kindiffdict()
            plain = self._plain_terms(fr, frstar, n, [kdd[x.diff(t)] for x in q])
            kane_terms.record(name, plain)
        # F_r (eq 3-4), F_r*, the auxiliary equations, qdot = W u + X (eq 2): converted from
        # the plain sympy terms, fresh or shipped alike (bit for bit: embed.model.kane_terms)
        self.Fr, self.Frstar, self.aux, self.qdot = ([to_symengine(e) for e in part]
                                                     for part in plain)
        self.forces = [se.Symbol(str(f)) for f in forces]
        self.params = [se.Symbol(str(p)) for p in params]
        self.inputs = [se.Symbol(str(p)) for p in inputs]
        self.n = n
        self.constraints = {}      # by name: those of a System (from_system)
        self.joints = ()
        known = set(self.q) | set(self.u) | set(self.ud) | set(self.forces) \
            | set(self.params) | set(self.inputs) | {symbols.TIME}
        for i, e in enumerate(self.Fr + self.Frstar + self.aux + self.qdot):
            unknown = e.free_symbols - known
            if unknown:
                raise ModelDefinitionError(
                    f"model {name!r}: symbols {sorted(map(str, unknown))} appear in the "
                    "equations but are neither coordinates, speeds, forces, params nor inputs; "
                    "declare them")
        for f in self.forces:
            if not any(e.has(f) for e in self.Fr + self.aux):
                raise ModelDefinitionError(
                    f"model {name!r}: force symbol {f} appears in no load; remove it or apply it")

    @classmethod
    def from_system(cls, system, *, params=(), inputs=(), forces=(), constraint_names=None,
                    name="model"):
        """The model of a sympy.physics.mechanics ``System`` of bodies and joints, each joint's
        own speeds kept; its constraints (loop closures, ``QuaternionJoint`` normalizations,
        nonholonomic constraints) in ``model.constraints`` by name (``embed.joints``)."""
        from .joints import model_from_system
        return model_from_system(cls, system, params=params, inputs=inputs, forces=forces,
                                 constraint_names=constraint_names, name=name)

    def _plain_terms(self, fr, frstar, n, qdot):
        """F_r, F_r*, the auxiliary equations and qdot in the model's plain symbols, as sympy."""
        sub = self._plain_sub
        derivs = _derivs_first(sub)

        def plain(e):
            return e.xreplace(derivs).xreplace(sub)
        return ([plain(fr[i]) for i in range(n)], [plain(frstar[i]) for i in range(n)],
                [plain(fr[i] + frstar[i]) for i in range(n, fr.shape[0])],
                [plain(e) for e in qdot])

    def _to_plain(self, e):
        """A sympy expression in dynamicsymbols (or a number) in the model's plain symbols."""
        sub = self._plain_sub
        e = _expression_object(e)
        e = e if isinstance(e, sp.Basic) else sp.sympify(e)   # a number or symengine object
        return to_symengine(e.xreplace(_derivs_first(sub)).xreplace(sub))

    def linear_terms(self):
        """The model's equations as ``LinearTerms`` (b + A_u udot + A_f f), read once and kept."""
        terms = self.__dict__.get("_linear_terms")
        if terms is None:
            terms = self._linear_terms = LinearTerms(self)
        return terms

    def sym(self, expr):
        """Convert a user's sympy expression in dynamicsymbols to the model's symbols (a
        symengine expression is taken to be in them already)."""
        if isinstance(expr, se.Basic):
            return expr
        return self._to_plain(expr)

    def index_q(self, name: str) -> int:
        return [str(s) for s in self.q].index(name)


class LinearTerms:
    """The dynamical equations F_r + F_r* = b + A_u udot + A_f f (gillespie2005 eq 3-4; A_u = -M,
    the generalized mass matrix) and the auxiliary equations a = b_a + A_au udot + A_af f,
    their coefficients read once per model.

    Kane's equations are linear in the accelerations and the force symbols by construction;
    that is checked here, once: ``nonlinear`` names a coefficient that still holds an
    acceleration or a force (a load F**2, say), None if there is none.  An embedding forms its
    linear system from these blocks (``equations.ModeEquations``) instead of differentiating
    the recombined equations (eq 13-15) for each mode; a model with ``nonlinear`` set goes the
    differentiating way, which refuses it in any mode where that force is an unknown (one
    given a law there may enter nonlinearly).  Rows are lists of symengine expressions.
    """

    def __init__(self, model):
        unknown = list(model.ud) + list(model.forces)
        zero = {x: 0 for x in unknown}
        known = set(unknown)
        self.nonlinear = None

        def split(eqs):
            b = [e.subs(zero) for e in eqs]
            Au = [[se.diff(e, v) for v in model.ud] for e in eqs]
            Af = [[se.diff(e, v) for v in model.forces] for e in eqs]
            if self.nonlinear is None:
                self.nonlinear = next((c for row in Au + Af for c in row
                                       if c.free_symbols & known), None)
            return b, Au, Af

        self.b, self.Au, self.Af = split([fr + fs for fr, fs in zip(model.Fr, model.Frstar)])
        self.ba, self.Aau, self.Aaf = split(list(model.aux))


def _derivs_first(sub):
    return {k: v for k, v in sub.items() if isinstance(k, sp.Derivative)}
