"""First-call costs paid at set-up, so that the first event of a real-time run does not pay them.

Paid here: numpy's and LAPACK's first solve or QR, a constraint's compile on first use, the
first unpickling of a symengine expression or an LLVM function (what each costs: docs/design.md,
"Facts measured on these machines").
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
from ..base.lazy import symengine as se

from ..modes.functions import lambdify
from ..base.flapack import routine
from ..embedding.partition import SMALL_M, kappa, partition
from ..modes.numeric import EntryTerms
from .activation import solve
from .projection import exercise

_WARMED = []          # the process-wide part is done


def warm_up(sim, calls=True):
    """Call, once, what event handling uses: every constraint's compiled terms, the
    unconstrained terms, the linear algebra of an event at this model's sizes, every
    compiled mode's functions; and, compiled with LLVM, the entry terms of every mode's
    constraint set (``EntryTerms``, kept in the mode library).

    Parameters
    ----------
    sim : Simulator
        Started (its state is where the functions are called; nothing of it changes).
    calls : bool
        Make the calls (a real-time run, whose first event must not pay them), and load
        scipy's LAPACK if a mode has more than ``partition.SMALL_M`` constraints (10 ms),
        though every pivoted QR so far was shipped (``partition.shipped``).  False (an
        offline run): only the library's hand-over of the entry terms (which decides what
        later events compute); each first call is paid when the run makes it, if ever, and
        shipped object code no call needs is never placed (``native._unpickled``).
    """
    n = sim.model.n
    library = sim.library
    tq = np.concatenate(([sim.t], sim.q, sim.pvec))
    tqu = np.concatenate(([sim.t], sim.q, sim.u, sim.pvec))
    with np.errstate(all="ignore"):
        for name in list(sim.aut.constraints):
            terms = sim.forms.constraint_terms(name)
            if not calls:
                continue
            terms.BC(tq)
            terms.gamma(tqu)
            if terms.phi is not None:
                terms.phi(tq)
        for mode in list(sim.aut.modes.values()):
            active = tuple(sorted(mode.constraints))
            if active and active not in library.entry:
                shipped = library.entry_warm.pop(active, None)   # compiled here at build time
                if shipped is None:
                    sim.forms.symbolic()    # a scenario image's symbols, for the compile
                    shipped = EntryTerms(sim.model, sim.forms.constraint_set(active),
                                         sim.psyms, "llvm")
                library.entry[active] = shipped
            if active and calls:
                sim.mode_compiler.entry([sim.forms.constraint_terms(c) for c in active], sim.t, sim.q, sim.u, sim.pvec)
        terms = sim.mode_compiler.numeric_terms()
        if not calls:
            return
        terms.evaluate(sim.t, sim.q, sim.u, sim.pvec)
        most = max([len(md.constraints) for md in sim.aut.modes.values()] + [1])
        k = n + most + 2
        for size in range(1, k + 1):
            a = np.eye(size) + 0.1
            np.linalg.solve(a, np.ones(size))
            solve(a, np.ones(size))     # the activation jump's: its error state's callback
            np.linalg.inv(a)
            # no more rows than a mode has constraints: a pivoted QR of more than
            # ``partition.SMALL_M`` would import scipy for a model that never needs it
            m = min(max(1, size // 2), most)
            B = np.ones((m, size)) + np.eye(m, size)
            partition(B)
            kappa(B, tuple(range(m)))
        for m in range(1, n + 1):   # a chart of any set a run may enter (a fence announced)
            exercise(m, n)
        if most > SMALL_M:
            routine("dgeqp3")
        # once a process (each LLVM compile keeps its memory), and only where symengine is
        # in use: a process stepping on shipped object code never imports it (issue 30)
        if not _WARMED and "symengine" in sys.modules:
            x = se.Symbol("x")   # unpickling symengine expressions and LLVM functions
            pickle.loads(pickle.dumps([se.sin(x) + 1,
                                       lambdify([x], [se.sin(x)], "x", "llvm")]))
            _WARMED.append(True)
        for compiled in list(library.modes.values()) + list(library.numeric_modes.values()):
            try:
                compiled.output_at(sim.t, np.full(compiled.nx, 0.5), sim.pvec)
            except Exception:  # noqa: BLE001 - a dummy state may be singular for a mode
                pass
        for mode in [m for m in list(library.terms_programs.values()) if m is not None]:
            half = np.full(mode.n, 0.5)     # the prepared programs' machine code paged in: the
            mode.enter(0.0, half, half, sim.pvec, True)  # switch (its entry call) and its step
            mode.rk4(0.0, 1e-3, np.full(mode.nx, 0.5), sim.pvec)   # find it warm (dummy state)
