"""Forming one mode's equations symbolically, ready to compile (the symbolic layer's entry point).

A function of the model, the mode (laws, switching conditions, outputs), its constraint set
and the partition of the speeds: the embedding (gillespie2005 eq 11-12), the recombined
equations (eq 13-16), the contact forces and multipliers (Sec 5.4) and the monitors, as
picklable symengine expressions (``compile.mode_parts``).  ``AutomatonForms`` holds an
automaton's own view (constraints and modes added at run time), its parameter symbols and
each constraint's compiled terms (Sec 5.5) over a ``ModeLibrary``: the stepping process's
simulator keeps one, the background worker (``embed.background.worker``) another, without any
simulator.  See docs/design.md, "Data flow": symbolic work stops at the compile step.
"""

from __future__ import annotations

import numpy as np

from ..model.constraints import ConstraintSet
from ..embedding.partition import partition
from ..base.errors import ModelDefinitionError

# the symbolic layers (compile, embedding, numeric's ConstraintTerms: sympy and symengine)
# are imported where a mode or a constraint is formed: a simulator whose modes are all
# compiled (a scenario image, issue 30) imports neither


def form_mode_parts(model, params, mode, cset, dep, outputs, guards, embeddings=None,
                    explicit_ops=None, compose_ops=None):
    """Symbolic embedding of one mode (gillespie2005 eq 11-16), ready to compile.

    Parameters
    ----------
    model : Model
    params : list of symbols
        The parameter vector's symbols (parameters, inputs, discrete variables).
    mode : Mode
        Its laws name the forces that are not constraint forces.
    cset : ConstraintSet
        The active constraints.
    dep : tuple of int
        The dependent speeds (the partition, eq 11).
    outputs, guards : list of expressions
        The mode's outputs and switching conditions in the model's symbols
        (``AutomatonForms.mode_exprs``); multipliers are named ``lambda_<constraint>``.
    embeddings : dict or None
        A cache of embeddings by (cset.key, dep), filled here.
    explicit_ops : int or None
        How large a system may be solved symbolically (larger off the stepping path).
    compose_ops : int or None
        How large monitors may go into the composed RK4 step.

    Returns
    -------
    dict
        The mode's parts (``compile.mode_parts``).
    """
    import symengine as se
    from .compile import mode_parts
    from .driven import driven_parts
    from .functions import norm1
    from .numeric import lam_symbol
    from ..embedding.embedding import embed
    from ..embedding.equations import ModeEquations
    from ..model.constraints import moving_B, velocity
    if len(dep) == model.n:          # 0 degrees of freedom: B solved numerically (embed.modes.driven)
        lam = {lam_symbol(c.name) for c in cset.items}
        zero = {s: se.Integer(0) for e in outputs + guards for s in e.free_symbols
                if str(s).startswith("lambda_") and s not in lam}
        parts = driven_parts(model, params, cset, tuple(dep), [e.subs(zero) for e in outputs],
                             [e.subs(zero) for e in guards])
        if parts is not None:
            return parts
    ekey = (cset.key, tuple(dep))
    emb = None if embeddings is None else embeddings.get(ekey)
    if emb is None:
        emb = embed(model, cset, tuple(dep))
        if embeddings is not None:
            embeddings[ekey] = emb
    eqs = ModeEquations(model, emb, dict(mode.laws), explicit_ops)
    sub = dict(zip(model.forces, eqs.forces))
    sub.update(emb.u_sub)
    # multipliers named in outputs and switching conditions: lambda_<constraint>
    lam = {lam_symbol(c): v for c, v in zip(cset.key, eqs.multipliers)}
    for e in outputs + guards:
        for sym in e.free_symbols:
            if str(sym).startswith("lambda_") and sym not in lam:
                lam[sym] = se.Integer(0)
    sub.update(lam)
    outs = [e.subs(sub) for e in outputs]
    guards = [e.subs(sub) for e in guards]
    res = []
    for c in cset.items:
        res.append(velocity(c, eqs.u_full))
        if c.holonomic:
            res.append(c.phi)
    kap = se.Integer(1)
    if moving_B(model, cset.items):
        B1inv = emb.B1inv
        kap = norm1([list(c.B) for c in cset.items]) * norm1(
            [[B1inv[i, j] for j in range(B1inv.ncols())] for i in range(B1inv.nrows())])
    return mode_parts(model, eqs, params, outs, res, guards, kap, compose_ops)


class AutomatonForms:
    """An automaton's modes and constraints in the model's symbols, over a mode library.

    Parameters
    ----------
    automaton : embed.model.automaton.Automaton
        Copied shallowly: constraints and modes added at run time (``add_constraint``,
        ``add_mode``) stay in this view (the library's keys are unique names and ids).
    library : embed.modes.library.ModeLibrary
        Where embeddings, converted expressions and constraint terms are kept.
    """

    def __init__(self, automaton, library):
        self.library = library
        # an image's (``embed.interface.image``): builds the real automaton, once needed
        self._thaw = _IMAGES.get(id(automaton))
        self._view(automaton)

    def _view(self, automaton):
        self.automaton = automaton.replace(constraints=dict(automaton.constraints),
                                           modes=dict(automaton.modes))
        m = self.model = automaton.model
        self.discrete_names = list(automaton.discrete)
        # the parameter vector's symbols: parameters, inputs, discrete variables (an
        # image's placeholders until it is thawed: their names and number only are read)
        self.psyms = list(m.params) + list(m.inputs) + [_symbol(k, self._thaw)
                                                        for k in self.discrete_names]
        self.pnames = [str(s) for s in self.psyms]
        self.outputs = list(automaton.outputs)

    def symbolic(self):
        """This view with the model's symbols: of an image (``register_image``), the real
        automaton built now (its modes, constraints and model take the image's places in
        this view, whose library and run-time additions stay); returns self."""
        if self._thaw is not None:
            thaw, self._thaw = self._thaw, None
            view, image_model, real = self.automaton, self.model, thaw[0]()
            known = dict(view.constraints), dict(view.modes)
            pnames, outputs = self.pnames, self.outputs
            self._view(real)
            fresh = self.automaton
            for k, c in known[0].items():
                fresh.constraints.setdefault(k, c)
            for k, md in known[1].items():
                fresh.modes.setdefault(k, md)
            vars(view).update(vars(fresh))       # one automaton object: the simulator's too
            self.automaton = view
            terms = self.library.terms        # shipped: compiled for the image's model
            if terms is not None and terms.model is image_model:
                terms.model = self.model
            if (self.pnames, self.outputs) != (pnames, outputs):
                raise ModelDefinitionError(
                    f"the scenario image of model {self.model.name!r} does not match the "
                    f"scenario built from its sources (parameters {pnames} against "
                    f"{self.pnames}); build the FMU again")
        return self

    @property
    def _output_exprs(self):
        """The automaton's outputs in the model's symbols, converted once, when a mode is
        first formed: a simulator whose modes are all compiled steps, enters modes and
        handles events without any symbolic work (issue 30; ``tests/test_frozen_scenario.py``)."""
        exprs = self.library.expressions
        if "out" not in exprs:
            self.symbolic()
            exprs["out"] = [self.model.sym(e) for e in self.automaton.outputs.values()]
            self.model.linear_terms()   # the model's coefficients, read before any embedding
        return exprs["out"]

    def parameter_vector(self, params):
        """The parameter vector (``pnames`` order) for the parameter values ``params`` (by
        name): inputs 0, discrete variables at their initial values.  The one place it is
        laid out: the simulator and the background worker start from it."""
        p = np.zeros(len(self.psyms))
        for i, s in enumerate(self.model.params):
            p[i] = float(params[str(s)])
        o = len(self.model.params) + len(self.model.inputs)
        p[o:] = [float(self.automaton.discrete[k]) for k in self.discrete_names]
        return p

    # ------------------------------------------------------------ constraints
    def constraint_set(self, names):
        """The ``ConstraintSet`` of the constraints ``names`` (ModelDefinitionError if unknown)."""
        try:
            return ConstraintSet([self.automaton.constraints[c] for c in names])
        except KeyError as exc:
            raise ModelDefinitionError(f"unknown constraint {exc}; known: "
                                       f"{sorted(self.automaton.constraints)}") from None

    def add_constraint(self, c):
        """Make a constraint known at run time (it is compiled on its own, Sec 5.5)."""
        self.symbolic()          # a constraint formed outside, in the real symbols
        known = self.automaton.constraints.get(c.name)
        if known is not None and known is not c:
            raise ModelDefinitionError(f"constraint {c.name!r} exists; give the new one another name")
        self.automaton.constraints[c.name] = c

    def constraint_terms(self, name):
        """A constraint's own compiled terms (B, C, gamma, Phi), built once (Sec 5.5).

        Parameters
        ----------
        name : str
            A constraint of this automaton.

        Returns
        -------
        ConstraintTerms
        """
        terms = self.library.constraint_terms.get(name)
        if terms is None:
            from .numeric import ConstraintTerms
            c = self.symbolic().automaton.constraints[name]
            terms = self.library.constraint_terms[name] = ConstraintTerms(self.model, c, self.psyms)
        return terms

    def constraint_rows(self, rows, t, q, pvec):
        """B and C of the constraints ``rows`` (ConstraintTerms) at (t, q): B u + C = 0 (eq 7)."""
        tq = np.concatenate(([t], q, pvec))
        BC = np.array([row.BC(tq) for row in rows]).reshape(len(rows), self.model.n + 1)
        return BC[:, :-1], BC[:, -1]

    def partition(self, names, t, q, pvec):
        """The dependent speeds for the constraints ``names`` at (t, q) by pivoting on B (eq 11)."""
        if not names:
            return ()
        rows = [self.constraint_terms(c) for c in names]
        return partition(self.constraint_rows(rows, t, q, pvec)[0], tuple(names))

    # ------------------------------------------------------------------ modes
    def add_mode(self, mode):
        """A mode defined at run time; its constraints must be known (``add_constraint``)."""
        self.symbolic()
        if mode.id in self.automaton.modes:
            raise ModelDefinitionError(f"mode {mode.id} exists; give the new one another id")
        self.automaton.modes[mode.id] = mode

    def know_mode(self, mode, constraints=()):
        """Make ``mode`` and its ``constraints`` known to this view, leaving those it knows
        already: a mode whose terms and compiled forms are installed ready-made (a family's
        member, its constraints stubs known by their compiled terms only); a scenario
        image's view stays without symbols (``symbolic`` keeps what it knows)."""
        for c in constraints:
            self.automaton.constraints.setdefault(c.name, c)
        self.automaton.modes.setdefault(mode.id, mode)

    def mode_exprs(self, mode_id, mode=None):
        """A mode's outputs (the automaton's, with the mode's overrides) and switching
        conditions (falling through 0 = fires, eq 18), in the model's symbols; of ``mode`` if
        given (one not in the automaton: not kept).

        Returns
        -------
        (list, list)
            Outputs and switching conditions as symengine expressions.
        """
        exprs = self.library.expressions
        if mode is not None or mode_id not in exprs:
            self.symbolic()
            m, md = self.model, mode or self.automaton.modes[mode_id]
            over = {k: m.sym(v) for k, v in md.outputs}
            outs = [over.get(k, e) for k, e in zip(self.outputs, self._output_exprs)]
            both = (outs, [m.sym(g.expr) * (-g.direction) for g in md.guards])
            if mode is not None:
                return both
            exprs[mode_id] = both
        return exprs[mode_id]

    def mode_parts(self, key, explicit_ops=None, compose_ops=None, mode=None, cset=None):
        """Symbolic embedding of one mode (eq 11-16), ready to compile (``form_mode_parts``).

        Parameters
        ----------
        key : tuple
            (mode id, active constraint names, dependent speeds).
        explicit_ops, compose_ops : int or None
            As in ``form_mode_parts``.
        mode, cset : Mode and ConstraintSet, optional
            A mode and its constraints that are not the automaton's (a family, embedded once
            for every member).

        Returns
        -------
        dict
            The mode's parts (``compile.mode_parts``).
        """
        mode_id, active, dep = key
        self.symbolic()
        mode = mode or self.automaton.modes[mode_id]
        cset = cset or self.constraint_set(active)
        outs, guards = self.mode_exprs(mode_id, None if mode_id in self.automaton.modes else mode)
        return form_mode_parts(self.model, self.psyms, mode, cset, dep, outs, guards,
                               self.library.embeddings, explicit_ops, compose_ops)


_IMAGES = {}     # id(an image's automaton) -> (real, placeholder), while the image lives


def register_image(automaton, real, placeholder):
    """Mark ``automaton`` as a scenario image's (``embed.interface.image``, no symbols):
    the forms of its simulators call ``real()`` for the real automaton (the scenario built
    from its sources) the first time they need symbols (``AutomatonForms.symbolic``);
    until then a discrete variable's symbol is ``placeholder(name)``."""
    import weakref
    _IMAGES[id(automaton)] = (real, placeholder)
    weakref.finalize(automaton, _IMAGES.pop, id(automaton), None)


def _symbol(name, image):
    """The parameter vector's symbol of a discrete variable (an image's placeholder)."""
    if image is not None:
        return image[1](name)
    import symengine as se
    return se.Symbol(name)
