"""The mode library: what a scenario's simulators compiled, shared (MuJoCo's MjModel to MjData).

Typed caches of the compiled model, apart from any run's state (``embed.hybrid.state``):

- ``modes``: compiled modes of the symbolic path by (mode id, active constraints, dep)
  (``CompiledMode``, ``LinearMode``, a scenario's own such as disk_fence's ``JetMode``);
- ``numeric_modes``: the same keys on the compiled-terms path (``NumericMode``);
- ``terms_programs``: a mode's compiled-terms program for every partition (``TermsProgramMode``)
  by (mode id, active constraints), None where a mode has none;
- ``embeddings``: symbolic embeddings (gillespie2005 eq 11-12) by (constraint set, dep);
- ``constraint_terms``: each constraint's own compiled terms by name (Sec 5.5);
- ``entry``: entry terms of a constraint set (mueller eq 7, ``EntryTerms``) by the set;
- ``sets``: an entered constraint set's rows, projection and watch (``switching.entered``);
- ``expressions``: outputs and switching conditions converted to the model's symbols;
- ``submitted``: background compiles asked for (key -> time asked);
- ``terms``: the unconstrained terms compiled once (``NumericTerms``), or None.

The simulators of a scenario share one library per embedding path (``ModeLibrary.of``: a
process-wide registry keyed by the automaton, so a ``Scenario`` stays data); the background
worker keeps its own.

Sharing across threads (issue 33): what is installed is kept, never replaced (``install``
keeps the first; a simulator holding a mode keeps the library's one), but a compiled mode is
not read-only while it runs: its scratch buffers (``Buffer``, a ``Tape``'s registers, a
``JetMode``'s stage buffers, a native function's memo) are written at every call.  So the
simulators of one automaton step under one lock (``lock``, ``ModeLibrary.lock_of``): held by
``Simulator.advance`` and by every FMI call of the FMU (``fmu_src.runtime.fmi2.fmi2_call``).
Instances of one scenario stepped from two threads take turns step by step, as the GIL would
have them do anyway; instances of different scenarios share nothing and do not wait.  See docs/design.md, "Data flow": the compiled numeric step is cached
per constraint set and partition.
"""

from __future__ import annotations

import copy
import threading
import weakref

_LIBRARIES = {}       # (id(automaton), embedding path) -> ModeLibrary, while the automaton lives
_LOCKS = {}           # id(automaton) -> the lock its simulators step under, while it lives
_LOCKS_LOCK = threading.RLock()
SYMBOLIC = ("embeddings", "expressions", "sets")    # not shipped (``picklable``)


def _without_expressions(mode):
    """``mode`` as shipped: a ``ProgramMode`` without its parts, its right-hand side compiled
    from them now; a ``CompiledMode`` (the lambda backend's small modes) without the
    expressions its right-hand side is compiled from at first use (the adaptive solver's),
    that function compiled now from the live ones instead (and shipped as object code): loaded
    expressions sum their terms in another order (docs/design.md, Start-up), and a right-hand
    side compiled from them would not be the bare FMU's bit for bit."""
    from .modes import CompiledMode, ProgramMode
    if type(mode) is ProgramMode and mode._parts is not None:
        mode.compile_rhs()                 # from the live parts (symengine expressions)
        out = copy.copy(mode)
        out._parts = out._args = out._f = None
        return out
    if type(mode) is not CompiledMode or mode._f is None:
        return mode
    if mode._rhs is None:                  # compiled as at its first use
        import numpy as np
        mode.rhs(0.0, np.zeros(mode.nx), np.zeros(len(mode._args) - 2 - mode.nx))
    out = copy.copy(mode)
    out._args = out._f = None
    return out


class ModeLibrary:
    """Typed caches of compiled modes and terms, shared by the simulators of one scenario."""

    __slots__ = ("modes", "numeric_modes", "terms_programs", "embeddings", "constraint_terms",
                 "entry", "entry_warm", "sets", "expressions", "submitted", "terms", "_own",
                 "over_budget", "singular", "lock")

    def __init__(self, lock=None):
        self.lock = lock or threading.RLock()   # held while a simulator of it steps
        self.modes, self.numeric_modes, self.embeddings = {}, {}, {}
        self.terms_programs = {}  # (mode id, active) -> TermsProgramMode (any partition) or None
        self.constraint_terms, self.entry, self.expressions, self.submitted = {}, {}, {}, {}
        # shipped entry terms that ``warm_up`` compiled at build time: handed to ``entry`` by
        # the FMU's own warm_up, not before (its start enters on assembled terms, as an FMU
        # that ships none: the same bits, ``fmu_src.runtime.formed.form``)
        self.entry_warm = {}
        self.sets = {}          # active constraints -> (rows, Projection, watch)
        # active constraints -> why their symbolic embedding was given up (SymbolicBudgetError):
        # their modes run on the numeric path, and no partition of them is embedded again
        self.over_budget = {}
        self.singular = {}      # (mode id, active, dep) -> True: a partition ``precompile``
        #                         found singular everywhere (shipped: not formed again)
        self.terms = None       # the unconstrained terms (``NumericTerms``), once compiled
        self._own = {}          # a scenario's own shared objects (``shared``)

    def __getstate__(self):
        """Pickled without its lock (a process's own): ``adopt`` gives a loaded library the
        lock of the scenario it serves."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "lock"}

    def __setstate__(self, state):
        self.lock = threading.RLock()
        self.entry_warm, self.singular = {}, {}
        for name, value in state.items():
            setattr(self, name, value)

    @classmethod
    def of(cls, automaton, embedding: str) -> "ModeLibrary":
        """The library of ``automaton`` on the embedding path ``embedding``, shared by every
        simulator of it in this process (dropped with the automaton).

        Parameters
        ----------
        automaton : embed.model.automaton.Automaton
        embedding : str
            "symbolic", "numeric" or "background".

        Returns
        -------
        ModeLibrary
        """
        key = (id(automaton), embedding)
        with _LOCKS_LOCK:
            library = _LIBRARIES.get(key)
            if library is None:
                library = _LIBRARIES[key] = cls(cls.lock_of(automaton))
                weakref.finalize(automaton, _LIBRARIES.pop, key, None)
        return library

    @staticmethod
    def lock_of(automaton):
        """The lock (reentrant) under which the simulators of ``automaton`` step, on every
        embedding path: their libraries' compiled modes have scratch buffers (module doc)."""
        key = id(automaton)
        with _LOCKS_LOCK:
            lock = _LOCKS.get(key)
            if lock is None:
                lock = _LOCKS[key] = threading.RLock()
                weakref.finalize(automaton, _LOCKS.pop, key, None)
        return lock
    @classmethod
    def adopt(cls, automaton, embedding: str, library: "ModeLibrary") -> "ModeLibrary":
        """Make ``library`` (compiled at ``embed-fmu build`` and shipped, issue 30) the one
        ``of(automaton, embedding)`` returns from now on; returns it."""
        key = (id(automaton), embedding)
        with _LOCKS_LOCK:
            if key not in _LIBRARIES:
                weakref.finalize(automaton, _LIBRARIES.pop, key, None)
            library.lock = cls.lock_of(automaton)   # its simulators step under the scenario's
            _LIBRARIES[key] = library
        return library

    def picklable(self) -> "ModeLibrary":
        """A copy holding only what pickles (object code, data).  A function of symengine's
        "lambda" backend pickles as its bit-exact object code (``Compiled.__reduce__``,
        ``embed.codegen.lambda_order``); one that has none is left out and compiled again
        when first needed, as without the copy.  The symbolic caches (``SYMBOLIC``: embeddings,
        converted expressions, entered sets) are left out too: formed again from the model
        that loads the copy (a loaded symengine expression lists its terms in another order,
        and LLVM code compiled from it differs in the last bit: ``embed.model.kane_terms``)."""
        import cloudpickle
        out = ModeLibrary()
        for name in self.__slots__:
            value = getattr(self, name)
            if name in SYMBOLIC or name == "lock":    # a lock is the process's own
                continue
            if isinstance(value, dict):
                kept = {}
                for k, v in value.items():
                    try:
                        v = _without_expressions(v)
                        cloudpickle.dumps((k, v))
                    except Exception:  # noqa: BLE001 - not shippable: formed again on demand
                        continue
                    kept[k] = v
                value = kept
            else:
                try:
                    cloudpickle.dumps(value)
                except Exception:  # noqa: BLE001
                    value = None
            setattr(out, name, value)
        out.submitted = {}       # asked of this process's worker, not of the next one's
        return out

    # -------------------------------------------------------------- typed access
    def mode(self, key):
        """The compiled mode of the symbolic path for key = (mode id, active, dep), or None.

        Parameters
        ----------
        key : tuple
            (mode id, sorted active constraint names, dependent speed indices).

        Returns
        -------
        compiled mode or None
        """
        return self.modes.get(key)

    def install(self, key, compiled):
        """Keep ``compiled`` as the symbolic path's mode for ``key``, unless one is kept
        already (the same mode, compiled by another simulator or worker answer): returns the
        one kept, which every simulator then runs."""
        return self.modes.setdefault(key, compiled)

    def entry_terms(self, active):
        """The entry terms compiled for the constraint set ``active`` (a tuple of names), or None."""
        return self.entry.get(active)

    def install_entry_terms(self, active, entry):
        """Keep the entry terms ``entry`` of the constraint set ``active``; returns them."""
        self.entry[active] = entry
        return entry

    def has_constraint_terms(self, name):
        """Whether the compiled terms of constraint ``name`` are kept."""
        return name in self.constraint_terms

    def install_constraint_terms(self, name, terms):
        """Keep the compiled terms (``ConstraintTerms``) of a constraint defined at run time."""
        self.constraint_terms[name] = terms
        return terms

    def shared(self, name, build):
        """A scenario's own object ``name`` (a family of fences, say), built by ``build()`` the
        first time and shared by every simulator of the scenario from then on."""
        if name not in self._own:
            self._own[name] = build()
        return self._own[name]

    def embedding(self, key, build):
        """The symbolic embedding for key = (constraint set key, dep), built by ``build()`` once."""
        emb = self.embeddings.get(key)
        if emb is None:
            emb = self.embeddings[key] = build()
        return emb
