"""Forming one mode's equations symbolically, ready to compile (the symbolic layer's entry point).

A function of the model, the mode (laws, switching conditions, outputs), its constraint set
and the partition of the speeds: the embedding (gillespie2005 eq 11-12), the recombined
equations (eq 13-16), the contact forces and multipliers (Sec 5.4) and the monitors, as
picklable symengine expressions (``compile.mode_parts``).  The stepping process calls it on
a mode's first entry, the background worker (``embed.worker``) without any simulator.  See
docs/design.md, "Data flow": symbolic work stops at the compile step.
"""

from __future__ import annotations

import symengine as se

from .compile import mode_parts, norm1
from .constraints import velocity
from .embedding import ModeEquations, embed
from .model import TIME
from .numeric import lam_symbol


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
        (``Simulator.mode_exprs``); multipliers are named ``lambda_<constraint>``.
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
    moving = list(model.q) + [TIME]
    if any(e.has(v) for c in cset.items for e in c.B for v in moving):
        B1inv = emb.B1inv
        kap = norm1([list(c.B) for c in cset.items]) * norm1(
            [[B1inv[i, j] for j in range(B1inv.ncols())] for i in range(B1inv.nrows())])
    return mode_parts(model, eqs, params, outs, res, guards, kap, compose_ops)
