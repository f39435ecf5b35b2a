"""A simulator's compiled modes: from the shared library, or formed and compiled when entered.

The compiled mode of a (mode, constraint set, partition) on the symbolic path (gillespie2005
eq 11-16: ``embed.modes.forming``, ``embed.modes.compile``) or on the compiled-terms path
(``embed.modes.numeric``), the entry terms of a constraint set (mueller eq 7), the unconstrained
terms compiled once (Sec 5.5), and the background worker's answers (Sec 6.2).  Everything
compiled goes to the ``ModeLibrary`` the simulators of a scenario share.  See docs/design.md,
"Data flow".
"""

from __future__ import annotations

import time
from itertools import combinations

import numpy as np

from .compile import make_mode
from ..base.errors import ConstraintRankError, SymbolicBudgetError
from ..base.record import Record
from .formulations import Formulation, FullStateMode
from .numeric import NumericMode, NumericTerms
from .prepared import PreparedPrograms
from .terms_mode import TermsProgramMode


class Path(Record):
    """How a mode not in the library is made, on one embedding path (``PATHS``).

    reuse_numeric: a numeric mode made before serves (else only the symbolic library's);
    program_first: a prepared compiled-terms program serves before any embedding; embeds: the
    mode is embedded and compiled symbolically here (eq 11-16), with ``backend`` (None:
    ``functions.BACKEND``) and, if ``prepare_reselections``, the compiled-terms program of its
    re-selections prepared too; submits: a mode made numeric is asked of the background
    workers."""

    FIELDS = ("reuse_numeric", "program_first", "embeds", "backend", "prepare_reselections",
              "submits")
    FROZEN = True

    def __init__(self, reuse_numeric: bool, program_first: bool, embeds: bool,
                 backend: str | None = None, prepare_reselections: bool = False,
                 submits: bool = False):
        self.__dict__.update(reuse_numeric=reuse_numeric, program_first=program_first,
                             embeds=embeds, backend=backend,
                             prepare_reselections=prepare_reselections, submits=submits)


# (embedding, starting: the initial mode being entered) -> its path.  A re-selection of the
# independent speeds (Sec 5.4) reuses numeric modes and takes a prepared program first on
# every path; a stub constraint or a set over the symbolic budget is never embedded.
SYMBOLIC = Path(reuse_numeric=False, program_first=False, embeds=True, prepare_reselections=True)
NUMERIC = Path(reuse_numeric=True, program_first=True, embeds=False)
PATHS = {
    ("symbolic", False): SYMBOLIC,
    ("symbolic", True): SYMBOLIC,
    ("numeric", False): NUMERIC,
    ("numeric", True): NUMERIC,
    # the first mode of a background simulator is compiled at set-up, with LLVM; the others
    # run numeric (a prepared program first) until the workers' answers come
    ("background", False): Path(reuse_numeric=True, program_first=True, embeds=False,
                                submits=True),
    ("background", True): Path(reuse_numeric=True, program_first=False, embeds=True,
                               backend="llvm", submits=True),
}


class ModeCompiler(PreparedPrograms):
    """The compiled modes of one simulator's automaton.

    Parameters
    ----------
    forms : embed.modes.forming.AutomatonForms
        The simulator's view of its automaton, in symbols.
    embedding : str
        "symbolic", "numeric" or "background" (see ``Simulator``).
    compiler : embed.background.client.BackgroundCompiler or None
        The background workers' client ("background").
    uses_rhs : bool
        Whether the integrator needs the right-hand side alone (the adaptive solver).
    formulation : embed.modes.formulations.Formulation or None
        A full-state formulation (multipliers, projection, soft) has its own compiled modes
        (``FullStateMode``), whatever the embedding; None: the embedding.
    """

    def __init__(self, forms, embedding, compiler=None, uses_rhs=False, formulation=None):
        self.forms, self.library = forms, forms.library
        self.formulation = formulation or Formulation()
        self.full_state_modes = {}       # key -> FullStateMode (formulation != embedding)
        self._asked = set()              # keys this simulator asked the workers for
        self.uncorrected = {}            # key -> a program mode without the step's correction
        self.embedding, self.compiler, self.uses_rhs = embedding, compiler, uses_rhs
        self.starting = False            # the initial mode is being entered (``compiled``)
        self.embed_times = []            # wall seconds of each cold embedding + compile
        self.background_latency = None   # seconds from asking the worker to its latest answer

    # ------------------------------------------------------ run-time definitions
    def add_constraint(self, c):
        """Make a constraint known at run time (it is compiled on its own, Sec 5.5)."""
        self.forms.add_constraint(c)
        if self.compiler is not None:
            self.compiler.announce(c)

    def add_mode(self, mode):
        """A mode defined at run time (a geometry announced by the master, say); its
        constraints must be known (``add_constraint``)."""
        self.forms.add_mode(mode)
        if self.library.terms is not None:
            outs, guards = self.forms.mode_exprs(mode.id)     # the real symbols now
            self.library.terms.bind(self.forms.model, self.forms.psyms)
            self.library.terms.add_mode(mode.id, mode.laws, outs, guards, mode.constraints)
        if self.compiler is not None:
            self.compiler.announce_mode(mode)

    # ------------------------------------------------------------------ terms
    def numeric_terms(self):
        """The unconstrained terms compiled once (Sec 5.5), built on first use."""
        if self.library.terms is None:
            forms = self.forms.symbolic()      # a scenario image's: the real symbols now
            modes = forms.automaton.modes
            self.library.terms = NumericTerms(
                forms.model, forms.psyms, {k: forms.mode_exprs(k)[0] for k in modes},
                {k: forms.mode_exprs(k)[1] for k in modes},
                {k: md.laws for k, md in modes.items()},
                {k: md.constraints for k, md in modes.items()})
        return self.library.terms

    def entry(self, rows, t, q, u, pvec):
        """(K, B, [0; -(B u + C)], Phi) of the constraints ``rows`` (ConstraintTerms) at
        (t, q, u) (``EntryTerms``, mueller eq 7): one call where the set's entry terms were
        compiled at set-up (``warm_up``) or by the worker, else assembled from each
        constraint's own terms and the unconstrained mass matrix."""
        entry = self.library.entry_terms(tuple(row.name for row in rows))
        if entry is not None:
            return entry(t, q, u, pvec)
        return self.assembled_entry(rows, t, q, u, pvec)

    def assembled_entry(self, rows, t, q, u, pvec):
        """``entry`` assembled from each constraint's own terms and the unconstrained mass
        matrix, whatever was compiled (the consistent start's: ``switching.consistent_start``)."""
        n, m = self.forms.model.n, len(rows)
        B, C = self.forms.constraint_rows(rows, t, q, pvec)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = self.numeric_terms().mass(t, q, u, pvec)
        K[:n, n:] = B.T
        K[n:, :n] = B
        tq = np.concatenate(([t], q, pvec))
        phi = [row.phi(tq)[0] for row in rows if row.holonomic]
        return K, B, np.concatenate((np.zeros(n), -(B @ u + C))), np.array(phi)

    # ------------------------------------------------------------------ modes
    def compiled(self, mode_id, dep, active=None, reselect=False):
        """The mode's compiled functions (``_compiled``); without the step's Newton correction
        (``ProgramMode.correct``) where the formulation turns the configuration projection
        off (haug_pavesic2023's contribution measured, issue 15)."""
        compiled = self._compiled(mode_id, dep, active, reselect)
        if self.formulation.configuration_projection or not getattr(compiled, "correct", 0.0):
            return compiled
        plain = self.uncorrected.get(compiled.key)
        if plain is None or plain._step is not compiled._step:
            plain = self.uncorrected[compiled.key] = compiled.uncorrected()
        return plain

    def _compiled(self, mode_id, dep, active=None, reselect=False):
        """The mode's compiled functions: symbolic (from the library, or embedded and compiled
        now) or numeric.

        Parameters
        ----------
        mode_id : int
        dep : tuple of int
            The dependent speeds.
        active : tuple of str or None
            The active constraints (default: the mode's own).
        reselect : bool
            A re-selection of the independent speeds (Sec 5.4): where the mode is not in the
            library, the prepared compiled-terms program runs it (no embedding in the step).

        Returns
        -------
        compiled mode (``embed.modes.modes.CompiledModeProtocol``)
        """
        forms, library = self.forms, self.library
        mode = forms.automaton.modes[mode_id]
        active = tuple(sorted(mode.constraints if active is None else active))
        key = (mode_id, active, tuple(dep))
        if self.formulation.full_state:
            return self.full_state(mode, active, key)
        path = PATHS[self.embedding, self.starting]
        compiled = library.mode(key)
        if compiled is None and (path.reuse_numeric or reselect
                                 or active in library.over_budget):
            compiled = library.numeric_modes.get(key)     # entered before: nothing to make
        if compiled is not None:
            return compiled
        prepared = self.terms_mode(mode_id, active, dep)
        if prepared is not None and (reselect or path.program_first):
            library.numeric_modes[key] = prepared       # nothing embedded: no embed_times
            return prepared
        forms.symbolic()         # nothing compiled for it: a scenario image's symbols now
        mode = forms.automaton.modes[mode_id]
        t0 = time.perf_counter()
        # a constraint known only by its compiled terms (a stub, B empty: a geometry prepared
        # elsewhere) has nothing to embed symbolically: its modes come ready-made (a family's
        # embedding) or run on the numeric path
        stub = any(not forms.automaton.constraints[c].B for c in active)
        symbolic = path.embeds and not stub and active not in library.over_budget
        if symbolic:
            try:
                parts = forms.mode_parts(key)
            except SymbolicBudgetError as exc:      # too large to embed: the numeric path,
                library.over_budget[active] = str(exc)   # for every partition of the set
                symbolic = False
                if self._wants_program(active):
                    prepared = self.terms_mode(mode_id, active, dep, build=True)
        if symbolic:
            compiled = library.install(key, make_mode(parts, key, backend=path.backend))
            if path.prepare_reselections and self._wants_program(active):
                self.terms_mode(mode_id, active, dep, build=True)   # not in a step later
        else:
            compiled = library.numeric_modes.get(key) or prepared
            if compiled is None:
                cset = forms.constraint_set(active)
                compiled = NumericMode(
                    self.numeric_terms(), mode, cset, dep, len(forms.outputs), key,
                    [forms.constraint_terms(c.name) for c in cset.items])
            library.numeric_modes[key] = compiled
            # the worker embeds what runs on numpy (NumericMode); a compiled-terms program is
            # one compiled call a step already, as fast as the symbolic path's: asking for its
            # partitions would only take the stepping process's core from it (a 1 kHz loop)
            # offline, a mode another instance asked for (a real-time one, not waiting) is
            # asked for again and waited for: its answer must not depend on that one's pace
            offline = self.compiler is not None and not getattr(self.compiler, "real_time",
                                                                  False)
            if (path.submits and not stub
                    and active not in library.over_budget
                    and not isinstance(compiled, TermsProgramMode)
                    and (key not in library.submitted
                         or (offline and key not in self._asked))):
                library.submitted.setdefault(key, time.perf_counter())
                self._asked.add(key)
                self.compiler.submit(key, rhs=self.uses_rhs)
                if offline:
                    # offline: the worker's answer taken now, whatever the master's pace, so
                    # that the run is the same bits paced or not (issue 33)
                    self.compiler.wait()
                    self.poll_background()
                    compiled = library.mode(key) or compiled
        self.embed_times.append(time.perf_counter() - t0)
        return compiled

    def full_state(self, mode, active, key):
        """The mode of a full-state formulation (``embed.modes.formulations``): from the compiled
        terms, no symbolic work; one per (mode, active constraints), whatever ``dep``."""
        compiled = self.full_state_modes.get(key[:2])
        if compiled is None:
            t0 = time.perf_counter()
            self.forms.symbolic()
            cset = self.forms.constraint_set(active)
            compiled = self.full_state_modes[key[:2]] = FullStateMode(
                self.numeric_terms(), mode, cset, len(self.forms.outputs), key,
                [self.forms.constraint_terms(c.name) for c in cset.items], self.formulation)
            self.embed_times.append(time.perf_counter() - t0)
        return compiled

    def precompile(self, max_partitions=12):
        """Embed and compile (LLVM) every mode of the automaton for every choice of dependent
        speeds, at set-up: mode switches then cost no compile at all (small automata only)."""
        n = self.forms.model.n
        for mode_id, mode in list(self.forms.automaton.modes.items()):
            active = tuple(sorted(mode.constraints))
            deps = list(combinations(range(n), len(active)))
            if len(deps) > max_partitions:
                continue
            for dep in deps:
                key = (mode_id, active, dep)
                if self.library.mode(key) is not None or key in self.library.singular:
                    continue
                from ..embedding.equations import EXPLICIT_OPS_OFFLINE   # sympy: one to form
                try:
                    self.library.install(key, make_mode(
                        self.forms.mode_parts(key, EXPLICIT_OPS_OFFLINE), key, backend="llvm"))
                except ConstraintRankError:
                    self.library.singular[key] = True   # singular everywhere: not again
                    continue
                except SymbolicBudgetError as exc:   # too large: runs on the numeric path
                    self.library.over_budget[active] = str(exc)
                    break

    def poll_background(self, current=None):
        """Take the background worker's finished compiles into the library.

        Parameters
        ----------
        current : compiled mode or None
            The mode the simulator runs in.

        Returns
        -------
        compiled mode or None
            The symbolic path's compiled mode for ``current``'s key if it arrived now (the
            simulator moves to it at once: x and the monitors do not change).
        """
        if self.compiler is None:
            return None
        library, arrived = self.library, None
        for key, fns, meta in self.compiler.results():
            compiled = library.install(key, make_mode(meta, key, fns))
            t_sub = library.submitted.get(key)
            if t_sub is not None:
                self.background_latency = time.perf_counter() - t_sub
            if current is not None and current.key == key:
                arrived = compiled
        for kind, key, obj in self.compiler.extras():
            if kind == "entry":
                library.entry.setdefault(key, obj)
            elif key in library.modes:
                library.modes[key].set_rhs(obj)
        return arrived
