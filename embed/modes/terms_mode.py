"""The mode of the compiled-terms path (``TermsProgramMode``): one compiled call a step
(``embed.modes.terms_program``), any partition of the speeds as data, entering a constraint set
in one call; ``make_terms_mode`` compiles it for a mode of an automaton."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .programs import rhs_program
from ..model.constraints import moving_B
from ..base.errors import CompilationError
from ..base.tolerances import ACTIVATION_TOL, PHI_TOL, PIVOT_RANK_TOL
from .modes import ProgramMode
from ..codegen.native import Buffer, compile_program
from .terms_program import constraint_template, model_template, supported, terms_program

PARTITIONS_AHEAD = 1000   # a program's partition copies made ahead up to this many (3 KB each)


def partition_tail(ind, dep, flag):
    """The step's arguments after p: [perm..., iperm..., flag] with perm = [ind..., dep...]
    (the partition as data, eq 11) and the correction's flag (``newton_program``)."""
    perm = tuple(ind) + tuple(dep)
    iperm = [0] * len(perm)
    for k, j in enumerate(perm):
        iperm[j] = k
    return np.array(perm + tuple(iperm) + (flag,), dtype=float)


class TermsProgramMode(ProgramMode):
    """A mode (constraint set, any partition) of the compiled-terms path as one compiled call
    a step (``terms_program``): the partition is data, so a re-selection of the independent
    speeds costs no embedding and no compile.  ``with_dep(dep)`` gives the mode for a
    partition (sharing the compiled function)."""

    path = "numeric"

    def __init__(self, meta, key, fns):
        ProgramMode.__init__(self, meta, key, fns)
        self._meta = meta
        self._made = (meta, key, fns)   # what it pickles as (object code: shipped, issue 30)
        n = self.n
        self._tail = partition_tail(self.ind, self.dep, 1.0)
        # its argument buffer made now, as each partition's copy makes its own (``with_dep``):
        # none in an event step
        self._inb = self._argument_buffer(2 + self.nx + meta["n_rest"])
        self._copies = {self.dep: self}      # every partition's mode, shared by the copies
        m = self.sizes[4]
        npar = meta["n_rest"] - 2 * n - 1
        self._e_in = Buffer(1 + 2 * n + npar + 2)          # ``entry_program``'s layout
        self._e_out = Buffer(2 + 3 * m + self.nx + self.n_mon)

    def enter(self, t, q, u, p, allow, tol=ACTIVATION_TOL):
        """Entering this mode's constraints at (t, q, u) in one compiled call
        (``entry_program``): the activation jump (mueller eq 7) if ``allow``, the dependent
        speeds (eq 11), the state x = [q, u_ind] and the monitors there.

        Returns
        -------
        tuple or None
            (dep, x, monitors, impulses: a list, or None where there is no jump); None where
            the general path must decide (Phi above PHI_TOL: the configuration is projected
            first; a singular K or a rank-deficient B: it says which constraints; anything
            not finite), or where there is nothing to enter (no constraint).
        """
        if self._enter is None or not self.sizes[4]:
            return None
        m, n, nx = self.sizes[4], self.n, self.nx
        args, out = self._e_in.array, self._e_out.array
        # written as a step's ``_load`` writes its arguments (numpy's paths the stepping loop
        # keeps warm; np.concatenate's, found cold: docs/design.md, "One compiled call a step")
        args[0] = t
        args[1:1 + n] = q
        args[1 + n:1 + 2 * n] = u
        args[1 + 2 * n:-2] = p
        args[-2] = 1.0 if allow else 0.0
        args[-1] = tol
        self._enter(self._e_in.at, self._e_out.at)
        head = out[:2 + 3 * m].tolist()
        diag = head[2:2 + m]
        if not (head[0] <= PHI_TOL and diag[-1] > PIVOT_RANK_TOL * max(diag[0], 1.0)):
            return None         # (head[0] is nan where any output is not finite)
        dep = tuple(int(d) for d in head[2 + m:2 + 2 * m])
        x = out[2 + 3 * m:2 + 3 * m + nx].copy()
        return dep, x, out[2 + 3 * m + nx:].copy(), head[2 + 2 * m:] if head[1] else None

    def rhs(self, t, x, p):
        """xdot = [qdot, udot_ind] (eq 2 and 16): the stage, compiled on first use."""
        if self._rhs is None:
            self._rhs = compile_program(*rhs_program(self.nx, self._meta["n_rest"],
                                                     self._meta["stage"]),
                                        f"the right-hand side of mode {self.key}")
        return ProgramMode.rhs(self, t, x, p)

    def __reduce__(self):
        return (_terms_mode, self._made + (self.dep, self.correct))

    def with_dep(self, dep):
        """The same compiled mode for the dependent speeds ``dep``: a copy sharing the compiled
        function, made once (``partitions`` makes them ahead: an event step that makes one
        finds the 30 entries it copies cold; docs/design.md, "One compiled call a step")."""
        dep = tuple(dep)
        mode = self._copies.get(dep)
        if mode is None:
            mode = object.__new__(TermsProgramMode)
            mode.__dict__.update(self.__dict__)
            mode.dep, mode.ind = dep, tuple(i for i in range(self.n) if i not in dep)
            mode.key = self.key[:2] + (dep,)
            mode._tail = partition_tail(mode.ind, dep, self._tail[-1])
            mode._inb = mode._argument_buffer(2 + self.nx + self._meta["n_rest"])
            self._copies[dep] = mode
        return mode

    def uncorrected(self):
        """This mode without the step's Newton correction (``ProgramMode.uncorrected``), whose
        partitions (``with_dep``) are uncorrected too."""
        mode = ProgramMode.uncorrected(self)
        mode._copies = {mode.dep: mode}
        return mode

    def partitions(self, limit=PARTITIONS_AHEAD):
        """Make the copies of every partition ahead (``with_dep``), if there are at most
        ``limit`` (n choose m)."""
        n, m = self.n, len(self.dep)
        if math.comb(n, m) <= limit:
            for dep in itertools.combinations(range(n), m):
                self.with_dep(dep)


def _terms_mode(meta, key, fns, dep, correct):
    """A ``TermsProgramMode`` loaded (``__reduce__``): made again from its compiled function,
    uncorrected if it was, for the partition ``dep``."""
    mode = TermsProgramMode(meta, key, fns)
    if not correct:
        mode = mode.uncorrected()
    return mode.with_dep(dep)


def make_terms_mode(forms, mode_id, active, dep, opt=None):
    """The ``TermsProgramMode`` of a mode of ``forms`` (``embed.modes.forming.AutomatonForms``) with
    the constraints ``active``, compiled (CompilationError where ``supported`` is not)."""
    model, lib = forms.model, forms.library
    cset = forms.constraint_set(active)
    mode = forms.automaton.modes[mode_id]
    if not supported(model, cset) or mode.laws:
        raise CompilationError(f"mode {mode_id} with {list(active)}: no compiled-terms program")
    terms = lib.shared("terms_program.model", lambda: compile_program(
        *model_template(model, forms.psyms), "the unconstrained terms of the model"))
    ctemps = [lib.shared(("terms_program.constraint", c.name),
                         lambda c=c: constraint_template(model, c, forms.psyms))
              for c in cset.items]
    outs, guards = forms.mode_exprs(mode_id)
    watch = moving_B(model, cset.items)
    lam_names = list(mode.constraints) + sorted(
        {str(x)[len("lambda_"):] for e in list(outs) + list(guards) for x in e.free_symbols
         if str(x).startswith("lambda_")} - set(mode.constraints))
    (prog, res), stage = terms_program(model, forms.psyms, cset, (terms, ctemps), outs, guards,
                                       lam_names, watch)
    fn = compile_program(prog, res, f"the compiled terms of mode {mode_id} {list(active)}", opt)
    n = model.n
    meta = {"sizes": (n, 0, len(outs), len(guards), len(cset)), "nx": 2 * n - len(cset),
            "ind": tuple(i for i in range(n) if i not in dep), "dep": tuple(dep),
            "n_rest": len(forms.psyms) + 2 * n + 1, "stage": stage}
    return TermsProgramMode(meta, (mode_id, tuple(active), tuple(dep)), (fn,))
